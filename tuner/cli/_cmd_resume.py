"""``tuner resume CONFIG``: continue a campaign whose controller died or was stopped."""

from __future__ import annotations

import argparse

from tuner.cli._cmd_run import add_heartbeat_flags, add_space_change_flag

ORDER = 21


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "resume",
        help="continue an interrupted campaign",
        description="Continue the campaign in CONFIG after its controller was killed (even "
        "kill -9) or the machine restarted: orphaned trial processes are ended, trials left "
        "RUNNING are marked FAIL and re-run with the same parameters, MLflow runs left "
        "RUNNING are closed, and the campaign goes on to exactly budget.trials trials.",
    )
    parser.add_argument("config", help="campaign YAML file")
    parser.add_argument("--quiet", "-q", action="store_true", help="no live progress view")
    add_space_change_flag(parser)
    add_heartbeat_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lineage.masking import mask_uri
    from tuner._errors import ConfigError
    from tuner.cli._cmd_run import check_settings, execute, heartbeat_flags
    from tuner.config import load_config
    from tuner.search import check_storage
    from tuner.status import study_exists

    timing = heartbeat_flags(args)
    config = load_config(args.config)
    check_settings(config, timing)
    # A database that cannot be opened is named as such, not taken for "no campaign".
    check_storage(config.optuna_storage_url())
    if not study_exists(config):
        raise ConfigError(
            f"{args.config}: no campaign {config.name!r} in {mask_uri(config.optuna_storage_url())} "
            "to resume; start it with `tuner run`"
        )
    return execute(
        config,
        quiet=args.quiet,
        resume=True,
        allow_space_change=args.allow_space_change,
        heartbeat=timing,
    )
