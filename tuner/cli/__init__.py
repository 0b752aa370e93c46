"""``tuner``: validate and run tuning campaigns.

Each subcommand lives in ``tuner/cli/_cmd_<name>.py`` defining ``register(subparsers)``; the
parser it adds sets ``handler=<callable(args) -> int>``. Heavy imports go inside handlers.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence

from lineage import LineageError
from lineage.console import Parser, run_handler
from tuner._errors import TunerError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tuner", description="Config-driven hyperparameter tuning campaigns (Optuna)."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("_cmd_"))
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    for module in sorted(modules, key=lambda m: getattr(m, "ORDER", 100)):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # MLflow logs at INFO (schema creation, migrations) into the campaign's own output.
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_handler("tuner", args, (TunerError, LineageError))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
