"""The one exception root of the ``tuner`` package."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Protocol

    class ErrorAt(Protocol):
        """Phrases a `ConfigError` about a key path of a campaign's config file, as every
        other is phrased (`tuner.config.CampaignConfig.error`): for checks made after
        loading, by parts that get a section of the config rather than all of it."""

        def __call__(self, path: Sequence[Any], rule: str, value: Any = ..., /) -> ConfigError: ...


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


class StorageUnavailable(TunerError):
    """A study storage (or the lineage store's database) that cannot be opened, in one line
    naming the setting, the masked URL, what is wrong and the fix
    (`tuner.config.explain_storage_error`), e.g. ``storage postgresql://me:****@db:5432/optuna:
    PostgreSQL database 'optuna' does not exist on db:5432; create it with: createdb -h db
    -p 5432 -U me optuna``.

    ``exit_code`` 2 when the config names something that is not there (a missing database,
    a scheme without a driver, an unknown host, refused credentials), 1 when a server that
    should be there did not answer (connection refused, timeout)."""

    def __init__(self, line: str, *, exit_code: int = 1) -> None:
        super().__init__(line)
        self.exit_code = exit_code
