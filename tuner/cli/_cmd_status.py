"""``tuner status CONFIG``: trials by state, the best so far, the running trials."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ORDER = 22


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show a campaign's progress",
        description="Show the campaign in CONFIG: trials by state, the best trial so far, "
        "running trials with their device and elapsed time, and whether a controller is "
        "alive. Reads the Optuna storage only; works while `tuner run` is running.",
    )
    parser.add_argument("config", help="campaign YAML file")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(handler=run)


def study_exists(config: Any) -> bool:
    url = config.optuna_storage_url()
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :].split("?", 1)[0])
        if not path.exists():
            return False
    import optuna

    from tuner.search._study import create_rdb

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        summaries = optuna.get_all_study_summaries(create_rdb(url), include_best_trial=False)
        names = {s.study_name for s in summaries}
    except Exception:
        return False
    return bool(config.study_name in names)


def collect(config: Any) -> dict[str, Any]:
    """The status as a dict (what ``--format json`` prints)."""
    from lineage.masking import mask_uri
    from tuner._errors import ConfigError
    from tuner.campaign._outcome import best_of
    from tuner.coordination import CampaignDir
    from tuner.search._attrs import ATTEMPT_ATTR, LAUNCH_ATTR, STALE_ATTR

    if not study_exists(config):
        raise ConfigError(
            f"{config.source_path or config.name}: no campaign {config.name!r} in "
            f"{mask_uri(config.optuna_storage_url())} yet; start it with `tuner run`"
        )
    import optuna

    from tuner.search._study import create_rdb

    storage = create_rdb(config.optuna_storage_url())
    study = optuna.load_study(study_name=config.study_name, storage=storage)
    trials = study.get_trials(deepcopy=False)
    # A superseded attempt (an interrupted trial whose copy re-runs it) is stored as FAIL
    # but is no failure of the trial: it is counted apart and not against the budget.
    states = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0, "SUPERSEDED": 0, "RUNNING": 0, "WAITING": 0}
    counted = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0}
    running = []
    now = time.time()
    for t in trials:
        if t.state.name == "FAIL" and STALE_ATTR in t.system_attrs:
            states["SUPERSEDED"] += 1
            continue
        states[t.state.name] = states.get(t.state.name, 0) + 1
        if t.state.name in counted:
            counted[t.state.name] += 1
        if t.state.name == "RUNNING":
            launch = t.user_attrs.get(LAUNCH_ATTR) or {}
            started = launch.get("started") or (
                t.datetime_start.timestamp() if t.datetime_start else now
            )
            running.append(
                {
                    "number": t.number,
                    "launched": bool(launch),
                    "attempt": launch.get("attempt", t.user_attrs.get(ATTEMPT_ATTR, 1)),
                    "device": launch.get("device"),
                    "host": launch.get("host"),
                    "elapsed_s": round(now - float(started), 1),
                    "run_id": launch.get("run_id"),
                    "params": t.params,
                }
            )
    campaign_dir = CampaignDir(config.base_dir, config.name)
    alive = campaign_dir.controller_alive()
    info = campaign_dir.previous()
    return {
        "campaign": config.name,
        "storage": mask_uri(config.optuna_storage_url()),
        "controller": {"alive": alive, "pid": info.get("pid") if alive else None},
        "budget": {"trials": config.budget.trials, "finished": sum(counted.values())},
        "trials": states,
        "finished": counted,
        "best": best_of(study),
        "running": running,
        "stale": bool(running) and not alive,
    }


def run(args: argparse.Namespace) -> int:
    from tuner.config import load_config

    config = load_config(args.config)
    status = collect(config)
    if args.format == "json":
        json.dump(status, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    ctl = status["controller"]
    console.print(
        f"[bold]{status['campaign']}[/bold]  {status['budget']['finished']}/"
        f"{status['budget']['trials']} trials  controller: "
        + (f"running (pid {ctl['pid']})" if ctl["alive"] else "not running")
    )
    console.print(
        "  ".join(
            f"{k.lower() if k == 'SUPERSEDED' else k} {v}" for k, v in status["trials"].items()
        )
    )
    best = status["best"]
    if best and "value" in best:
        console.print(f"best: trial {best['number']} = {best['value']:.6g}  {best['params']}")
    if status["running"]:
        table = Table("trial", "attempt", "device", "elapsed", "params")
        for r in status["running"]:
            table.add_row(
                str(r["number"]),
                str(r["attempt"]),
                str(r["device"]),
                f"{r['elapsed_s']}s",
                json.dumps(r["params"]),
            )
        console.print(table)
    if status["stale"]:
        console.print("RUNNING trials without a live controller: run `tuner resume CONFIG`.")
    return 0
