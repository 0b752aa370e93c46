"""``tuner validate CONFIG``: check a campaign config and summarize it; writes to no store
(it reads the ``warm_start`` sources, to say what a run would import)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.config import CampaignConfig, Parameter

ORDER = 10


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check a campaign config without running anything",
        description="Check a campaign config and print a summary. Exit 0 when valid; else one "
        "line naming the file, the key, the rule and the value received, and exit 2. Nothing "
        "is created in the lineage store or the Optuna storage. A config that is valid but "
        "probably wrong (a parameter no command placeholder passes to the script) gets one "
        "warning line on stderr and still exits 0. With warm_start, its sources are read and "
        "two lines say how many earlier runs a run would import and how many it would skip, "
        "and why.",
    )
    parser.add_argument("config", help="campaign YAML file")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lineage import UsageError
    from tuner._errors import ConfigError
    from tuner.config import load_config
    from tuner.search import SamplerPlan, make_pruner, make_sampler

    try:
        config = load_config(args.config)
        from tuner.cli._cmd_run import check_settings

        check_settings(config, (None, None))  # with the environment, as run would resolve it
        # Option values only the Optuna constructors check (types, ranges).
        make_sampler(SamplerPlan.of(config))
        make_pruner(config.pruner, error=config.error)
        plan = None
        if config.warm_start is not None:
            from tuner.history import HistoryContext, load_history

            plan = load_history(HistoryContext.of(config))
    except (ConfigError, UsageError) as exc:  # UsageError: a refused environment variable
        if args.format == "json":
            json.dump({"valid": False, "error": str(exc)}, sys.stdout)
            sys.stdout.write("\n")
            print(f"tuner validate: error: {exc}", file=sys.stderr)
            return exc.exit_code
        raise
    warnings = config.warnings()
    if args.format == "json":
        extra: dict[str, Any] = {"warnings": warnings}
        if plan is not None:
            extra["warm_start"] = {**plan.summary(), "lines": plan.lines()}
        json.dump({**summary(config), **extra}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        _print_table(config)
        for line in plan.lines() if plan is not None else []:
            print(line)
    for line in warnings:
        print(f"tuner validate: warning: {line}", file=sys.stderr)
    return 0


def summary(config: CampaignConfig) -> dict[str, Any]:
    """What ``--format json`` prints; secrets (env values, secret flags, URI passwords) masked."""
    from lineage.masking import mask_argv, mask_mapping, mask_uri
    from tuner.search import sampling_order

    dumped = mask_mapping(config.model_dump(mode="json"))
    if isinstance(dumped.get("command"), list):
        dumped["command"] = mask_argv([str(a) for a in config.command])
    return {
        "valid": True,
        "file": str(config.source_path),
        "name": config.name,
        "study_name": config.study_name,
        "experiment": config.experiment,
        "directions": config.directions,
        "metrics": config.metric_names,
        "tracking_uri": mask_uri(config.tracking_uri()),
        "storage": mask_uri(config.optuna_storage_url()),
        "sampling_order": sampling_order(config.parameters),
        "config": dumped,
    }


def describe_range(param: Parameter, *, secret: bool = False) -> str:
    if param.type == "categorical":
        if secret:  # a secret-named parameter's choices are the secrets themselves
            return f"{len(param.choices or [])} choices (masked)"
        return ", ".join(json.dumps(c) for c in param.choices or [])
    text = f"[{param.low}, {param.high}]"
    if param.step is not None:
        text += f" step {param.step}"
    if param.log:
        text += " log"
    return text


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "none"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _print_table(config: CampaignConfig) -> None:
    from lineage.console import print_table
    from lineage.masking import is_secret_name, mask_argv, mask_mapping, mask_uri

    b, t, s, r = config.budget, config.trial, config.sampler, config.resources
    goals = ", ".join(f"{o.goal} {o.metric}" for o in config.all_objectives)
    devices = r.devices if r.devices == "auto" else ",".join(str(d) for d in r.devices)
    sampler = s.name + (f" (seed {s.seed})" if s.seed is not None else "")
    if s.options:
        sampler += " " + json.dumps(mask_mapping(s.options), default=str)
    pruner: str = config.pruner.name
    if config.pruner.options:
        pruner += " " + json.dumps(mask_mapping(config.pruner.options), default=str)
    rows = [
        ("name", config.name),
        ("command", shlex.join(mask_argv(list(config.command)))),
        ("workdir", str(config.workdir)),
        ("objective", goals),
        (
            "budget",
            f"{b.limits_text() or 'no trial limit'}, timeout {_duration(b.timeout)}, stop after {b.max_failures} failures",
        ),
        (
            "trial",
            f"timeout {_duration(t.timeout)}, {t.retries} retries, "
            f"grace {_duration(t.grace_period)}",
        ),
        ("sampler", sampler),
        ("pruner", pruner),
        (
            "resources",
            f"kind {r.kind}, devices {devices}, {r.per_trial} per trial, {r.parallel} in parallel "
            f"({config.executor.name} executor)",
        ),
        ("lineage", f"{mask_uri(config.tracking_uri())} (experiment {config.experiment})"),
        ("storage", mask_uri(config.optuna_storage_url())),
    ]
    if config.metrics:
        rows.append(("stdout metrics", ", ".join(config.metrics)))
    print(f"{config.display_name}: valid")
    print_table(["key", "value"], rows)
    params = [
        (
            name,
            p.type,
            describe_range(p, secret=is_secret_name(name)),
            ", ".join(f"{k} in {json.dumps(v)}" for k, v in (p.when or {}).items()),
        )
        for name, p in config.parameters.items()
    ]
    print_table(["parameter", "type", "range / choices", "when"], params)
