"""``tuner worker CONFIG``: join a campaign's shared study as one more controller."""

from __future__ import annotations

import argparse

from tuner.cli._cmd_run import add_heartbeat_flags, heartbeat_flags

ORDER = 23


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "worker",
        help="join a campaign as one more controller (shared storage)",
        description="Run trials of the campaign in CONFIG next to other workers, on this host "
        "or others, sharing its Optuna study (storage: postgresql://...) and lineage store. "
        "Together the workers finish exactly budget.trials trials. Each worker records a "
        "heartbeat for its running trials; a trial whose worker died (even kill -9) is failed "
        "after --stale-after seconds and re-run with the same parameters by a surviving "
        "worker (or by `tuner resume`). A worker exits 0 once no trial is left to run or "
        "watch, 1 on a runtime failure, 2 for a bad config or rejected MLflow credentials.",
    )
    parser.add_argument("config", help="campaign YAML file (the same one every worker uses)")
    add_heartbeat_flags(parser)
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from tuner.campaign import Observer, run_worker
    from tuner.config import load_config

    interval, grace = heartbeat_flags(args)
    config = load_config(args.config)
    from tuner.cli._cmd_run import check_settings, print_warnings

    check_settings(config, (interval, grace))

    print_warnings(config, "tuner worker")

    class _Lines(Observer):
        def message(self, text: str) -> None:
            if not args.quiet:
                print(text, file=sys.stderr, flush=True)

    result = run_worker(config, interval=interval, grace=grace, observer=_Lines())
    if not args.quiet:
        of = "" if result.budget is None else f"/{result.budget}"
        line = f"worker done: study {config.study_name!r} holds {result.counted}{of} trials"
        if result.requeued:
            moved = ", ".join(f"{a}->{b}" for a, b in result.requeued)
            line += f"; re-queued stale trials {moved}"
        print(line)
    return 0
