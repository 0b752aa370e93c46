"""The in-trial API: what a training script calls while the tuner runs it.

Importing this module costs nothing (no mlflow, no optuna). Outside a campaign every call is
harmless: `params` returns ``{}`` (or the JSON in ``TUNER_PARAMS``), `report` does nothing,
`should_prune` is False, so the same script runs by hand.

    from tuner import trial
    p = trial.params()
    for epoch in range(p.get("epochs", 10)):
        loss = train_one_epoch(lr=p["lr"])
        trial.report(epoch, loss=loss)      # intermediate value (pruning) + lineage metric
        if trial.should_prune():
            break                            # the controller marks the trial PRUNED

The channel is a file named by ``TUNER_CHANNEL`` that this module appends JSON lines to;
the prune flag is a file named by ``TUNER_CONTROL`` that the controller creates.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import IO, Any

__all__ = ["is_tuning", "number", "params", "report", "should_prune"]

_channel: IO[str] | None = None
_channel_path: str | None = None
_params: dict[str, Any] | None = None


def is_tuning() -> bool:
    """True when this process was started by the tuner."""
    return "TUNER_CHANNEL" in os.environ


def number() -> int | None:
    """The Optuna trial number of this process, or None outside a campaign."""
    value = os.environ.get("TUNER_TRIAL_NUMBER")
    return int(value) if value is not None else None


def params() -> dict[str, Any]:
    """The trial's hyperparameters (the JSON object in ``TUNER_PARAMS``; ``{}`` when unset)."""
    global _params
    if _params is None:
        raw = os.environ.get("TUNER_PARAMS", "")
        try:
            loaded = json.loads(raw) if raw else {}
        except ValueError as exc:
            raise ValueError(f"TUNER_PARAMS must hold a JSON object, got {raw[:80]!r}") from exc
        if not isinstance(loaded, dict):
            raise ValueError(f"TUNER_PARAMS must hold a JSON object, got {raw[:80]!r}")
        _params = loaded
    return dict(_params)


def report(step: int, **metrics: float) -> None:
    """Report metric values at ``step`` (an epoch or a global step, increasing).

    The controller feeds the target metric to the pruner and records every metric in the
    trial's lineage run. One short line appended and flushed: cheap enough for every step.
    """
    global _channel, _channel_path
    path = os.environ.get("TUNER_CHANNEL")
    if not path:
        return
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"report(step, ...): step must be an int, got {step!r}")
    values: dict[str, float | str] = {}
    for name, value in metrics.items():
        number_ = float(value)
        # JSON has no NaN/Inf; keep them as strings so that the controller sees them.
        values[name] = number_ if math.isfinite(number_) else repr(number_)
    if _channel is None or _channel_path != path:
        _channel = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives with the process
        _channel_path = path
    _channel.write(json.dumps({"step": step, "t": time.time(), "m": values}) + "\n")
    _channel.flush()


def should_prune() -> bool:
    """True once the controller decided to stop this trial (pruned, or the campaign stops).

    The script should then return promptly; a SIGTERM follows, then SIGKILL after
    ``trial.grace_period``.
    """
    path = os.environ.get("TUNER_CONTROL")
    return bool(path) and os.path.exists(path)  # type: ignore[arg-type]
