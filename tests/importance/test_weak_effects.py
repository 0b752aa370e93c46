"""Weak smooth effects ranked right, against published total indices.

The default (:class:`AutoImportance`) fits a Gaussian process where it predicts held-out runs
better than a forest; on smooth responses whose effects fall off geometrically it ranks the
weakest (about 1% of the variance) above every no-effect parameter, where the forest alone
swapped the two weakest, and the product kernel alone scored the weakest 0, level with the
no-effect parameters (``geometric2`` below).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from importance_cases import make_runs

from lineage import UsageError
from lineage.importance import (
    AutoImportance,
    GaussianProcessImportance,
    encode,
    get_param_importances,
    infer_spec,
)
from lineage.importance._additive_gp import LENGTH_SCALE_BOUNDS, NUS, AdditiveGaussianProcess
from lineage.importance._gaussian_process import with_gaps_filled
from lineage.importance._matern import Buffers, matern

LEVITAN_B = (1.5, 1.0, 0.7, 0.45, 0.3, 0.2)


def _levitan(p: dict[str, Any], rng: np.random.Generator) -> float:
    return math.exp(sum(b * p[f"x{i}"] for i, b in enumerate(LEVITAN_B)))


def _levitan_total() -> list[float]:
    """Sobol' and Levitan (1999): closed-form total indices of exp(sum b_i x_i) on [0, 1]^d."""
    m = [(math.exp(b) - 1.0) / b for b in LEVITAN_B]
    s = [(math.exp(2 * b) - 1.0) / (2 * b) for b in LEVITAN_B]
    whole = math.prod(s) - math.prod(v * v for v in m)
    return [(1.0 - mi * mi / si) * math.prod(s) / whole for mi, si in zip(m, s, strict=True)]


def test_published_total_indices_fall_off_geometrically() -> None:
    truth = _levitan_total()
    assert [round(v, 3) for v in truth] == [0.571, 0.283, 0.145, 0.062, 0.028, 0.012]


@pytest.fixture(scope="module")
def levitan_result() -> Any:
    space = {f"x{i}": ("float", 0.0, 1.0) for i in range(6)} | {
        f"d{i}": ("float", 0.0, 1.0) for i in range(3)
    }
    runs = make_runs(space, _levitan, 200, 0)
    ev = AutoImportance()
    return get_param_importances(runs, target="y", goal="maximize", evaluator=ev), ev


def test_weak_effects_in_true_order_and_above_every_dummy(levitan_result: Any) -> None:
    """Six effects from 57% down to 1.2% of the variance (all interacting), three dummies."""
    result, ev = levitan_result
    imp = result.importances()
    relevant = [imp[f"x{i}"] for i in range(6)]
    assert relevant == sorted(relevant, reverse=True), imp
    assert min(relevant) > max(imp[f"d{i}"] for i in range(3)), imp
    # held-out R² 0.9997: no forest is grown to compare (none reached 0.97 on any case)
    assert ev.model_ == "gaussian process" and ev.r2_ == {"gaussian process": ev.cv_r2_}
    assert ev.cv_r2_ > 0.99


def test_a_noisy_target_still_compares_with_the_forest() -> None:
    """Below a held-out R² of 0.98 the forest is grown and the better of the two kept."""
    runs = make_runs(
        {"a": ("float", 0, 1), "b": ("float", 0, 1)},
        lambda p, r: p["a"] + 0.5 * float(r.normal()),
        200,
        3,
    )
    ev = AutoImportance()
    get_param_importances(runs, target="y", evaluator=ev)
    assert set(ev.r2_) == {"gaussian process", "random forest"}, ev.r2_
    assert ev.r2_["gaussian process"] < 0.98
    assert ev.cv_r2_ == max(ev.r2_.values())


def test_interval_and_verdict_stay_one_method(levitan_result: Any) -> None:
    result, _ = levitan_result
    sig = {p.name: p.significant for p in result.params}
    for p in result.params:
        assert p.significant == (p.ci[0] > 0.0) and p.ci[0] <= p.importance <= p.ci[1]
    assert all(sig[f"x{i}"] for i in range(4))
    assert not any(sig[f"d{i}"] for i in range(3))
    assert "AutoImportance" in result.evaluator


