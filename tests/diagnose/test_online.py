"""``online_check``: runaway and divergence on intermediate values, cheap enough per report."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from diag_curves import HEALTHY_KINDS, healthy_run, noisy_decay

from lineage import UsageError
from lineage.diagnose import online_check


def _prefixes(values: list[float]) -> list[int]:
    """Lengths after which online_check returned a finding."""
    steps = list(range(len(values)))
    return [n for n in range(1, len(values) + 1) if online_check("loss", steps[:n], values[:n])]


def test_nan_stops_at_the_first_bad_report() -> None:
    values = [2.3, 2.1, 1.9, math.nan]
    f = online_check("val_loss", [1, 2, 3, 4], values)
    assert f is not None and f.check == "loss_runaway" and f.evidence["step"] == 4
    assert online_check("val_loss", [1, 2, 3], values[:3]) is None


def test_huge_values_and_accuracy_nan() -> None:
    f = online_check("loss", list(range(8)), [2.3, 2.2, 2.1, 2.5, 20, 300, 4e3, 5e4])
    assert f is not None and f.check == "loss_runaway" and f.evidence["step"] == 5
    assert online_check("val_accuracy", [1, 2], [0.5, math.nan]) is not None
    # an accuracy that only grows is never "runaway"
    assert online_check("val_accuracy", list(range(20)), list(np.linspace(0.1, 0.99, 20))) is None


def test_divergence_is_found_online_once_sustained(seed: int) -> None:
    rng = np.random.default_rng(seed)
    down = noisy_decay(rng, n=100, tau=15, floor=0.3, noise=0.05)
    up = np.linspace(0.3, 2.0, 60)
    values = [float(v) for v in np.concatenate([down, up])]
    hits = _prefixes(values)
    assert hits and 110 < hits[0] < 160
    f = online_check("loss", list(range(len(values))), values)
    assert f is not None and f.check == "divergence" and f.evidence["best"] < 0.4


def test_unordered_steps_are_sorted() -> None:
    f = online_check("loss", [3, 1, 2, 4], [1.0, 2.0, 1.5, math.inf])
    assert f is not None and f.evidence["window"] == [3, 4]


@pytest.mark.parametrize("kind", HEALTHY_KINDS)
def test_healthy_curves_are_never_stopped(kind: str, seed: int) -> None:
    for replicate in range(3):
        hist, _, _ = healthy_run(np.random.default_rng(seed + replicate), kind)
        for metric in ("loss", "val_loss", "val_accuracy"):
            steps = [s for s, _ in hist[metric]]
            values = [v for _, v in hist[metric]]
            for n in range(1, len(values) + 1, max(len(values) // 60, 1)):
                assert online_check(metric, steps[:n], values[:n]) is None, (kind, metric, n)


def test_length_mismatch_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="same length, got 2 and 1"):
        online_check("loss", [1, 2], [0.5])


def test_cost_per_call_is_small(seed: int) -> None:
    values = [float(v) for v in noisy_decay(np.random.default_rng(seed), n=1000)]
    steps = list(range(1000))
    online_check("loss", steps, values)
    started = time.perf_counter()
    for _ in range(200):
        online_check("loss", steps, values)
    per_call = (time.perf_counter() - started) / 200
    assert per_call < 0.005, per_call  # measured ~0.2 ms for 1000 points
