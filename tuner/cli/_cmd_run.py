"""``tuner run CONFIG``: run a campaign to its budget (continues an existing one)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.config import CampaignConfig

ORDER = 20


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a tuning campaign",
        description="Run the campaign in CONFIG: ask Optuna for parameters, run each trial as a "
        "process on a device slot, record everything in MLflow, until budget.trials trials "
        "are finished. Running it again on the same study continues it. Exit 0 when the "
        "budget is reached, 1 when budget.max_failures stopped it, 2 for a bad config, "
        "130 when interrupted (running trials are stopped and re-queued: `tuner resume`).",
    )
    parser.add_argument("config", help="campaign YAML file")
    add_heartbeat_flags(parser)
    parser.add_argument("--quiet", "-q", action="store_true", help="no live progress view")
    add_space_change_flag(parser)
    parser.set_defaults(handler=run)


def add_space_change_flag(parser: argparse.ArgumentParser) -> None:
    """``--allow-space-change``, shared by `tuner run` and `tuner resume`."""
    parser.add_argument(
        "--allow-space-change",
        action="store_true",
        help="go on when the campaign's study was run with another search space (parameters "
        "added, removed, or with other bounds or choices); the change is recorded in the "
        "campaign's MLflow run. Without it such a run is refused (exit 2).",
    )


def add_heartbeat_flags(parser: argparse.ArgumentParser) -> None:
    """``--heartbeat`` and ``--stale-after``, shared by `tuner run`, `resume` and `worker`."""
    parser.add_argument(
        "--heartbeat",
        type=int,
        default=None,
        metavar="S",
        help="seconds between heartbeats on a shared study (default: "
        "$TUNER_HEARTBEAT_INTERVAL, else heartbeat.interval in the config, else 5)",
    )
    parser.add_argument(
        "--stale-after",
        type=int,
        default=None,
        metavar="S",
        help="a RUNNING trial without a heartbeat for S seconds is re-queued (default: "
        "$TUNER_HEARTBEAT_GRACE, else heartbeat.grace, else max(30, 3 x heartbeat))",
    )


def heartbeat_flags(args: argparse.Namespace) -> tuple[int | None, int | None]:
    """The checked ``(--heartbeat, --stale-after)`` values."""
    from tuner._errors import ConfigError

    for flag, value in (("--heartbeat", args.heartbeat), ("--stale-after", args.stale_after)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be >= 1 second, got {value}")
    if args.heartbeat and args.stale_after and args.stale_after <= args.heartbeat:
        raise ConfigError(
            f"--stale-after must be > --heartbeat ({args.heartbeat}), got {args.stale_after}"
        )
    return args.heartbeat, args.stale_after


def check_settings(config: CampaignConfig, flags: tuple[int | None, int | None]) -> None:
    """Refuse, before anything is made, what the config file alone does not show: heartbeat
    settings that resolve to a grace not longer than the interval (flags, environment and the
    config's section together), a ``LINEAGE_*`` variable the trials inherit with a value
    their recording refuses (each trial would fail), and an ``MLFLOW_TRACKING_URI`` whose
    scheme MLflow cannot open."""
    import os

    from lineage import environment
    from lineage.uri import checked_tracking_uri
    from tuner.coordination import heartbeat_timing

    heartbeat_timing(*flags, section=config.heartbeat, source=str(config.source_path or ""))
    environment.check({k: v for k, v in os.environ.items() if k not in config.env})
    if not config.lineage.tracking_uri:
        checked_tracking_uri()


def run(args: argparse.Namespace) -> int:
    from tuner.config import load_config

    timing = heartbeat_flags(args)
    config = load_config(args.config)
    check_settings(config, timing)
    return execute(
        config,
        quiet=args.quiet,
        resume=False,
        allow_space_change=args.allow_space_change,
        heartbeat=timing,
    )


def print_warnings(config: Any, prog: str) -> None:
    """The config's warnings, one line each on stderr, as `tuner validate` prints them."""
    import sys

    for line in config.warnings():
        print(f"{prog}: warning: {line}", file=sys.stderr)


def execute(
    config: Any,
    *,
    quiet: bool,
    resume: bool,
    allow_space_change: bool = False,
    heartbeat: tuple[int | None, int | None] = (None, None),
) -> int:
    """Shared by `tuner run` and `tuner resume`."""
    from lineage.masking import mask_mapping
    from tuner.campaign import Controller, Observer
    from tuner.coordination import Standalone, StudySite
    from tuner.records import pareto_line

    print_warnings(config, "tuner resume" if resume else "tuner run")

    observer: Any = Observer()
    if not quiet:
        from tuner.campaign import RichObserver

        observer = RichObserver()
    try:
        site = StudySite.of(config)
        coordination = Standalone(site, interval=heartbeat[0], grace=heartbeat[1])
        result = Controller(
            config,
            coordination=coordination,
            observer=observer,
            allow_space_change=allow_space_change,
        ).run()
    finally:
        close = getattr(observer, "close", None)
        if close is not None:
            close()
    if not quiet:
        from lineage.console import print_text  # prose wrapped at spaces on a terminal

        counts = result.counts
        line = (
            f"campaign {config.name!r}: {result.finished}"
            + ("" if result.budget is None else f"/{result.budget}")
            + " trials "
            f"(COMPLETE {counts['COMPLETE']}, PRUNED {counts['PRUNED']}, FAIL {counts['FAIL']})"
        )
        best = result.best
        if best is not None and "trials" in best:
            line += "; " + pareto_line(best, config.metric_names)
        elif best is not None:
            line += f"; best trial {best['number']}: {best['value']:.6g} with {mask_mapping(best['params'])}"
        print_text(line)
        if result.stop_reason:
            print_text(result.stop_reason)
        if result.importance:
            print_text(result.importance)
        from tuner.search import StudyPlan, bound_notes, transfer_notes

        plan = StudyPlan.of(config)
        for note in [*transfer_notes(plan), *bound_notes(plan)]:
            print_text(note)
        if result.experiment_id is not None:
            print_text(_mlflow_line(config, result.experiment_id))
        if result.lineage_errors:
            print(f"warning: lineage store errors: {result.lineage_errors}")
    return 0


def _mlflow_line(config: Any, experiment_id: str) -> str:
    """Where to see the campaign in the MLflow UI: its trials, best first, with the target
    and the tuned parameters as columns, on a tracking server; else the `lineage ui` command
    that serves the store and the page to open."""
    from lineage.uri import masked, scheme, trials_view_link

    uri = config.tracking_uri()
    if scheme(uri) in ("http", "https"):
        return f"MLflow: {masked(trials_view_link(uri, experiment_id))}"
    page = trials_view_link("", experiment_id)
    return f"MLflow: lineage ui --tracking-uri {masked(uri)}, then open /{page}"
