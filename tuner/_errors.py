"""The one exception root of the ``tuner`` package."""

from __future__ import annotations


class TunerError(Exception):
    """A failure the user can act on. ``exit_code`` 1: runtime failure."""

    exit_code: int = 1


class ConfigError(TunerError):
    """A campaign config broke a rule. ``exit_code`` 2.

    The message is one line: file, key path, rule, value received, e.g.
    ``configs/x.yaml: parameters.lr.low must be > 0 when log: true, got 0.``
    """

    exit_code = 2


class BudgetExhausted(TunerError):
    """The campaign stopped because ``budget.max_failures`` trials failed."""
