"""The default evaluator against functions whose true importance is known."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from importance_cases import make_runs

from lineage.importance import (
    CorrelationImportance,
    ImportanceResult,
    NotFittedError,
    RandomForestImportance,
    get_param_importances,
)

U = ("float", 0.0, 1.0)


def _imp(result: ImportanceResult) -> dict[str, float]:
    return result.importances()


def _sig(result: ImportanceResult) -> dict[str, bool]:
    return {p.name: p.significant for p in result.params}


def _lr_bowl(p: dict[str, Any], rng: np.random.Generator) -> float:
    return (
        (math.log10(p["lr"]) + 3) ** 2
        + {"sgd": 3.0, "momentum": 1.5, "adam": 0.0}[p["optimizer"]]
        + 0.03 * p["epochs"]
    )


LR_BOWL = {
    "lr": ("log", 1e-6, 1.0),
    "optimizer": ("cat", ("sgd", "momentum", "adam")),
    "epochs": ("int", 1, 50),
    "seed": ("int", 0, 10_000),
    "dropout": ("float", 0.0, 0.5),
    "activation": ("cat", ("relu", "gelu", "tanh", "silu")),
}


@pytest.mark.parametrize("seed", [0, 1])
def test_lr_bowl_order_and_dummies_last(seed: int) -> None:
    """A log-scale bowl (81% of variance) > optimizer (17%) > epochs (2%) > three dummies;
    the absolute Pearson correlation (MindInsight) misorders it."""
    runs = make_runs(LR_BOWL, _lr_bowl, 200, seed)
    result = get_param_importances(runs, target="y", goal="minimize")
    imp = _imp(result)
    assert imp["lr"] > imp["optimizer"] > imp["epochs"]
    assert imp["epochs"] > max(imp["seed"], imp["dropout"], imp["activation"])
    assert math.isclose(sum(imp.values()), 1.0)
    sig = _sig(result)
    assert sig["lr"] and sig["optimizer"]
    assert not (sig["seed"] or sig["dropout"] or sig["activation"])
    assert next(p for p in result.params if p.name == "optimizer").best == "adam"
    pearson = _imp(
        get_param_importances(runs, target="y", goal="minimize", evaluator=CorrelationImportance())
    )
    assert not pearson["lr"] > pearson["epochs"] or pearson["optimizer"] == 0.0


def test_interaction_is_found_on_both_parents() -> None:
    """y = x0 * x1: no main effect, all interaction; both must rank above the dummies."""
    space = {f"x{i}": ("float", -1.0, 1.0) for i in range(4)}
    runs = make_runs(space, lambda p, r: p["x0"] * p["x1"], 200, 3)
    result = get_param_importances(runs, target="y", goal="maximize")
    imp, sig = _imp(result), _sig(result)
    assert min(imp["x0"], imp["x1"]) > 5 * max(imp["x2"], imp["x3"])
    assert 0.5 < imp["x0"] / imp["x1"] < 2.0
    assert sig["x0"] and sig["x1"] and not sig["x2"] and not sig["x3"]


def _conditional(p: dict[str, Any], rng: np.random.Generator) -> float:
    y = {"sgd": 2.0, "momentum": 0.0, "adam": 1.0}[p["optimizer"]]
    if p["optimizer"] == "momentum":
        y += 6.0 * (p["momentum"] - 0.5) ** 2
    return y + 1.0 * p["wd"]


def test_conditional_parameters_get_their_own_effect_not_their_parents() -> None:
    """``momentum`` exists only for optimizer=momentum and matters there; ``nesterov_gap``
    exists on the same runs and does nothing: the gap pattern is the parent's effect."""
    space = {
        "optimizer": ("cat", ("sgd", "momentum", "adam")),
        "momentum": ("float", 0.0, 1.0),
        "nesterov_gap": ("float", 0.0, 1.0),
        "wd": U,
        "dummy": U,
    }

    def drop(p: dict[str, Any]) -> list[str]:
        return [] if p["optimizer"] == "momentum" else ["momentum", "nesterov_gap"]

    runs = make_runs(space, _conditional, 200, 5, drop=drop)
    result = get_param_importances(runs, target="y", goal="minimize")
    imp, sig = _imp(result), _sig(result)
    assert imp["optimizer"] == max(imp.values())
    assert sig["momentum"] and sig["wd"]
    assert imp["momentum"] > imp["nesterov_gap"] and imp["momentum"] > imp["dummy"]
    assert not sig["nesterov_gap"] and not sig["dummy"]
    assert next(p for p in result.params if p.name == "momentum").spec.n_missing > 100


def test_noise_leaves_dummies_insignificant() -> None:
    """y = x0 + N(0, 1): x0 explains a quarter of the variance, four dummies nothing."""
    space = {f"x{i}": ("float", 0.0, 2.0) for i in range(5)}
    runs = make_runs(space, lambda p, r: p["x0"] + float(r.normal()), 200, 11)
    result = get_param_importances(runs, target="y", goal="minimize")
    assert result.params[0].name == "x0" and result.params[0].significant
    assert not any(p.significant for p in result.params[1:])
    assert result.params[0].correlation is not None and result.params[0].correlation > 0.3


def test_many_valued_categorical_without_effect_is_not_favoured() -> None:
    """A 30-level label with no effect and an integer seed must rank below a weak real
    effect: the bias of impurity importance that permutation importance does not have."""
    space = {
        "x": U,
        "label": ("cat", tuple(f"l{i}" for i in range(30))),
        "seed": ("int", 0, 100_000),
    }
    runs = make_runs(space, lambda p, r: p["x"] + 0.3 * float(r.normal()), 160, 13)
    result = get_param_importances(runs, target="y", goal="minimize")
    imp, sig = _imp(result), _sig(result)
    assert imp["x"] > 5 * max(imp["label"], imp["seed"])
    assert sig["x"] and not sig["label"] and not sig["seed"]


def test_estimator_contract() -> None:
    ev = RandomForestImportance(n_bootstrap=4, random_state=1)
    assert ev.get_params()["n_bootstrap"] == 4
    assert "n_bootstrap=4" in repr(ev)
    with pytest.raises(NotFittedError, match=r"scores_ is set by fit\(\)"):
        _ = ev.scores_
    runs = make_runs({"a": U, "b": U}, lambda p, r: p["a"], 40, 0)
    result = get_param_importances(runs, target="y", evaluator=ev)
    assert ev.scores_.shape == (2,) and ev.intervals_.shape == (2, 2)
    assert result.params[0].name == "a"


def test_invalid_evaluator_settings_are_named() -> None:
    runs = make_runs({"a": U}, lambda p, r: p["a"], 20, 0)
    with pytest.raises(Exception, match=r"'n_estimators' parameter .* must be an int >= 1, got 0"):
        get_param_importances(runs, target="y", evaluator=RandomForestImportance(n_estimators=0))