def test_conditional_parameters_go_to_the_forest() -> None:
    space = {
        "opt": ("cat", ("sgd", "momentum")),
        "momentum": ("float", 0.5, 0.99),
        "a": ("float", 0, 1),
    }

    def drop(p: dict[str, Any]) -> list[str]:
        return [] if p["opt"] == "momentum" else ["momentum"]

    runs = make_runs(space, lambda p, r: p["a"] + (p["opt"] == "sgd"), 40, 1, drop=drop)
    ev = AutoImportance()
    result = get_param_importances(runs, target="y", evaluator=ev)
    assert ev.model_ == "random forest" and "gaussian process" not in ev.r2_
    assert {p.name for p in result.params} == {"opt", "momentum", "a"}


def test_small_campaigns_keep_the_forest() -> None:
    """Below 200 runs the Gaussian process's test of a no-effect parameter is over its level
    (3-5% against 2.5% at 60-100 runs, the forest's at most 2%): the forest stays."""
    runs = make_runs({"a": ("float", 0, 1), "b": ("float", 0, 1)}, lambda p, r: p["a"], 30, 2)
    ev = AutoImportance()
    get_param_importances(runs, target="y", evaluator=ev)
    assert ev.model_ == "random forest" and ev.r2_ == {"random forest": ev.cv_r2_}


def test_gaussian_process_fills_a_conditional_parameters_gaps_with_its_mean() -> None:
    values = ["0.5", None, "0.7", "0.9"] * 3
    spec = infer_spec("m", values)
    data = encode([spec], {"m": values})
    filled = with_gaps_filled(data)
    assert np.allclose(filled.X[1::4, 0], 0.7) and np.isnan(data.X[1::4, 0]).all()
    assert filled.missing[0].tolist() == data.missing[0].tolist()
    ev = GaussianProcessImportance().fit(data, np.arange(12.0))
    assert np.isfinite(ev.scores_).all() and np.isfinite(ev.intervals_).all()


def test_invalid_kernel_setting_is_named() -> None:
    runs = make_runs({"a": ("float", 0, 1)}, lambda p, r: p["a"], 12, 0)
    with pytest.raises(UsageError, match=r"'nu' parameter .* must be 0.5, 1.5, 2.5 or inf, got 3"):
        get_param_importances(runs, target="y", evaluator=GaussianProcessImportance(nu=3))
    with pytest.raises(UsageError, match=r"'kernel' parameter .* 'additive' or 'product', got 'x'"):
        get_param_importances(runs, target="y", evaluator=GaussianProcessImportance(kernel="x"))
    product = get_param_importances(
        runs, target="y", evaluator=GaussianProcessImportance(kernel="product")
    )
    assert product.params[0].name == "a" and "kernel='product'" in product.evaluator


def _bench_importance() -> Any:
    """``benchmarks/bench_importance.py``, whose ``geometric2`` case these tests use (its
    sibling modules on the path, as when it runs as a script)."""
    import importlib.util
    import sys
    from pathlib import Path

    if "bench_importance" not in sys.modules:
        folder = Path(__file__).resolve().parents[2] / "benchmarks"
        sys.path.insert(0, str(folder))
        spec = importlib.util.spec_from_file_location(
            "bench_importance", folder / "bench_importance.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_importance"] = module
        spec.loader.exec_module(module)
    return sys.modules["bench_importance"]


def _geometric2(p: dict[str, Any], rng: np.random.Generator) -> float:
    """Seven components with mean 0 and variance 1 exactly (Legendre polynomials, a cosine, a
    sine), weights falling off by 0.55, three pairwise products (``bench_importance.py``)."""
    return float(_bench_importance()._geometric2(p, rng))


def _geometric2_total() -> list[float]:
    return list(_bench_importance()._geometric2_total())


def test_geometric2_total_indices() -> None:
    assert [round(v, 4) for v in _geometric2_total()] == [
        0.4837, 0.296, 0.1428, 0.086, 0.0423, 0.0252, 0.0115
    ]  # fmt: skip


