"""``tuner``: validate and run tuning campaigns.

Each subcommand lives in ``tuner/cli/_cmd_<name>.py`` defining ``register(subparsers)``; the
parser it adds sets ``handler=<callable(args) -> int>``. Heavy imports go inside handlers.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import shlex
import sys
from collections.abc import Callable, Sequence

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
    continuation = _CONTINUE.get(args.command)
    if continuation is not None:
        args.handler = _say_how_to_continue(args.handler, args.command, continuation, args)
    code = run_handler("tuner", args, (TunerError, LineageError))
    if code == INTERRUPTED and continuation is not None and argv is None:
        _exit_now(code)
    return code


#: The exit code of a campaign command that a signal (Ctrl-C, SIGTERM) stopped.
INTERRUPTED = 130


def _exit_now(code: int) -> None:
    """Exit a stopped campaign command without the interpreter's teardown: everything the
    campaign had to close is closed (trials, runs, the campaign directory), and freeing the
    objects of every module loaded (Optuna, MLflow, SQLAlchemy) one by one takes seconds on a
    busy host, which a stop is not allowed. Only as a program (``argv`` None): a caller that
    runs `main` in its own process keeps its process."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


#: What continues a campaign after Ctrl-C (or SIGTERM) stopped the command: the running
#: trials were stopped and re-queued, so the same budget is finished by this command.
_CONTINUE = {"run": "tuner resume", "resume": "tuner resume", "worker": "tuner worker"}


def _say_how_to_continue(
    handler: Callable[[argparse.Namespace], int],
    command: str,
    continuation: str,
    args: argparse.Namespace,
) -> Callable[[argparse.Namespace], int]:
    def wrapped(ns: argparse.Namespace) -> int:
        try:
            return handler(ns)
        except KeyboardInterrupt:
            config = shlex.quote(str(getattr(args, "config", "CONFIG")))
            print(
                f"tuner {command}: interrupted; continue with: {continuation} {config}",
                file=sys.stderr,
                flush=True,
            )
            return INTERRUPTED

    return wrapped


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
