"""``tuner convert mindinsight CONFIG``: turn another tool's tuning config into a campaign."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ORDER = 15

_EPILOG = """\
examples:
  tuner convert mindinsight config.yaml -o campaign.yaml
  tuner convert mindinsight config.yaml --trials 20      (prints the campaign)
exit codes: 0 converted, 2 the config breaks a mindoptimizer rule (one line says which).
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="convert a MindInsight mindoptimizer config into a campaign",
        description="Convert another tool's tuning config into a commented campaign YAML.",
    )
    sources = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)
    mi = sources.add_parser(
        "mindinsight",
        help="a MindInsight mindoptimizer config (mindoptimizer --config CONFIG)",
        description="Write the campaign equivalent to a mindoptimizer config, with a comment "
        "on every mapping that is not one-to-one. The training script then changes one import: "
        "from tuner.compat.mindinsight import HyperConfig.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mi.add_argument("config", metavar="CONFIG", help="the mindoptimizer YAML file")
    mi.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write here (default: stdout)"
    )
    mi.add_argument(
        "--trials",
        type=int,
        default=10,
        metavar="N",
        help="budget.trials: what mindoptimizer --iter N was (default 10)",
    )
    mi.add_argument(
        "--name", default=None, help="campaign name (default: summary_base_dir's last part)"
    )
    mi.add_argument("--force", action="store_true", help="overwrite FILE when it exists")
    mi.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tuner._errors import ConfigError
    from tuner.compat.mindinsight import convert_file

    if args.trials < 1:
        raise ConfigError(f"--trials must be >= 1, got {args.trials}.")
    output = Path(args.output) if args.output else None
    if output is not None and output.exists() and not args.force:
        raise ConfigError(f"{output}: exists; pass --force to overwrite it.")
    text = convert_file(args.config, output=output, name=args.name, trials=args.trials)
    if output is None:
        sys.stdout.write(text)
        return 0
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{output}: cannot be written ({exc.strerror or exc}).") from None
    print(f"wrote {output}; check it with: tuner validate {output}", file=sys.stderr)
    return 0
