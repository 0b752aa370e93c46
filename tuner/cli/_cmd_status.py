"""``tuner status CONFIG``: trials by state, the best so far, the running trials.

Fast on purpose (a user runs it in a loop while a campaign runs): the study is read by
`tuner.cli._status_read`, with plain SQL where it can.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import IO, Any

from tuner.cli._status_read import NoStudy, read_study, timestamp
from tuner.search import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    LAUNCH_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    RESUMED_STEP_ATTR,
)
from tuner.search import IMPORTED_ATTR as IMPORTED_ATTR
from tuner.search import STALE_ATTR as STALE_ATTR

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


def collect(config: Any) -> dict[str, Any]:
    """The status as a dict (what ``--format json`` prints)."""
    from lineage.masking import mask_uri
    from tuner._errors import ConfigError
    from tuner.coordination import CampaignDir

    url = config.optuna_storage_url()
    try:
        data = read_study(url, config.study_name)
    except NoStudy:
        raise ConfigError(
            f"{config.source_path or config.name}: no campaign {config.name!r} in "
            f"{mask_uri(url)} yet; start it with `tuner run`"
        ) from None
    chain = _chain_attempts(data["trials"])
    states, counted, imported, running = _tally(data["trials"], chain, config.scheduler is not None)
    campaign_dir = CampaignDir(config.base_dir, config.name)
    alive = campaign_dir.controller_alive()
    info = campaign_dir.previous()
    if not alive:
        # Without a controller, a trial whose process is known to have ended has no elapsed
        # time that keeps growing (one that outlived its controller still runs: it has).
        from tuner.executors import known_ended

        for r in running:
            if known_ended(r.pop("launch")):
                r["elapsed_s"] = None
    for r in running:
        r.pop("launch", None)
    return {
        "campaign": config.name,
        "storage": mask_uri(url),
        "controller": {"alive": alive, "pid": info.get("pid") if alive else None},
        "budget": {"trials": config.budget.trials, "finished": sum(counted.values())},
        "trials": states,
        "finished": counted,
        "warm_start": imported,
        "best": _best_of(data),
        "running": running,
        "continued": _continued(data["trials"], chain),
        "stale": bool(running) and not alive,
    }


def _tally(
    trials: list[dict[str, Any]], chain: dict[int, int], scheduled: bool
) -> tuple[dict[str, int], dict[str, int], int, list[dict[str, Any]]]:
    """``(trials by state as shown, counted trials by final state, imported runs, running
    trials)``; each running trial keeps its launch record under ``launch`` for the caller."""
    # A superseded attempt (an interrupted trial whose copy re-runs it) is stored as FAIL
    # but is no failure of the trial: it is counted apart and not against the budget.
    states = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0, "SUPERSEDED": 0, "RUNNING": 0, "WAITING": 0}
    counted = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0}
    if scheduled:
        # A scheduler's trials apart: paused at a rung (they count), paused then promoted
        # (their continuation counts), a PBT segment replaced by a copy of another member.
        states.update({"PAUSED": 0, "PROMOTED": 0, "EXPLOITED": 0})
    promoted = {
        int(t["attrs"][PROMOTED_FROM_ATTR])
        for t in trials
        if t.get("attrs", {}).get(PROMOTED_FROM_ATTR) is not None
    }
    running = []
    now = time.time()
    imported = 0
    for t in trials:
        state = t["state"]
        if t.get("imported"):  # an earlier run, not a trial of this campaign
            imported += 1
            continue
        if state == "FAIL" and t["stale"]:
            states["SUPERSEDED"] += 1
            continue
        mark = _scheduler_state(t, promoted)
        if mark is not None:
            states[mark] = states.get(mark, 0) + 1
            if mark == "PAUSED":
                counted["PRUNED"] += 1
            continue
        states[state] = states.get(state, 0) + 1
        if state in counted:
            counted[state] += 1
        if state == "RUNNING":
            launch = t.get("attrs", {}).get(LAUNCH_ATTR) or {}
            started = launch.get("started") or timestamp(t["start"]) or now
            running.append(
                {
                    "number": t["number"],
                    "launched": bool(launch),
                    "attempt": chain.get(t["number"], 1),
                    "device": launch.get("device"),
                    # Where to find the trial's process: ``ps -p PID`` on that host, or on
                    # the Ray node at ``node_ip`` (``host`` is then the controller's).
                    "host": launch.get("host"),
                    "pid": launch.get("pid"),
                    **({"node_ip": launch["node_ip"]} if launch.get("node_ip") else {}),
                    "elapsed_s": round(now - float(started), 1),
                    "run_id": launch.get("run_id"),
                    "params": t.get("params", {}),
                    "launch": launch,
                }
            )
    return states, counted, imported, running


def _continued(trials: list[dict[str, Any]], chain: dict[int, int]) -> list[dict[str, Any]]:
    """The continuations: which trial each continues, from which step, and how it came."""
    return [
        {
            "number": t["number"],
            "state": "SUPERSEDED" if t["state"] == "FAIL" and t["stale"] else t["state"],
            "continues": t["attrs"][PARENT_ATTR],
            "attempt": chain.get(t["number"]),
            "resumed_step": t["attrs"].get(RESUMED_STEP_ATTR),
            **_how(t["attrs"]),
        }
        for t in trials
        if t.get("attrs", {}).get(PARENT_ATTR) is not None
    ]


def _best_of(data: dict[str, Any]) -> dict[str, Any] | None:
    """The best trial (``number``, ``value``, ``params``), or the Pareto front as
    ``{"trials": [...]}`` for several objectives; None before any."""
    if data["best"] and len(data["directions"]) > 1:
        return {
            "trials": [
                {
                    "number": t["number"],
                    "values": [t["values"][i] for i in sorted(t["values"])],
                    "params": t["params"],
                }
                for t in data["best"]
            ]
        }
    if data["best"]:
        (t,) = data["best"]
        return {"number": t["number"], "value": t["values"][0], "params": t["params"]}
    return None


def _scheduler_state(t: dict[str, Any], promoted: set[int]) -> str | None:
    """PAUSED, PROMOTED or EXPLOITED for a pruned trial a scheduler stopped, else None."""
    attrs = t.get("attrs", {})
    if t["state"] != "PRUNED":
        return None
    if attrs.get(EXPLOITED_ATTR) is not None:
        return "EXPLOITED"
    if attrs.get(PAUSED_ATTR) is not None:
        return "PROMOTED" if t["number"] in promoted else "PAUSED"
    return None


def _how(attrs: dict[str, Any]) -> dict[str, Any]:
    """How a continuation came to be, when a scheduler made it."""
    if attrs.get(PROMOTED_FROM_ATTR) is not None:
        return {"promoted_from": attrs[PROMOTED_FROM_ATTR]}
    exploit = attrs.get(EXPLOIT_ATTR)
    if isinstance(exploit, dict):
        return {"exploit": exploit}
    return {}


def _chain_attempts(trials: list[dict[str, Any]]) -> dict[int, int]:
    """Each trial's attempt in its chain: a continuation (``tuner.parent_trial``) is one
    attempt after the trial it continues, whatever its own record says (a continuation
    started by `tuner resume` records attempt 1)."""
    attrs = {t["number"]: t.get("attrs", {}) for t in trials}
    out: dict[int, int] = {}

    def attempt(number: int, depth: int = 0) -> int:
        if number in out:
            return out[number]
        own = attrs.get(number, {})
        value = int((own.get(LAUNCH_ATTR) or {}).get("attempt", own.get(ATTEMPT_ATTR, 1)) or 1)
        parent = own.get(PARENT_ATTR)
        if parent is not None and depth < len(attrs):
            value = max(value, attempt(int(parent), depth + 1) + 1)
        out[number] = value
        return value

    for number in attrs:
        attempt(number)
    return out


def study_exists(config: Any) -> bool:
    """Whether the campaign's study is in its storage."""
    try:
        collect(config)
    except Exception:
        return False
    return True


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
    if status["stale"]:
        sys.stdout.write("RUNNING trials without a live controller: run `tuner resume CONFIG`.\n")
    return 0


def _print_summary(out: IO[str], status: dict[str, Any], decisions: list[Any]) -> None:
    """The campaign's line, its trials by state, the warm start, the focus and the best."""
    ctl = status["controller"]
    out.write(
        f"{status['campaign']}  {status['budget']['finished']}/{status['budget']['trials']} "
        "trials  controller: "
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
