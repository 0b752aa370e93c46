"""``lineage``: query, compare, rank and diagnose runs in any MLflow store.

Each subcommand lives in its own module ``lineage/cli/_cmd_<name>.py`` that defines
``register(subparsers)``; the parser it adds sets ``handler=<callable(args) -> int>``.
Modules are discovered here, so a new command is one new file. They must import heavy
libraries (mlflow, sklearn, matplotlib) inside their handler, not at module level, so that
``lineage --help`` and the fast query paths start quickly. A call that names its command
(``lineage runs ...``) loads only that command's module.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from lineage._errors import LineageError

__all__ = ["build_parser", "main"]


def command_names() -> list[str]:
    """The subcommands, from the ``_cmd_<name>.py`` files beside this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    return sorted(
        f[len("_cmd_") : -len(".py")]
        for f in os.listdir(here)
        if f.startswith("_cmd_") and f.endswith(".py")
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``command`` (one of :func:`command_names`), a parser holding
    that subcommand only, which spares loading the others."""
    parser = argparse.ArgumentParser(
        prog="lineage",
        description="Hyperparameter lineage over MLflow: runs, show, diff, importance, diagnose.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = [command] if command is not None else command_names()
    modules = [importlib.import_module(f"{__name__}._cmd_{name}") for name in names]
    for module in sorted(modules, key=lambda m: getattr(m, "ORDER", 100)):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # An unreachable tracking server should fail in seconds, not after MLflow's default
    # retries with backoff (minutes); the user's own settings win.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    argv = list(sys.argv[1:] if argv is None else argv)
    named = argv[0] if argv and argv[0] in command_names() else None
    args = build_parser(named).parse_args(argv)
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
