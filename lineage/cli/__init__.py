"""``lineage``: query, compare, rank and diagnose runs in any MLflow store.

Each subcommand lives in its own module ``lineage/cli/_cmd_<name>.py`` that defines
``register(subparsers)``; the parser it adds sets ``handler=<callable(args) -> int>``.
Modules are discovered here, so a new command is one new file. They must import heavy
libraries (mlflow, sklearn, matplotlib) inside their handler, not at module level, so that
``lineage --help`` and the fast query paths start quickly.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from lineage._errors import LineageError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lineage",
        description="Hyperparameter lineage over MLflow: runs, show, diff, importance, diagnose.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("_cmd_"))
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    for module in sorted(modules, key=lambda m: getattr(m, "ORDER", 100)):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except LineageError as exc:
        print(f"lineage {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"lineage {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
