"""The one exception root of the ``lineage`` package.

Every error the library raises on purpose derives from :class:`LineageError`. The CLI turns
each into one line on stderr and the exit code it carries, never a traceback.
"""

from __future__ import annotations


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


class StoreError(LineageError):
    """The tracking store could not be reached or answered with an error. ``exit_code`` 1."""
