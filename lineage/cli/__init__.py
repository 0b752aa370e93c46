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
import os
import sys
from collections.abc import Callable, Sequence

from lineage._cli_run import Parser, run_handler
from lineage._errors import LineageError
from lineage.cli._common import (
    FORMATS,
    add_common,
    fit_widths,
    format_cell,
    print_csv,
    print_json,
    print_table,
    print_text,
)

__all__ = [
    "FORMATS",
    "add_common",
    "build_parser",
    "console",
    "fit_widths",
    "format_cell",
    "main",
    "print_csv",
    "print_json",
    "print_table",
    "print_text",
]


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
    parser = Parser(
        prog="lineage",
        description="Hyperparameter lineage over MLflow: runs, show, diff, importance, diagnose.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = [command] if command is not None else command_names()
    # __import__, not importlib.import_module: importing importlib costs every call ~0.5 ms.
    modules = [__import__(f"{__name__}._cmd_{name}", fromlist=["register"]) for name in names]
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
    if hasattr(args, "tracking_uri"):
        args.handler = _checking_tracking_uri(args.handler)
    return run_handler("lineage", args, (LineageError,))


def _checking_tracking_uri(
    handler: Callable[[argparse.Namespace], object],
) -> Callable[[argparse.Namespace], object]:
    # A scheme MLflow cannot open is refused by name before any store is opened: MLflow's own
    # error speaks of its model registry.
    def checked(args: argparse.Namespace) -> object:
        from lineage.uri import checked_tracking_uri

        checked_tracking_uri(args.tracking_uri)
        return handler(args)

    return checked


def console() -> None:
    """The ``lineage`` console script: :func:`main`, then exit.

    A query's process spends 2-4 ms of its ~60 tearing the interpreter down (modules, GC).
    When no exit work is pending (no atexit callbacks, e.g. from mlflow or logging, and no
    other threads), it flushes its output and leaves at once."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader left (`| head`): as the docs of `signal` advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(code)
    import atexit

    threading = sys.modules.get("threading")
    if atexit._ncallbacks() == 0 and (threading is None or threading.active_count() == 1):
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
