"""``online_check``: runaway and divergence on intermediate values, cheap enough per report
(the work is counted, not timed: no assertion here depends on how loaded the machine is)."""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

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
    # the level (median of the 3 points ending at a step) of 20, 300, 4e3 is 300 at step 6
    assert f is not None and f.check == "loss_runaway" and f.evidence["step"] == 6
    assert f.evidence["value"] == 300 and f.evidence["best"] == 2.2
    # one huge point is a spike, not a level
    assert online_check("loss", list(range(8)), [2.3, 2.2, 2.1, 2.0, 500, 1.9, 1.8, 1.8]) is None
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


def _work(metric: str, n: int, seed: int) -> tuple[int, int]:
    """(Python calls made, peak bytes allocated) by one online_check on n points."""
    rng = np.random.default_rng(seed)
    values = [float(v) for v in noisy_decay(rng, n=n, tau=n / 5)]
    steps = list(range(n))
    assert online_check(metric, steps, values) is None  # warm: caches, lazy imports
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    gc.disable()  # a collection would run gc.callbacks inside the counted call
    sys.setprofile(count)
    try:
        online_check(metric, steps, values)
    finally:
        sys.setprofile(None)
        gc.enable()
    tracemalloc.start()
    try:
        online_check(metric, steps, values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return calls, peak


@pytest.mark.parametrize("metric", ["loss", "val_accuracy"])
def test_work_per_call_is_one_vectorised_pass(metric: str, seed: int) -> None:
    # Counted, not timed: the Python calls one check makes do not grow with the curve (the
    # per-point work is numpy's and pandas' vectorised code), and the memory it allocates
    # grows linearly with it (a few float arrays; measured ~56 bytes a point).
    small_calls, _ = _work(metric, 1_000, seed)
    large_calls, large_peak = _work(metric, 100_000, seed)
    assert small_calls == large_calls and large_calls < 2_000, (small_calls, large_calls)
    assert large_peak < 100 * 100_000, large_peak


def test_online_check_imports_nothing_heavy_and_touches_no_store(tmp_path: Path) -> None:
    heavy = ("mlflow", "sqlalchemy", "sklearn", "scipy", "optuna", "mindspore", "torch")
    code = (
        "import sys\n"
        "from lineage.diagnose import online_check\n"
        "online_check('loss', list(range(50)), [2.0 - 0.01 * i for i in range(50)])\n"
        "online_check('loss', [0, 1], [1.0, float('nan')])\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} "
        "or m.startswith(('lineage.store', 'lineage._recording', 'tuner'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert list(tmp_path.iterdir()) == []
