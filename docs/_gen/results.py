"""Benchmark figures for the docs, read from the result files the benchmarks write.

A page holds ``<!-- results: NAME -->`` where the figures of ``benchmarks/results/NAME.json``
belong; the hook replaces it with where they come from (script, store, machine, date, load,
commit) and a table of every figure the file holds. A page cannot state a figure that no run
of a script produced, and two pages cannot disagree: both render the same file.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "benchmarks", "results")
MARKER = re.compile(r"<!-- results: ([a-z0-9_]+) -->")
SUMMARY_MARKER = "<!-- results-summary -->"

#: The script that writes each result file, where its name does not say it.
SCRIPTS = {
    "recording_sqlite": "bench_recording.py --store sqlite",
    "recording_postgresql": "bench_recording.py --store postgresql",
    "recording_http": "bench_recording.py --store http",
    "query_sqlite": "bench_query.py --store sqlite",
    "query_postgresql": "bench_query.py --store postgresql",
    "query_http": "bench_query.py --store http",
    "schedulers_mfh": "bench_schedulers.py --suite mfh",
    "schedulers_recommended": "bench_schedulers.py --arms tpe-none,tpe-median,tuner-bohb",
    "schedulers_schedule": "bench_schedulers.py --suite nqm",
    "schedulers_schedule_slow": "bench_schedulers.py --suite nqm --epoch-seconds 0.3",
    "outcome_focus": "bench_outcome.py --methods tpe-cold tuner-init-focus",
}


def load(name: str) -> dict[str, Any]:
    """The result file ``benchmarks/results/<name>.json``."""
    with open(os.path.join(RESULTS, f"{name}.json"), encoding="utf-8") as fh:
        return dict(json.load(fh))


def available() -> list[str]:
    if not os.path.isdir(RESULTS):
        return []
    return sorted(f[:-5] for f in os.listdir(RESULTS) if f.endswith(".json"))


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if value != 0 and abs(value) < 1e-3:
            return f"{value:.3g}"
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _flatten(figures: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(figures, dict):
        rows: list[tuple[str, str]] = []
        for key, value in figures.items():
            rows += _flatten(value, f"{prefix} › {key}" if prefix else str(key))
        return rows
    return [(prefix, _cell(figures))]


def source_line(result: dict[str, Any]) -> str:
    """Where a result's figures come from, in one line."""
    name = result.get("benchmark", "?")
    script = SCRIPTS.get(name, f"{name}.py" if name.startswith("bench_") else f"bench_{name}.py")
    machine = result.get("machine") or {}
    load_avg = result.get("load_average")
    parts = [
        f"`benchmarks/{script}`",
        f"store: {result.get('store', '?')}",
        f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, "
        f"Python {machine.get('python', '?')}",
        f"{result.get('date', '?')}",
        f"load average {', '.join(str(x) for x in load_avg)}" if load_avg else "load unknown",
        _commit(result.get("commit")),
    ]
    return "Source: " + " · ".join(parts)


def _commit(commit: str | None) -> str:
    """The result's commit, how many commits of this checkout came after it, and how many of
    those changed the package's code (``lineage/``, ``tuner/``); a commit that changed only
    docstrings or comments there is named apart, since the figures ran the same code."""
    if not commit:
        return "commit ?"
    after = _count(commit)
    if after is None:
        return f"commit {commit}"
    if after == 0:
        return f"commit {commit} (the docs' own commit)"
    package = _git(
        "rev-list", "--no-merges", f"{commit}..HEAD", "--", ":(top)lineage", ":(top)tuner"
    )
    changed = ""
    if package is not None:
        touched = package.split()
        code = sum(1 for c in touched if _changes_code(c))
        changed = f", {code} of them changing code in `lineage/` or `tuner/`"
        if len(touched) > code:
            changed += f" and {len(touched) - code} only docstrings or comments there"
    commits = "commit" if after == 1 else "commits"
    return f"commit {commit} ({after} {commits} before the docs'{changed})"


