"""Runs with a known truth, as the store returns them (shared by the importance tests)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from lineage.store import RunRecord

Space = dict[str, tuple[Any, ...]]


def sample(space: Space, rng: np.random.Generator) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in space.items():
        kind = spec[0]
        if kind == "cat":
            out[name] = spec[1][rng.integers(len(spec[1]))]
        elif kind == "int":
            out[name] = int(rng.integers(spec[1], spec[2] + 1))
        elif kind == "log":
            out[name] = float(math.exp(rng.uniform(math.log(spec[1]), math.log(spec[2]))))
        else:
            out[name] = float(rng.uniform(spec[1], spec[2]))
    return out


def make_runs(
    space: Space,
    fn: Callable[[dict[str, Any], np.random.Generator], float | None],
    n: int,
    seed: int,
    *,
    target: str = "y",
    drop: Callable[[dict[str, Any]], list[str]] | None = None,
) -> list[RunRecord]:
    """Runs as the store returns them: params as MLflow strings, conditional ones absent."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n):
        p = sample(space, rng)
        value = fn(p, rng)
        for name in drop(p) if drop else []:
            p.pop(name, None)
        runs.append(
            RunRecord(
                run_id=f"{seed:08x}{i:024x}",
                experiment_id="1",
                experiment="truth",
                name=f"run-{i}",
                status="FINISHED",
                start_time=i,
                end_time=i + 1,
                params={k: str(v) for k, v in p.items()},
                metrics={} if value is None else {target: float(value)},
            )
        )
    return runs
