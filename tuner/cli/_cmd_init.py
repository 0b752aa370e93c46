"""``tuner init --from EXPERIMENT``: write a campaign derived from recorded runs."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

ORDER = 12

_EPILOG = """\
examples:
  tuner init --from digits --target val_accuracy --goal maximize -o campaign.yaml
  tuner init --from digits --target val_loss --goal minimize --where "params.epochs = '10'"
then: tuner validate campaign.yaml && tuner run campaign.yaml
exit codes: 0 written, 2 bad input (unknown experiment, a target no run recorded, no varying
parameter, a store that cannot be read, FILE exists without --force): one line, no file.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "init",
        help="write a campaign derived from recorded runs (tuner init --from EXPERIMENT)",
        description="Write a commented campaign YAML from an experiment's finished runs: the "
        "parameters lineage's importance analysis finds significant are tuned over ranges "
        "refined around the best runs, the others fixed at the best run's value; the command "
        "is the best run's recorded command line; warm_start points back at the runs (their "
        "3 best are offered for a re-run first, commented out).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--from",
        dest="experiment",
        required=True,
        metavar="EXPERIMENT",
        help="the MLflow experiment (name or id) whose runs to learn from",
    )
    parser.add_argument("--target", required=True, metavar="METRIC", help="the metric to tune")
    parser.add_argument("--goal", required=True, choices=["minimize", "maximize"])
    parser.add_argument(
        "--where", default=None, help="only these runs (the `lineage runs --where` language)"
    )
    parser.add_argument(
        "--tracking-uri",
        default=None,
        help="the store holding the runs (default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )
    parser.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write here (default: stdout)"
    )
    parser.add_argument("--name", default=None, help="campaign name (default: EXPERIMENT-refined)")
    parser.add_argument(
        "--trials", type=int, default=20, metavar="N", help="budget.trials (default 20)"
    )
    parser.add_argument(
        "--method",
        choices=["auto", "forest", "gp"],
        default="auto",
        help="the importance model, as in `lineage importance --method` (default: auto); "
        "the campaign's closing analysis keeps it",
    )
    parser.add_argument("--force", action="store_true", help="overwrite FILE when it exists")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tuner._errors import ConfigError
    from tuner.history import derive_campaign, render_campaign

    if args.trials < 1:
        raise ConfigError(f"--trials must be >= 1, got {args.trials}.")
    output = Path(args.output) if args.output else None
    if output is not None and output.exists() and not args.force:
        raise ConfigError(f"{output}: exists; pass --force to overwrite it.")
    if output is not None and not output.parent.is_dir():
        raise ConfigError(f"{output}: its directory {output.parent} does not exist.")
    derived = derive_campaign(
        args.experiment,
        target=args.target,
        goal=args.goal,
        where=args.where,
        tracking_uri=args.tracking_uri,
        method=args.method,
    )
    invocation = ["tuner", "init", "--from", args.experiment, "--target", args.target]
    invocation += ["--goal", args.goal] + (["--where", args.where] if args.where else [])
    invocation += ["--method", args.method] if args.method != "auto" else []
    text = render_campaign(
        derived, name=args.name, trials=args.trials, invocation=shlex.join(invocation)
    )
    if output is None:
        sys.stdout.write(text)
        return 0
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{output}: cannot be written ({exc.strerror or exc}).") from None
    tuned = ", ".join(p.name for p in derived.tuned)
    fixed = ", ".join(p.name for p in derived.fixed) or "none"
    print(
        f"wrote {output}: {derived.n_runs} runs of {derived.experiment!r}; tuned: {tuned}; "
        f"fixed: {fixed}; check it with: tuner validate {output}",
        file=sys.stderr,
    )
    return 0
