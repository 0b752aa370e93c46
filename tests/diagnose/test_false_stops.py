"""The checks that can stop a trial (``online_check``: ``loss_runaway`` and ``divergence``)
never stop an improving curve, whatever its sign, offset or scale, and always stop a real
failure (NaN, +/-Inf, exponential growth).

The corpus of improving curves is drawn by ``hypothesis``: exponential decays, straight
lines, plateaus then drops, step schedules, curves spanning decades (log scale), with
additive noise and isolated spikes, shifted anywhere on the real line (negative, crossing
zero, starting at exactly 0), minimized or maximized (the same curve negated).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lineage.diagnose import default_checks, diagnose_histories, goal_of, online_check

SHAPES = ("exp", "linear", "plateau_then_drop", "steps", "decades")
_SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _unit(shape: str, n: int, rng: np.random.Generator, p: float) -> np.ndarray:
    """A trend falling from 1 at k=0 towards 0 (``p`` in [0, 1) picks its speed / corner)."""
    k = np.arange(n, dtype=np.float64)
    if shape == "exp":
        return np.exp(-k / (n * (0.05 + 0.9 * p)))
    if shape == "linear":
        return 1.0 - k / (n - 1)
    if shape == "plateau_then_drop":
        corner = int(n * (0.2 + 0.6 * p))
        return np.where(k < corner, 1.0, np.exp(-(k - corner) / max(n / 10, 1.0)))
    if shape == "steps":  # a step learning-rate schedule: 1, 0.5, 0.25, ...
        return 0.5 ** np.floor(k / max(n // (2 + int(6 * p)), 1))
    raise AssertionError(shape)


@st.composite
def improving(draw: Any) -> tuple[np.ndarray, str]:
    """An improving curve and its goal."""
    n = draw(st.integers(12, 160))
    shape = draw(st.sampled_from(SHAPES))
    p = draw(st.floats(0.0, 0.99))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    noise = draw(st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.2]))
    if shape == "decades":  # a positive loss falling over 1-8 decades, multiplicative noise
        top = 10.0 ** draw(st.integers(-6, 6))
        decades = draw(st.floats(1.0, 8.0))
        curve = top * 10.0 ** (-decades * np.arange(n) / (n - 1))
        curve = curve * np.exp(noise * rng.standard_normal(n))
        logged = draw(st.booleans())  # logged as log10(loss): crosses zero, goes negative
        curve = np.log10(curve) if logged else curve
    else:
        span = 10.0 ** draw(st.floats(-6, 6))
        anchor = draw(st.sampled_from(["free", "zero_start", "zero_crossing"]))
        if anchor == "zero_start":
            offset = -span  # the first point is exactly 0, the rest negative
        elif anchor == "zero_crossing":
            offset = -span * draw(st.floats(0.05, 0.95))
        else:
            offset = span * draw(st.floats(-1e3, 1e3))
        curve = offset + span * _unit(shape, n, rng, p)
        curve[1:] += noise * span * rng.standard_normal(n - 1)
        if anchor == "zero_start":
            curve[0] = 0.0
        if draw(st.booleans()) and noise and n >= 30:  # isolated spikes: a bad batch
            for i in rng.choice(np.arange(5, n - 1, 5), size=n // 30, replace=False):
                curve[i] += span * draw(st.floats(1.0, 20.0))
    goal = draw(st.sampled_from(["minimize", "maximize"]))
    return (curve if goal == "minimize" else -curve), goal


def _first_stop(values: np.ndarray, goal: str | None, metric: str = "loss") -> int | None:
    """The number of reports after which online_check first stopped the trial, or None."""
    steps = list(range(len(values)))
    for n in range(1, len(values) + 1):
        if online_check(metric, steps[:n], list(values[:n]), goal=goal) is not None:
            return n
    return None


@_SETTINGS
@given(improving())
def test_an_improving_curve_is_never_stopped(case: tuple[np.ndarray, str]) -> None:
    values, goal = case
    assert _first_stop(values, goal) is None


@_SETTINGS
@given(improving())
def test_an_improving_loss_gives_no_runaway_or_divergence_when_finished(
    case: tuple[np.ndarray, str],
) -> None:
    values, goal = case
    if goal == "maximize":
        return  # the finished-run checks read losses, which are minimized
    checks = default_checks(["loss_runaway", "divergence"])
    assert diagnose_histories({"loss": list(enumerate(values))}, checks=checks) == []


@settings(max_examples=60, deadline=None, derandomize=True)
@given(improving(), st.sampled_from(["nan", "inf", "-inf"]))
def test_a_non_finite_report_stops_at_once(case: tuple[np.ndarray, str], bad: str) -> None:
    values, goal = case
    spoiled = np.append(values, float(bad))
    f = online_check("loss", list(range(len(spoiled))), list(spoiled), goal=goal)
    assert f is not None and f.check == "loss_runaway"
    assert f.evidence["step"] == len(values) and f.evidence["value"] == bad


@settings(max_examples=60, deadline=None, derandomize=True)
@given(improving(), st.floats(1.2, 3.0))
def test_exponential_growth_is_stopped_while_still_finite(
    case: tuple[np.ndarray, str], rate: float
) -> None:
    values, goal = case
    worse = 1.0 if goal == "minimize" else -1.0
    scale = float(np.ptp(values)) + float(np.max(np.abs(values))) + 1e-3
    growth = values[-1] + worse * scale * (rate ** np.arange(1, 200) - 1.0)
    growth = growth[np.isfinite(growth) & (np.abs(growth) < 1e300)]
    curve = np.concatenate([values, growth])
    stop = _first_stop(curve, goal)
    assert stop is not None and stop > len(values)
    # stopped once the level (a rolling median over a window: it lags the last point by about
    # a quarter window) is ~100 scales worse
    window = max(3, math.ceil(0.1 * len(curve)))
    assert stop - len(values) <= math.log(2000) / math.log(rate) + window / 2 + 2


def test_the_curve_that_starts_near_zero_and_goes_negative_is_not_runaway() -> None:
    # an objective that starts just above zero and improves below it
    values = [0.0165, 0.018, 0.015] + [-0.1 * k for k in range(1, 30)]
    assert _first_stop(np.asarray(values), None) is None
    assert _first_stop(np.asarray(values), "minimize") is None


def test_a_reward_logged_as_loss_is_judged_upward() -> None:
    reward = np.linspace(0.0, 300.0, 60)
    assert _first_stop(reward, "maximize") is None
    # the same values minimized only ever got worse: 300 against a best of 0
    f = online_check("loss", list(range(60)), list(reward), goal="minimize")
    assert f is not None and f.evidence["goal"] == "minimize"


@pytest.mark.parametrize("metric", ["kl_loss", "score", "grad_norm", "reward", "throughput"])
def test_a_metric_whose_goal_is_unknown_is_never_stopped(metric: str) -> None:
    assert goal_of(metric) is None
    for values in ([1.0, 2.0, math.nan], [0.01 * 1.5**k for k in range(60)], [math.inf]):
        assert online_check(metric, list(range(len(values))), values) is None
    # told the goal, the same metric is judged
    assert online_check(metric, [0, 1, 2], [1.0, 2.0, math.nan], goal="maximize") is not None


@pytest.mark.parametrize(
    ("metric", "goal"),
    [
        ("loss", "minimize"),
        ("val/loss_epoch", "minimize"),
        ("nll", "minimize"),
        ("test_mse", "minimize"),
        ("val_accuracy", "maximize"),
        ("train_acc", "maximize"),
    ],
)
def test_goal_read_from_the_name(metric: str, goal: str) -> None:
    assert goal_of(metric) == goal


def test_a_goal_that_is_not_a_direction_is_a_usage_error() -> None:
    from lineage import UsageError

    with pytest.raises(UsageError, match="goal must be one of minimize, maximize, got 'up'"):
        online_check("loss", [0], [1.0], goal="up")


def test_a_reward_that_collapses_after_its_best_is_divergence() -> None:
    reward = np.concatenate([np.linspace(0.0, 100.0, 40), np.linspace(100.0, -150.0, 30)])
    f = online_check("reward", list(range(70)), list(reward), goal="maximize")
    assert f is not None and f.check == "divergence" and f.evidence["goal"] == "maximize"
    assert f.evidence["best"] > 90 and "fell from its best" in f.summary