def test_a_one_percent_quadratic_beside_wiggly_effects_is_above_every_dummy() -> None:
    """x6 (1.15% of the variance, a symmetric quadratic) next to a sine, a cubic and three
    products: the product kernel alone explained 93-96% of held-out runs and scored x6 0,
    level with the three no-effect parameters (seed 1); the additive kernel models it."""
    space = {f"x{i}": ("float", 0.0, 1.0) for i in range(7)} | {
        f"d{i}": ("float", 0.0, 1.0) for i in (1, 2, 3)
    }
    runs = make_runs(space, _geometric2, 200, 1)
    ev = AutoImportance()
    result = get_param_importances(runs, target="y", goal="minimize", evaluator=ev)
    imp = result.importances()
    relevant = [imp[f"x{i}"] for i in range(7)]
    assert relevant == sorted(relevant, reverse=True), imp
    assert min(relevant) > max(imp[f"d{i}"] for i in (1, 2, 3)), imp
    assert ev.model_ == "gaussian process" and ev.cv_r2_ > 0.99
    # within a fifth of its true share of the total
    for i, truth in enumerate(_geometric2_total()):
        assert abs(imp[f"x{i}"] - truth) < 0.2 * truth + 0.01, (i, imp)


@pytest.mark.parametrize("orders", [0, 1, 2, 3])
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, math.inf])
def test_likelihood_gradient_matches_finite_differences(orders: int, nu: float) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (30, 5))
    X[:, 3] = rng.integers(0, 2, 30)
    X[:, 4] = 1.0 - X[:, 3]  # a two-level categorical: one group of two columns
    y = np.sin(3.0 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
    groups = [np.array([0]), np.array([1]), np.array([2]), np.array([3, 4])]
    model = AdditiveGaussianProcess(groups, orders=orders, nu=nu)
    model._prepare(X, y)
    theta = model._start(np.random.default_rng(1), 1)
    analytic = model._neg_log_likelihood(theta)[1]
    step = 1e-5
    numeric = np.array(
        [
            (model._neg_log_likelihood(theta + h)[0] - model._neg_log_likelihood(theta - h)[0])
            / (2 * step)
            for h in np.eye(len(theta)) * step
        ]
    )
    free = [i for i, (low, high) in enumerate(model._bounds()) if high > low]
    np.testing.assert_allclose(analytic[free], numeric[free], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("nu", NUS)
def test_training_kernel_by_lookup_is_the_matern_kernel(nu: float) -> None:
    """The fit's kernel (two exponentials per run and column, looked up per pair) against the
    Matern kernel of the pairs' distances, at length scales from the lower bound up."""
    rng = np.random.default_rng(4)
    X = rng.uniform(0.0, 1.0, (40, 3))
    X[:, 2] = 1.0  # constant
    model = AdditiveGaussianProcess([np.array([i]) for i in range(3)], nu=nu)
    model._prepare(X, X[:, 0])
    length = np.array([LENGTH_SCALE_BOUNDS[0], 0.3, 50.0])
    model._training_columns(length, model.buf_)
    pairs = model.dist_.shape[1]
    direct = Buffers(3, pairs, 3, 2)
    matern(nu, model.dist_, length, direct, direct.k, direct.dk)
    np.testing.assert_allclose(model.buf_.k, direct.k, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(model.buf_.dk, direct.dk, rtol=1e-12)


def test_a_no_effect_column_goes_flat() -> None:
    """At the upper bound of both its length scales a column drops out of every term."""
    rng = np.random.default_rng(2)
    X = rng.uniform(0.0, 1.0, (120, 4))
    y = np.sin(2 * math.pi * X[:, 0]) + (X[:, 1] - 0.5) ** 2 + 0.3 * X[:, 0] * X[:, 2]
    model = AdditiveGaussianProcess([np.array([i]) for i in range(4)]).fit(X, y)
    length, product_length, *_ = model._unpack(model.theta_)
    assert length[3] > 0.5 * LENGTH_SCALE_BOUNDS[1] and product_length[3] > 10.0, model.theta_
    moved = X.copy()
    moved[:, 3] = rng.uniform(0.0, 1.0, 120)
    assert np.max(np.abs(model.predict(moved) - model.predict(X))) < 1e-3 * np.std(y)
