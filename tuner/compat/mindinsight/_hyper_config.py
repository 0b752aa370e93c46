"""``HyperConfig``: what a mindoptimizer training script reads, served by ``tuner run``.

A script written for mindoptimizer changes one line::

    from mindinsight.optimizer import HyperConfig      # before
    from tuner.compat.mindinsight import HyperConfig   # after

and keeps ``config.params.learning_rate``, ``config.summary_dir`` and
``config.custom_lineage_data``. Under ``tuner run`` the parameters come from the trial
(``TUNER_PARAMS``); ``summary_dir`` is a new directory per trial under the campaign's
``MINDINSIGHT_SUMMARY_BASE_DIR``. When the script exits, what ``SummaryCollector`` wrote there
(train and evaluation lineage, loss curve, scalars) is recorded into the trial's MLflow run
with the names ``lineage import mindinsight`` uses, which is where the tuner reads the
target from. Under mindoptimizer itself (``MINDINSIGHT_HYPER_CONFIG`` set) it reads that.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from pathlib import Path
from typing import Any

from tuner._errors import TunerError
from tuner.compat.mindinsight._names import (
    MINDINSIGHT_ENV,
    SUMMARY_BASE_DIR_ENV,
    SYSTEM_PARAMS,
    USER_DEFINED_ENV,
)

__all__ = ["AttributeDict", "HyperConfig", "HyperConfigError"]


class HyperConfigError(TunerError):
    """``HyperConfig`` was created outside a campaign, or its input is malformed."""


class _Missing(KeyError, AttributeError):
    """An absent parameter: a KeyError for ``params[...]``, an AttributeError for
    ``params.name`` (so ``getattr(params, name, default)`` works)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class AttributeDict(dict[str, Any]):
    """A dict whose keys are also attributes: ``params.learning_rate``."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise _Missing(
                f"no parameter {key!r} in this trial (it has: {', '.join(sorted(self)) or 'none'})"
            ) from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __missing__(self, key: str) -> Any:
        raise _Missing(
            f"no parameter {key!r} in this trial (it has: {', '.join(sorted(self)) or 'none'})"
        )


class HyperConfig:
    """The trial's parameters, summary directory and user-defined lineage data.

    Raises :class:`HyperConfigError` outside ``tuner run`` and mindoptimizer (there is
    nothing to read), or when the environment holds malformed values.
    """

    def __init__(self) -> None:
        raw = os.environ.get(MINDINSIGHT_ENV)
        if raw is not None and "TUNER_PARAMS" not in os.environ:
            self._from_mindoptimizer(raw)
            return
        if "TUNER_PARAMS" not in os.environ:
            raise HyperConfigError(
                "HyperConfig reads its parameters from a tuner trial (TUNER_PARAMS) or "
                f"mindoptimizer ({MINDINSIGHT_ENV}), got neither; run the script with "
                "`tuner run CAMPAIGN.yaml` (convert a mindoptimizer config with "
                "`tuner convert mindinsight CONFIG -o CAMPAIGN.yaml`)"
            )
        from tuner import trial

        try:
            params = trial.params()
        except ValueError as exc:
            raise HyperConfigError(str(exc)) from None
        self._params = params
        self._summary_dir = _trial_summary_dir()
        self._user_defined = {k: v for k, v in params.items() if k in _user_defined_names(params)}
        _record_at_exit(self._summary_dir)

    def _from_mindoptimizer(self, raw: str) -> None:
        try:
            data = json.loads(raw)
        except ValueError:
            raise HyperConfigError(
                f"{MINDINSIGHT_ENV} must hold a JSON object, got {raw[:80]!r}"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
            raise HyperConfigError(
                f"{MINDINSIGHT_ENV} must hold an object with 'params', got {raw[:80]!r}"
            )
        summary_dir = data.get("summary_dir")
        if not isinstance(summary_dir, str):
            raise HyperConfigError(
                f"{MINDINSIGHT_ENV}.summary_dir must be a string, got {summary_dir!r}"
            )
        self._params = data["params"]
        self._summary_dir = os.path.realpath(summary_dir)
        self._user_defined = data.get("custom_lineage_data") or {}

    @property
    def params(self) -> AttributeDict:
        """The parameters of this trial: ``params.learning_rate`` or ``params["lr"]``."""
        return AttributeDict(self._params)

    @property
    def summary_dir(self) -> str:
        """A directory for this trial's ``SummaryCollector`` (absolute; not yet created)."""
        return self._summary_dir

    @property
    def custom_lineage_data(self) -> dict[str, Any]:
        """The user-defined parameters of this trial, for
        ``SummaryCollector(..., custom_lineage_data=config.custom_lineage_data)``."""
        return dict(self._user_defined)


def _user_defined_names(params: dict[str, Any]) -> set[str]:
    listed = os.environ.get(USER_DEFINED_ENV)
    if listed is not None:
        return {name.strip() for name in listed.split(",") if name.strip()}
    # MindInsight's rule when `source` is not given: every name it does not record itself.
    return {name for name in params if name not in SYSTEM_PARAMS}


def _trial_summary_dir() -> str:
    base = os.environ.get(SUMMARY_BASE_DIR_ENV) or "summary_base_dir"
    number = os.environ.get("TUNER_TRIAL_NUMBER", "0")
    run_id = os.environ.get("MLFLOW_RUN_ID", "")[:8]
    attempt = os.environ.get("TUNER_ATTEMPT", "1")
    name = f"train_trial{number}" + (f"_{run_id}" if run_id else "")
    if attempt not in ("", "1"):
        name += f"_attempt{attempt}"
    return os.path.realpath(os.path.join(base, name))


_registered: set[str] = set()


def _record_at_exit(summary_dir: str) -> None:
    if summary_dir in _registered or not os.environ.get("MLFLOW_RUN_ID"):
        return
    _registered.add(summary_dir)
    atexit.register(_record, summary_dir)


def _record(summary_dir: str) -> None:
    """Record what the script's SummaryCollector wrote into the trial's MLflow run."""
    if not Path(summary_dir).is_dir():
        return
    base = os.environ.get(SUMMARY_BASE_DIR_ENV) or str(Path(summary_dir).parent)
    try:
        from lineage.mindinsight import record_summary_dir

        record_summary_dir(summary_dir, base_dir=base)
    except Exception as exc:  # the training itself succeeded; say why its metrics are missing
        print(
            f"tuner.compat.mindinsight: could not record {summary_dir}: "
            f"{type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
