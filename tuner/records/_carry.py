"""A continuation's MLflow run made whole: the series its attempt did not record again.

A trial that continues an interrupted or retried attempt from a checkpoint records only
the steps after it. At its end, each series its ancestors' runs hold (the per-step loss
and learning rate, the epoch's train_loss, ...) is carried over below the first step the
continuation recorded of it, so ``lineage show`` and ``diagnose`` read one curve per
series, as a training that was never interrupted would have left. The ancestors' later
points, the lost work the continuation trained again, stay in their own runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["carry_history"]

_BATCH = 1000  # MLflow's log_batch takes at most 1,000 metrics per call


def carry_history(
    client: Any, run_id: str, ancestors: Sequence[str], *, skip_prefix: str | None = None
) -> int:
    """Copy into run ``run_id`` every point of the ``ancestors``' runs (nearest first)
    whose step is below the first step ``run_id`` holds of that metric, leaving out metrics
    whose name starts with ``skip_prefix``. Returns the number of points copied. Running
    it again copies nothing more. ``client``: an ``mlflow.MlflowClient``."""
    from mlflow.entities import Metric

    first = _first_steps(client, run_id)
    copied = 0
    for ancestor in ancestors:
        points: list[Any] = []
        for key in client.get_run(ancestor).data.metrics:
            if skip_prefix and key.startswith(skip_prefix):
                continue
            below = first.get(key)
            kept = [
                m
                for m in client.get_metric_history(ancestor, key)
                if below is None or m.step < below
            ]
            points += [Metric(key, m.value, m.timestamp, m.step) for m in kept]
            if kept:
                first[key] = min(m.step for m in kept)
        for i in range(0, len(points), _BATCH):
            client.log_batch(run_id, metrics=points[i : i + _BATCH], synchronous=True)
        copied += len(points)
    return copied


def _first_steps(client: Any, run_id: str) -> dict[str, int]:
    return {
        key: min((m.step for m in client.get_metric_history(run_id, key)), default=0)
        for key in client.get_run(run_id).data.metrics
    }
