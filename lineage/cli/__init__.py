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
import os
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
    # An unreachable tracking server should fail in seconds, not after MLflow's default
    # retries with backoff (minutes); the user's own settings win.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
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
    except Exception as exc:
        # The contract is one line and an exit code, never a traceback: an error no layer
        # below turned into a LineageError still gets one (set LINEAGE_DEBUG=1 for the trace).
        if os.environ.get("LINEAGE_DEBUG"):
            raise
        print(f"lineage {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    from lineage._secrets import mask_uri

    text = " ".join(str(exc).split()) or type(exc).__name__
    return mask_uri(f"{type(exc).__name__}: {text}")[:500]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
