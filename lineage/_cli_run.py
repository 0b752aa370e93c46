"""How the ``lineage`` and ``tuner`` CLIs run a parsed command: one line and an exit code for
every error, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Parser", "one_line", "run_handler"]


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose help fits the terminal without ``import shutil``.

    argparse sizes a help formatter on every ``add_argument`` with ``shutil``, whose import
    (with ``bz2``, ``lzma``, ``fnmatch``) costs a query command ~2 ms of its ~60. Subcommand
    parsers inherit the class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _formatter)
        super().__init__(*args, **kwargs)


def _formatter(prog: str) -> argparse.HelpFormatter:
    # What shutil.get_terminal_size() answers: $COLUMNS, else the terminal, else 80.
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return argparse.HelpFormatter(prog, width=(columns or 80) - 2)


def run_handler(prog: str, args: argparse.Namespace, errors: tuple[type[Exception], ...]) -> int:
    """``args.handler(args)``; an error of ``errors`` (which carry ``exit_code``) prints
    ``<prog> <command>: error: ...`` and returns its code, Ctrl-C 130, a closed pipe 0."""
    try:
        return int(args.handler(args) or 0)
    except errors as exc:
        print(f"{prog} {args.command}: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt:
        print(f"{prog} {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        # An error no layer below turned into one of ``errors`` still gets one line
        # (set LINEAGE_DEBUG=1 for the trace).
        if os.environ.get("LINEAGE_DEBUG"):
            raise
        print(f"{prog} {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 1


def one_line(exc: BaseException) -> str:
    """An unexpected error as one masked line: its type and message, at most 500 chars."""
    from lineage._errors import one_line as _one_line

    return _one_line(exc, with_type=True)