def _git(*argv: str) -> str | None:
    """``git argv`` in this checkout: its output, or None where git cannot answer."""
    try:
        done = subprocess.run(
            ["git", *argv],
            cwd=os.path.dirname(RESULTS),
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _count(commit: str) -> int | None:
    """Commits after ``commit`` up to this checkout's HEAD."""
    count = (_git("rev-list", "--count", f"{commit}..HEAD") or "").strip()
    return int(count) if count.isdigit() else None


@functools.cache  # every result file asks about the same commits
def _changes_code(commit: str) -> bool:
    """Whether ``commit`` changed what ``lineage/`` or ``tuner/`` run: any file there but a
    Python module whose syntax tree, docstrings left out, is the same before and after."""
    files = _git(
        "diff-tree",
        "--no-commit-id",
        "-r",
        "--name-only",
        commit,
        "--",
        ":(top)lineage",
        ":(top)tuner",
    )
    if files is None:
        return True
    for path in files.split():
        if not path.endswith(".py"):
            return True
        before = _git("show", f"{commit}^:{path}")
        after = _git("show", f"{commit}:{path}")
        old = None if before is None else _skeleton(before)
        if old is None or after is None or old != _skeleton(after):
            return True
    return False


def _skeleton(source: str) -> str | None:
    """A module's syntax tree without its docstrings (comments are not in the tree)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


#: ``bench_schedulers.py``'s per-arm figures, as its table's columns.
_SCHEDULER_COLUMNS = (
    ("seeds reaching the target", "reached"),
    ("epochs to target (median)", "median_epochs_to_target"),
    ("training CPU-s to target", "median_cpu_s_to_target"),
    ("best {metric} in budget (median)", "median_best_accuracy"),
    ("epochs trained (within budget)", "epochs_trained"),
    ("resumed from a checkpoint", "median_continuations"),
    ("campaign wall s (median)", "median_campaign_wall_s"),
    ("epochs / tpe-median's", "epochs_ratio_to_tpe-median"),
    ("epochs / tpe-none's", "epochs_ratio_to_tpe-none"),
)


def _schedulers_table(result: dict[str, Any]) -> list[str]:
    """``schedulers``: one row per arm (as figure/value rows it would be 60 rows)."""
    figures = result.get("figures") or {}
    metric = figures.get("metric", "val_accuracy")
    lines = [
        f"Target: {metric} >= {_cell(figures.get(f'target_{metric}'))} (the median best "
        "of `tpe-none`, with an even number of seeds the lower middle one); budget: "
        f"{_cell(figures.get('epoch_budget'))} epochs per campaign. "
        "Medians over seeds, a seed that never reaches the target counting as infinitely "
        "many epochs; `-`: the median seed did not reach it.",
        "",
        "| arm | "
        + " | ".join(head.format(metric=metric) for head, _ in _SCHEDULER_COLUMNS)
        + " |",
        "|---" * (len(_SCHEDULER_COLUMNS) + 1) + "|",
    ]
    for arm, row in (figures.get("arms") or {}).items():
        row = dict(row, reached=f"{row.get('seeds_reaching_target')}/{row.get('seeds')}")
        cells = ["-" if row.get(key) is None else _cell(row[key]) for _, key in _SCHEDULER_COLUMNS]
        lines.append(f"| `{arm}` | " + " | ".join(cells) + " |")
    for goal, row in (figures.get("goals") or {}).items():
        shown = ", ".join(f"{k} {_cell(v)}" for k, v in row.items() if k != "met" and v is not None)
        verdict = "met" if row.get("met") else "not met"
        lines += ["", f"Goal `{goal}`: **{verdict}** ({shown})."]
    ref = figures.get("reference")
    if ref:
        lines += [
            "",
            f"Untuned reference (momentum 0, `lr` on a grid of 81): the best fixed `lr` "
            f"({_cell(ref.get('fixed_lr'))}) scores {_cell(ref.get('fixed_score'))}; "
            f"decayed by 0.8 every 3 epochs from {_cell(ref.get('decay_0.8_every_3_lr'))}, "
            f"{_cell(ref.get('decay_0.8_every_3_score'))}; by 0.7 every 3 epochs from "
            f"{_cell(ref.get('decay_0.7_every_3_lr'))}, {_cell(ref.get('decay_0.7_every_3_score'))}.",
        ]
    for arm, why in (figures.get("not_run") or {}).items():
        lines += ["", f"`{arm}` did not run: {why}"]
    return lines


def _schedulers_mfh_table(result: dict[str, Any]) -> list[str]:
    """``schedulers_mfh``: one row per task and arm."""
    figures = result.get("figures") or {}
    lines = [
        f"Budget: {_cell(figures.get('epoch_budget'))} epochs per campaign. Regret: the best "
        "full-fidelity error minus the optimum's (median over seeds). Epochs: until the "
        "campaign's best reaches the default's (`tpe-median`) median regret (with an even "
        "number of seeds the upper of the two middle ones), median over "
        "seeds, a seed that never does counting as infinitely many (`-`: the median seed did "
        "not). p: one-sided Mann-Whitney U that the arm's regrets are above the default's.",
        "",
        "| task | arm | seeds | regret | epochs | epochs / default's | full evaluations "
        "| p (worse) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task, rows in (figures.get("tasks") or {}).items():
        for arm, row in rows.items():
            cells = [
                row.get(key)
                for key in (
                    "seeds",
                    "median_regret",
                    "median_epochs_to_default_median",
                    "epochs_ratio_to_default",
                    "median_full_evaluations",
                    "p_worse_than_default",
                )
            ]
            shown = " | ".join("-" if c is None else _cell(c) for c in cells)
            lines.append(f"| {task} | `{arm}` | {shown} |")
    for goal, row in (figures.get("goals") or {}).items():
        shown = ", ".join(f"{k} {_cell(v)}" for k, v in row.items() if k != "met" and v is not None)
        verdict = "met" if row.get("met") else "not met"
        lines += ["", f"Goal `{goal}`: **{verdict}** ({shown})."]
    return lines


def _power_table(result: dict[str, Any]) -> list[str]:
    """``importance_power``: one row per effect size and run count."""
    lines = [
        "| effect | runs | model kept (replicates) | power | false-positive rate |",
        "|---|---|---|---|---|",
    ]
    for effect, cells in (result.get("figures") or {}).items():
        for cell in cells.values():
            models = ", ".join(f"{m} {c}" for m, c in (cell.get("models") or {}).items())
            lines.append(
                f"| {effect} (Spearman {_cell(cell.get('median_spearman'))}) "
                f"| {_cell(cell.get('runs'))} | {models} | {cell.get('power', 0):.2f} "
                f"| {cell.get('false_positive_rate', 0):.3f} |"
            )
    return lines


def _figure_table(result: dict[str, Any]) -> list[str]:
    lines = ["| figure | value |", "|---|---|"]
    for key, value in _flatten(result.get("figures", {})):
        lines.append(f"| {key} | {value} |")
    return lines


#: The goals a result's figures are held to, each (what it says, the figure's path in
#: ``figures``, ``>=`` or ``<=``, the bound). A results block states each goal with its
#: verdict, so that a page can neither quote a goal the figures are not checked against nor
#: leave a missed one unflagged.
GOALS: dict[str, list[tuple[str, tuple[str, ...], str, float]]] = {
    "recording_sqlite": [
        ("points recorded per second", ("lineage", "points_per_s"), ">=", 20_000),
        ("µs per `log_metric` call (median)", ("lineage", "median_us"), "<=", 20),
    ],
    "query_sqlite": [
        ("full table, s (warm)", ("full table", "lineage_warm_s"), "<=", 0.5),
        (
            "full table, x MLflow's time (warm)",
            ("full table", "speedup_warm_vs_mlflow_warm"),
            ">=",
            10,
        ),
        ("filtered + sorted, s (warm)", ("filtered + sorted", "lineage_warm_s"), "<=", 0.5),
        (
            "filtered + sorted, x MLflow's time (warm)",
            ("filtered + sorted", "speedup_warm_vs_mlflow_warm"),
            ">=",
            10,
        ),
    ],
    "tuner": [
        ("scheduling efficiency", ("efficiency", "tuner", "efficiency"), ">=", 0.95),
        (
            "controller ms per trial (median)",
            ("per_trial", "tuner_controller", "median_ms"),
            "<=",
            20,
        ),
    ],
    "stop": [
        ("SIGTERM to exit under PBT, s (worst)", ("pbt", "worst_s"), "<=", 10),
        ("SIGTERM to exit under ASHA, s (worst)", ("asha", "worst_s"), "<=", 10),
        ("SIGTERM to exit with no scheduler, s (worst)", ("none", "worst_s"), "<=", 10),
    ],
    "bench_startup": [
        ("campaign efficiency, cold", ("efficiency_cold", "efficiency"), ">=", 0.95),
        ("campaign efficiency, warm", ("efficiency_warm", "efficiency"), ">=", 0.95),
    ],
}


def goal_lines(name: str, result: dict[str, Any]) -> list[str]:
    """One line per goal of ``name``: the goal, its verdict, and the figure."""
    lines = []
    for what, path, op, bound in GOALS.get(name, []):
        value = _get(result.get("figures") or {}, *path)
        if not isinstance(value, int | float):
            lines.append(f"Goal: {what} {op} {_cell(bound)}: **not measured** in this file.")
            continue
        met = value >= bound if op == ">=" else value <= bound
        verdict = "met" if met else "not met"
        lines.append(
            f"Goal: {what} {op.replace('>=', '≥').replace('<=', '≤')} {_cell(bound)}: **{verdict}** ({_cell(value)})."
        )
    return lines


#: Result files shown as a table of their own rather than one row per figure.
def _faults_table(result: dict[str, Any]) -> list[str]:
    """``faults``: one row per store (its per-case outcomes stay in the file)."""
    figures = result.get("figures") or {}
    lines = [
        f"Matrix: {_cell(figures.get('points'))} points x {_cell(figures.get('kinds'))} kinds x "
        f"{_cell(len(figures.get('stores') or {}))} store(s) = {_cell(figures.get('size'))} "
        f"cases; passed: {_cell(figures.get('passed'))}.",
        "",
        "| store | cases | ran | passed | failed | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for store, row in (figures.get("stores") or {}).items():
        failed = ", ".join(f"`{c}`" for c in row.get("failed") or []) or "none"
        cells = [_cell(row.get(k)) for k in ("size", "ran", "passed")]
        lines.append(
            f"| {store} | " + " | ".join(cells) + f" | {failed} | {_cell(row.get('seconds'))} |"
        )
    race = figures.get("two_workers_race")
    if race:
        lines += [
            "",
            f"The two-workers race (`{race.get('test')}`), one pytest per run beside the "
            f"matrix: {_cell(race.get('passed'))} of {_cell(race.get('runs'))} runs passed.",
        ]
    return lines


TABLES = {
    "importance_power": _power_table,
    "schedulers": _schedulers_table,
    "schedulers_recommended": _schedulers_table,
    "schedulers_schedule": _schedulers_table,
    "schedulers_schedule_slow": _schedulers_table,
    "faults": _faults_table,
    "schedulers_mfh": _schedulers_mfh_table,
}


def render(name: str) -> str:
    """The markdown that replaces ``<!-- results: NAME -->``."""
    try:
        result = load(name)
    except FileNotFoundError:
        return f"*No result file `benchmarks/results/{name}.json` yet: run the script.*"
    lines = [source_line(result), "", *TABLES.get(name, _figure_table)(result)]
    goals = goal_lines(name, result)
    if goals:
        lines += ["", *(f"{line}  " for line in goals)]
    params = result.get("params") or {}
    if params:
        shown = ", ".join(f"{k}={_cell(v)}" for k, v in params.items() if v is not None)
        lines += ["", f"Run with: {shown}."]
    if result.get("notes"):
        lines += ["", str(result["notes"])]
    return "\n".join(lines)


def fill(markdown: str) -> str:
    """``markdown`` with every results marker replaced."""
    if SUMMARY_MARKER in markdown:
        markdown = markdown.replace(SUMMARY_MARKER, render_summary())
    return MARKER.sub(lambda m: render(m.group(1)), markdown)


# ----- the summary: one row per measure ------------------------------------------------------


def _get(figures: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(figures, dict) or key not in figures:
            return None
        figures = figures[key]
    return figures


def _n(value: Any, unit: str = "", digits: int = 3) -> str:
    if value is None:
        return "?"
    if isinstance(value, float):
        text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.{digits}g}"
    else:
        text = f"{value:,}" if isinstance(value, int) else str(value)
    return f"{text}{unit}"


def _recording(f: dict[str, Any]) -> tuple[str, str, str]:
    lin = f.get("lineage") or {}
    return (
        f"`log_batch` x1,000: {_n(_get(f, 'log_batch_1000', 'points_per_s'), ' points/s')}",
        f"**{_n(lin.get('points_per_s'), ' points/s')}**, {_n(lin.get('median_us'), ' µs')} "
        "median per call",
        f"{_n(f.get('lineage_over_log_batch'), 'x')}",
    )


def _query(f: dict[str, Any]) -> tuple[str, str, str]:
    label = next(iter(f), None)
    row = f.get(label, {}) if label else {}
    return (
        f"{label}: `mlflow.search_runs` {_n(row.get('mlflow_warm_s'), ' s')} warm, "
        f"{_n(row.get('mlflow_fresh_s'), ' s')} fresh interpreter",
        f"CLI **{_n(row.get('lineage_warm_s'), ' s')}**",
        f"{_n(row.get('speedup_warm_vs_mlflow_warm'), 'x')} / "
        f"{_n(row.get('speedup_warm_vs_mlflow_fresh'), 'x')}",
    )


def _tuner(f: dict[str, Any]) -> tuple[str, str, str]:
    return (
        f"`optimize(n_jobs=2)` efficiency {_n(_get(f, 'efficiency', 'optuna_optimize_n_jobs_2', 'efficiency'))}; "
        f"ask+tell {_n(_get(f, 'per_trial', 'stock_optuna_ask_tell', 'median_ms'), ' ms')}/trial",
        f"efficiency **{_n(_get(f, 'efficiency', 'tuner', 'efficiency'))}**; controller "
        f"{_n(_get(f, 'per_trial', 'tuner_controller', 'median_ms'), ' ms')}/trial",
        "",
    )


def _status(f: dict[str, Any]) -> tuple[str, str, str]:
    s = f.get("seconds") or {}
    return (
        f"`optuna trials` {_n(s.get('optuna trials (CLI)'), ' s')}",
        f"**{_n(s.get('tuner status'), ' s')}**",
        _n(f.get("tuner_status_over_optuna_trials")),
    )


def _ui(f: dict[str, Any]) -> tuple[str, str, str]:
    s = f.get("seconds") or {}
    return (
        f"`mlflow server` {_n(s.get('mlflow server: first 200'), ' s')}",
        f"**{_n(s.get('lineage ui: first 200'), ' s')}**",
        _n(f.get("lineage_ui_over_mlflow_server")),
    )


def _checkpoint(f: dict[str, Any]) -> tuple[str, str, str]:
    return (
        f"restart from epoch 0: {_n(_get(f, 'restart', 'extra_epochs_per_interruption'))} "
        "extra epochs per interruption",
        f"resume: **{_n(_get(f, 'resume', 'extra_epochs_per_interruption'))}**",
        f"{_n(_ratio(_get(f, 'resume', 'extra_epochs'), _get(f, 'restart', 'extra_epochs')))} "
        "of the extra epochs",
    )


def _ratio(part: Any, whole: Any) -> float | None:
    if not isinstance(part, int | float) or not isinstance(whole, int | float) or not whole:
        return None
    return round(part / whole, 2)


def _truth(f: dict[str, Any]) -> tuple[str, str, str]:
    cells = [
        f"{case}: order {row.get('order_right')}/{row.get('seeds')}, "
        f"no-effect last {row.get('dummies_last')}/{row.get('seeds')}"
        for case, row in f.items()
        if isinstance(row, dict)
    ]
    return ("", "; ".join(cells), "")


def _startup(f: dict[str, Any]) -> tuple[str, str, str]:
    stock = []
    for key, name in (
        ("per_trial_optuna_in_process", "Optuna in-process"),
        ("per_trial_ray_tune_reuse_actors", "Ray Tune reuse_actors"),
    ):
        overhead = _get(f, key, "median_overhead_s")
        if overhead is not None:
            stock.append(f"{name} {_n(overhead, ' s')}")
    return (
        f"cold start: {_n(_get(f, 'per_trial_cold', 'median_overhead_s'), ' s')} per trial; "
        f"quickstart {_n(_get(f, 'quickstart_cold', 'wall_s'), ' s')}"
        + (f"; {', '.join(stock)} per trial" if stock else ""),
        f"warm parents: **{_n(_get(f, 'per_trial_warm', 'median_overhead_s'), ' s')}**; "
        f"quickstart {_n(_get(f, 'quickstart_warm', 'wall_s'), ' s')}; efficiency "
        f"{_n(_get(f, 'efficiency_warm', 'efficiency'))}",
        f"{_n(f.get('quickstart_speedup'), 'x')} (quickstart)",
    )


def _outcome(f: dict[str, Any]) -> tuple[str, str, str]:
    cells = []
    for task, row in f.items():
        if not isinstance(row, dict) or "tpe-warm" not in row:
            continue
        cells.append(
            f"{task}: warm start {_n(_get(row, 'tpe-warm', 'ratio_to_cold'))}, `tuner init` "
            f"{_n(_get(row, 'tuner-init', 'ratio_to_cold'))}"
        )
    return ("cold TPE: 1", "; ".join(cells), "of cold TPE's trials")


def _pytorch(f: dict[str, Any]) -> tuple[str, str, str]:
    modes = f.get("modes") or {}
    return (
        f"`mlflow.pytorch.autolog` {_signed(_get(modes, 'plain/autolog', 'overhead_median_us'))} µs/step",
        f"`lineage.pytorch.watch` {_signed(_get(modes, 'plain/lineage', 'overhead_median_us'))} µs/step",
        "",
    )


def _signed(value: Any) -> str:
    """``+5.3`` or ``-115``: an overhead with its sign (one, not ``+-``)."""
    text = _n(value)
    return text if text.startswith(("-", "?")) else f"+{text}"


def _cluster(f: dict[str, Any]) -> tuple[str, str, str]:
    ray = f.get("ray") or {}
    return (
        f"Ray Tune + OptunaSearch efficiency {_n(_get(ray, 'ray_tune_optuna', 'efficiency'))}",
        f"Ray executor **{_n(_get(ray, 'tuner_ray', 'efficiency'))}**",
        "",
    )


def _load(f: dict[str, Any]) -> tuple[str, str, str]:
    return (
        "",
        f"{_n(f.get('counted'))}/{_n(f.get('trials'))} trials, {_n(f.get('workers'))} workers, "
        f"{len(f.get('error_lines') or [])} errors, {_n(f.get('duplicate_params'))} duplicates, "
        f"{_n(f.get('peak_db_sessions'))} sessions at most",
        "",
    )


def _outage(f: dict[str, Any]) -> tuple[str, str, str]:
    return (
        "",
        f"{_n(f.get('points_arrived'))} of {_n(f.get('points_sent'))} points arrived, "
        f"{_n(f.get('runs_left_running'))} runs left RUNNING, exit {_n(f.get('campaign_exit'))}",
        "",
    )


def _power(f: dict[str, Any]) -> tuple[str, str, str]:
    cells = []
    rates = []
    for effect, rows in f.items():
        if not isinstance(rows, dict) or not rows:
            continue
        by_runs = sorted(rows.values(), key=lambda row: row.get("runs", 0))
        low, high = by_runs[0], by_runs[-1]
        cells.append(
            f"{effect}: power {_n(low.get('power'))} at {_n(low.get('runs'))} runs, "
            f"{_n(high.get('power'))} at {_n(high.get('runs'))}"
        )
        rates += [row.get("false_positive_rate", 0) for row in by_runs]
    fpr = f"false-positive rate at most {_n(max(rates))} (nominal 0.025)" if rates else ""
    return ("", "; ".join([*cells, fpr]), "")


def _schedulers(f: dict[str, Any]) -> tuple[str, str, str]:
    arms = f.get("arms") or {}

    def epochs(arm: str) -> str:
        value = _get(arms, arm, "median_epochs_to_target")
        return "not reached" if value is None and arm in arms else _n(value)

    ours = f"TPE + median pruning {epochs('tpe-median')}"
    for arm, label in (("tuner-asha", "ASHA"), ("tuner-pbt", "PBT")):
        if arm in arms:
            ours += f"; {label} **{epochs(arm)}**"
    ratios = [
        f"{label} {_n(_get(arms, arm, 'epochs_ratio_to_tpe-median')).replace('?', '-')}"
        for arm, label in (("tuner-asha", "ASHA"), ("tuner-pbt", "PBT"))
        if arm in arms
    ]
    return (
        f"Ray Tune ASHA {epochs('ray-asha')}, PBT {epochs('ray-pbt')}; Optuna SHA "
        f"{epochs('tpe-sha')}",
        ours,
        ", ".join(ratios) + " of TPE + median's" if ratios else "",
    )


#: ``(result name, what it measures, its figures as (stock tool, this project, ratio))``.
SUMMARY: list[tuple[str, str, Any]] = [
    ("recording_sqlite", "metric points into one run, SQLite", _recording),
    ("recording_postgresql", "metric points into one run, PostgreSQL", _recording),
    ("recording_http", "metric points into one run, through `mlflow server`", _recording),
    ("query_sqlite", "`lineage runs`, 10,000 runs, SQLite", _query),
    ("query_postgresql", "`lineage runs`, 10,000 runs, PostgreSQL", _query),
    ("query_http", "`lineage runs`, 10,000 runs, through `mlflow server`", _query),
    ("tuner", "40 trials of 0.5 s at parallel 2; controller time per trial", _tuner),
    ("status", "`tuner status`, 1,000 trials", _status),
    ("checkpoint", "epochs lost to an interruption", _checkpoint),
    ("ui", "MLflow UI, start to first page", _ui),
    ("bench_startup", "time a trial spends before training (MindSpore)", _startup),
    ("outcome", "trials to reach cold TPE's result, warm-started", _outcome),
    ("pytorch_recording", "PyTorch recording, step-time overhead", _pytorch),
    ("cluster", "40 trials of 0.5 s on a local Ray cluster", _cluster),
    ("load", "`tuner worker`s on one PostgreSQL study", _load),
    ("outage", "`mlflow server` down for a minute mid-campaign", _outage),
    ("importance_truth", "`lineage importance` on known truths", _truth),
    ("importance_power", "`significant` on a real and on no-effect parameters", _power),
    ("schedulers", "training epochs until TPE's median best (digits MLP)", _schedulers),
]


def render_summary() -> str:
    """The summary table: one row per measure whose result file exists."""
    lines = [
        "| what | stock tool | lineage-tuner | ratio | run |",
        "|---|---|---|---|---|",
    ]
    for name, what, row in SUMMARY:
        try:
            result = load(name)
        except FileNotFoundError:
            continue
        stock, ours, ratio = row(result.get("figures") or {})
        when = f"{result.get('date', '?')}, {result.get('store', '?')}"
        lines.append(f"| {what} | {stock} | {ours} | {ratio} | {when} |")
    return "\n".join(lines)
