"""``tuner status CONFIG``: trials by state, the best so far, the running trials.

Fast on purpose (a user runs it in a loop while a campaign runs): `tuner.status` reads the
study with plain SQL where it can and models it; this module prints it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

ORDER = 22


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show a campaign's progress",
        description="Show the campaign in CONFIG: trials by state (superseded attempts of "
        "interrupted trials apart from failures, earlier runs imported by warm_start apart "
        "from the campaign's own trials), the best trial so far, running trials with "
        "their device and elapsed time, and whether a controller is alive. Reads the Optuna "
        "storage only; works while `tuner run` is running.",
    )
    parser.add_argument("config", help="campaign YAML file")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(handler=run)


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _params_text(params: dict[str, Any]) -> str:
    """``lr=0.00775 batch_size=64``: each value as short as it reads (4 significant digits,
    the JSON output keeps them whole)."""
    return " ".join(f"{k}={_short(v)}" for k, v in params.items())


def _fold(text: str, indent: int, out: IO[str]) -> list[str]:
    """``text`` in lines that fit the terminal after ``indent`` columns; one line when the
    output is not a terminal (a pipe or a file keeps one record per line for grep)."""
    import shutil
    import textwrap

    if not getattr(out, "isatty", lambda: False)():
        return [text]
    width = shutil.get_terminal_size().columns - indent
    return textwrap.wrap(text, max(width, 20), break_on_hyphens=False) or [""]


def run(args: argparse.Namespace) -> int:
    from lineage.masking import mask_mapping
    from tuner.config import load_config
    from tuner.status import collect

    config = load_config(args.config, check_options=False)  # read-only: no Optuna import
    status = collect(config)
    # A parameter under a secret-looking name (``api_token``) is shown masked.
    if status["best"]:
        for t in status["best"].get("trials", [status["best"]]):
            t["params"] = mask_mapping(t["params"])
    for r in status["running"]:
        r["params"] = mask_mapping(r["params"])
    decisions: list[Any] = []
    if config.warm_start is not None and config.warm_start.compare == "auto":
        # What `compare: auto` measured and chose, recomputed from the study as a sampler
        # would now (this loads Optuna: only for such campaigns).
        from tuner.search import StudyPlan, stored_decisions

        decisions = stored_decisions(StudyPlan.of(config))
    status["warm_start_decision"] = [d.as_dict() for d in decisions]
    focus: list[str] = []
    if any(p.focus is not None for p in config.parameters.values()):
        from tuner.search import StudyPlan, focus_lines

        focus = focus_lines(StudyPlan.of(config))
    status["focus"] = focus
    if args.format == "json":
        json.dump(status, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    _print_summary(sys.stdout, status, decisions)
    _print_running(sys.stdout, status["running"])
    _print_continued(sys.stdout, status["continued"])
    for where, missed in sorted(status["heartbeat_missed"].items()):
        sys.stdout.write(
            f"heartbeat: {missed.get('count')} write(s) failed on {where} (last at "
            f"{missed.get('at')}: {missed.get('last')}); a trial without heartbeats past the "
            "grace period is re-queued by another controller\n"
        )
    if status["stale"]:
        sys.stdout.write("RUNNING trials without a live controller: run `tuner resume CONFIG`.\n")
    return 0


def _trials_text(budget: dict[str, Any]) -> str:
    """``12/16 trials``, or ``12 trials (budget: 2000 steps)`` when another limit ends the
    campaign."""
    done, total = budget["finished"], budget["trials"]
    text = f"{done}/{total} trials" if total is not None else f"{done} trials"
    others = [f"{budget[k]:g} {unit}" for k, unit in (("steps", "steps"),
              ("device_hours", "device-hours")) if budget.get(k) is not None]  # fmt: skip
    return text + (f" (budget: {', '.join(others)})" if others else "")


def _print_summary(out: IO[str], status: dict[str, Any], decisions: list[Any]) -> None:
    """The campaign's line, its trials by state, the warm start, the focus and the best."""
    ctl = status["controller"]
    out.write(
        f"{status['campaign']}  {_trials_text(status['budget'])}  controller: "
        + (f"running (pid {ctl['pid']})" if ctl["alive"] else "not running")
        + "\n"
    )
    out.write(
        "  ".join(
            f"{k.lower() if k == 'SUPERSEDED' else k} {v}" for k, v in status["trials"].items()
        )
        + "\n"
    )
    if status["warm_start"]:
        # With a decision per source, those lines say how many the sampler sees now.
        seen = "as each source's line says" if decisions else "seen by the sampler"
        out.write(
            f"warm start: {status['warm_start']} earlier run(s) imported as finished trials "
            f"({seen}, not counted against the budget)\n"
        )
    if decisions:
        from tuner.search import transfer_line

        for d in decisions:
            out.write(transfer_line(d) + "\n")
    for line in status["focus"]:
        out.write(line + "\n")
    best = status["best"]
    if best and "value" in best:
        head = f"best: trial {best['number']} = {best['value']:.6g}  "
        lines = _fold(_params_text(best["params"]), len(head), out)
        out.write(head + ("\n" + " " * len(head)).join(lines) + "\n")
    elif best:
        out.write(f"Pareto front ({len(best['trials'])} trials):\n")
        for t in best["trials"]:
            values = ", ".join(f"{v:.6g}" for v in t["values"])
            head = f"  trial {t['number']}: {values}  "
            lines = _fold(_params_text(t["params"]), len(head), out)
            out.write(head + ("\n" + " " * len(head)).join(lines) + "\n")


def _print_running(out: IO[str], running: list[dict[str, Any]]) -> None:
    """The running trials as a table: trial, attempt, device, elapsed time, parameters."""
    if not running:
        return
    rows = [("trial", "attempt", "device", "elapsed", "params")]
    for r in running:
        rows.append(
            (
                str(r["number"]),
                str(r["attempt"]),
                str(r["device"]) if r["launched"] else "not launched",
                "-" if r["elapsed_s"] is None else f"{r['elapsed_s']}s",
                _params_text(r["params"]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    indent = sum(widths) + 2 * 4
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)))
        out.write("  " + ("\n" + " " * indent).join(_fold(row[4], indent, out)) + "\n")


def _print_continued(out: IO[str], continued: list[dict[str, Any]]) -> None:
    """One line per continuation: what it continues, from where, and how it came."""
    for c in continued:
        where = "from scratch" if c["resumed_step"] is None else f"from step {c['resumed_step']}"
        if "promoted_from" in c:
            how = "promoted: continues paused trial"
        elif "exploit" in c:
            changed = ", ".join(
                f"{k} {_short(a)} -> {_short(b)}" for k, (a, b) in c["exploit"]["perturbed"].items()
            )
            how = (
                f"PBT member {c['exploit']['member']} (replaces trial "
                f"{c['exploit']['replaces']}{'; ' + changed if changed else ''}): copies trial"
            )
        else:
            how = "continues trial"
        out.write(
            f"trial {c['number']} (attempt {c['attempt'] or '?'}, {c['state']}) {how} "
            f"{c['continues']} {where}\n"
        )
