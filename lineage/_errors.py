"""The one exception root of the ``lineage`` package.

Every error the library raises on purpose derives from :class:`LineageError`. The CLI turns
each into one line on stderr and the exit code it carries, never a traceback.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not ``typing``'s: this module is on every CLI call's import path
if TYPE_CHECKING:
    from types import TracebackType


class LineageError(Exception):
    """A failure the user can act on. ``exit_code`` 1: runtime failure."""

    exit_code: int = 1


class UsageError(LineageError):
    """Bad input: a malformed argument, filter or file. ``exit_code`` 2."""

    exit_code = 2


class NotFoundError(UsageError):
    """An unknown run, experiment or metric was named. ``exit_code`` 2."""


class QuerySyntaxError(UsageError):
    """A ``--where`` expression could not be parsed; the message points at where it broke."""


class EnvironmentValueError(UsageError, ValueError):
    """An environment variable the process was started with holds a value its rule refuses;
    the message names the variable, the rule and the value. ``exit_code`` 2."""


class StoreError(LineageError):
    """The tracking store could not be reached or answered with an error. ``exit_code`` 1."""


class TransientError(StoreError):
    """A store operation failed for a reason that may pass (a locked SQLite file, a dropped
    connection, a serialization conflict): worth retrying with backoff. Writers raise it;
    the recorder retries the batch."""


class _ExitOnBadEnvironment:
    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, EnvironmentValueError):
            print(f"lineage: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None


def exiting_on_bad_environment() -> _ExitOnBadEnvironment:
    """Where a framework callback reads the environment on a script's behalf: a refused
    variable (`EnvironmentValueError`) ends the process as a bad command-line flag does
    under ``argparse``, with one line on stderr and exit status 2, not a traceback from
    inside the framework's training loop. (A class, not ``contextlib``: this module is on
    every CLI call's import path, which stays free of it.)"""
    return _ExitOnBadEnvironment()


def one_line(exc: BaseException, *, with_type: bool = False, limit: int = 500) -> str:
    """A driver's or library's message, which may span lines and hold a URI with its
    password, as one masked line (prefixed with the exception's type if ``with_type``), at
    most ``limit`` characters."""
    from lineage._secrets import mask_uri

    text = " ".join(str(exc).split()) or type(exc).__name__
    if with_type:
        text = f"{type(exc).__name__}: {text}"
    return mask_uri(text)[:limit]
