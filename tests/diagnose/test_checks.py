"""Every check on synthetic curves: a positive case and healthy cases for each."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from diag_curves import HEALTHY_KINDS, epoch_curve, healthy_run, noisy_decay, pts

from lineage.diagnose import (
    CHECKS,
    DEFAULT_THRESHOLDS,
    Finding,
    default_checks,
    diagnose_histories,
)


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def ids(findings: list[Finding]) -> list[str]:
    return [f.check for f in findings]


def only(findings: list[Finding], check: str) -> Finding:
    matching = [f for f in findings if f.check == check]
    assert len(matching) == 1, ids(findings)
    return matching[0]


@pytest.mark.parametrize("kind", HEALTHY_KINDS)
@pytest.mark.parametrize("replicate", range(5))
def test_healthy_runs_yield_no_finding(kind: str, replicate: int, seed: int) -> None:
    rng = np.random.default_rng(seed + replicate)
    hist, params, tags = healthy_run(rng, kind)
    assert diagnose_histories(hist, params, tags) == []


def test_a_run_without_metrics_or_params_yields_nothing() -> None:
    assert diagnose_histories({}) == []
    assert diagnose_histories({"loss": [(0, 1.0)]}) == []


# -- loss_runaway ------------------------------------------------------------------------


def test_nan_loss_is_runaway_with_first_bad_step(rng: np.random.Generator) -> None:
    loss = list(noisy_decay(rng, n=60))
    loss[40:] = [math.nan] * 20
    f = only(diagnose_histories({"loss": pts(loss)}), "loss_runaway")
    assert f.severity == "error"
    assert f.evidence["step"] == 40 and f.evidence["value"] == "nan"
    assert f.evidence["window"] == [39, 40] and f.evidence["metric"] == "loss"
    assert f.causes and f.next_steps and "learning rate" in " ".join(f.next_steps)


def test_inf_and_huge_component_losses_are_runaway(rng: np.random.Generator) -> None:
    loss = list(noisy_decay(rng, n=60))
    loss[30] = -math.inf
    assert (
        only(diagnose_histories({"train_loss": pts(loss)}), "loss_runaway").evidence["value"]
        == "-inf"
    )
    grow = [2.3 * 1.3**k for k in range(40)]  # finite, but 2.3 -> ~80000
    f = only(diagnose_histories({"kl_loss": pts(grow)}), "loss_runaway")
    assert f.evidence["factor"] >= 100 and f.evidence["metric"] == "kl_loss"


def test_runaway_supersedes_divergence_and_slow_convergence(rng: np.random.Generator) -> None:
    loss = [2.3] * 30 + [2.3 * 2**k for k in range(1, 20)] + [math.nan] * 5
    assert ids(diagnose_histories({"loss": pts(loss)})) == ["loss_runaway"]


def test_loss_scale_metric_is_not_a_loss(rng: np.random.Generator) -> None:
    scale = [2.0**k for k in range(40)]  # dynamic loss scale growing is normal
    assert diagnose_histories({"loss_scale": pts(scale)}) == []


# -- divergence -------------------------------------------------------------------------


def test_loss_rising_back_above_its_best_is_divergence(rng: np.random.Generator) -> None:
    down = noisy_decay(rng, n=200, tau=30, floor=0.3, noise=0.05)
    up = np.linspace(0.3, 1.9, 100) * np.exp(0.05 * rng.standard_normal(100))
    f = only(diagnose_histories({"loss": pts(np.concatenate([down, up]))}), "divergence")
    assert f.severity == "error"
    assert f.evidence["best"] < 0.4 and f.evidence["value"] > 1.4
    assert 100 <= f.evidence["best_step"] <= 220 and f.evidence["window"][1] == 299


def test_loss_that_only_grows_moderately_is_divergence(rng: np.random.Generator) -> None:
    loss = np.linspace(2.3, 5.5, 50) * np.exp(0.03 * rng.standard_normal(50))
    assert "divergence" in ids(diagnose_histories({"loss": pts(loss)}))


def test_small_late_rise_near_zero_is_not_divergence(rng: np.random.Generator) -> None:
    down = noisy_decay(rng, n=300, floor=0.01, noise=0.05)
    up = np.linspace(0.01, 0.03, 50)
    assert diagnose_histories({"loss": pts(np.concatenate([down, up]))}) == []


# -- slow_convergence -------------------------------------------------------------------


def test_flat_loss_is_slow_convergence(rng: np.random.Generator) -> None:
    loss = 2.302 - 0.0001 * np.arange(300) / 300 + 0.01 * rng.standard_normal(300)
    f = only(diagnose_histories({"loss": pts(loss)}), "slow_convergence")
    assert f.severity == "warning" and f.evidence["relative_improvement"] < 0.05
    assert f.evidence["window"] == [0, 299]


def test_loss_learning_within_first_epoch_is_not_slow(rng: np.random.Generator) -> None:
    # epoch-averaged loss: epoch 1 averages the steep start, then a plateau
    loss = np.array([0.9] + [0.3] * 11) * (1 + 0.01 * rng.standard_normal(12))
    assert diagnose_histories({"loss": pts(loss)}) == []


# -- oscillation ------------------------------------------------------------------------


def test_loss_bouncing_without_progress_is_oscillation(rng: np.random.Generator) -> None:
    down = noisy_decay(rng, n=50, tau=10, floor=1.2, noise=0.05)
    bounce = 1.3 + 0.7 * np.sign(np.sin(np.arange(250) * 1.7)) + 0.1 * rng.standard_normal(250)
    f = only(diagnose_histories({"loss": pts(np.concatenate([down, bounce]))}), "oscillation")
    assert f.evidence["direction_changes"] >= 0.4 and f.evidence["iqr"] > 0.5


def test_flat_noisy_loss_is_not_oscillation(rng: np.random.Generator) -> None:
    loss = 2.3 + 0.02 * rng.standard_normal(300)
    assert ids(diagnose_histories({"loss": pts(loss)})) == ["slow_convergence"]


# -- zero_train_loss --------------------------------------------------------------------


def test_training_loss_reaching_zero(rng: np.random.Generator) -> None:
    loss = np.concatenate([noisy_decay(rng, n=100, tau=10, floor=0.0), np.zeros(50)])
    f = only(diagnose_histories({"train_loss": pts(loss)}), "zero_train_loss")
    assert f.evidence["value"] == 0 and 100 <= f.evidence["step"] <= 150


def test_tiny_but_nonzero_loss_is_not_zero(rng: np.random.Generator) -> None:
    loss = noisy_decay(rng, n=300, floor=1e-4, tau=20)
    assert diagnose_histories({"loss": pts(loss)}) == []


# -- overfitting ------------------------------------------------------------------------


def _overfit_run(rng: np.random.Generator) -> dict[str, list[tuple[int, float]]]:
    loss = noisy_decay(rng, n=400, tau=40, floor=0.001, noise=0.1)
    ep = list(range(19, 400, 20))
    val = np.concatenate([epoch_curve(1.2, 0.5, 6, rng), np.linspace(0.55, 1.1, 14)])
    return {"loss": pts(loss), "val_loss": pts(val, ep)}


def test_val_loss_rising_while_train_falls_is_overfitting(rng: np.random.Generator) -> None:
    f = only(diagnose_histories(_overfit_run(rng)), "overfitting")
    assert f.evidence["metric"] == "val_loss" and f.evidence["best"] < 0.6
    assert "early stop" in " ".join(f.next_steps).lower()


def test_accuracy_gap_is_overfitting(rng: np.random.Generator) -> None:
    hist, params, tags = healthy_run(rng, "noisy_decreasing")
    n = len(hist["val_accuracy"])
    hist["val_accuracy"] = [(s, 0.72 + 0.005 * i) for i, (s, _) in enumerate(hist["val_accuracy"])]
    hist["train_accuracy"] = [(s, 99.0) for s, _ in hist["train_accuracy"]]  # in percent
    f = only(diagnose_histories(hist, params, tags), "overfitting")
    assert f.evidence["train_value"] == pytest.approx(0.99)
    assert f.evidence["value"] == pytest.approx(0.72 + 0.005 * (n - 2), abs=0.01)


def test_normal_generalization_gap_is_not_overfitting(rng: np.random.Generator) -> None:
    loss = noisy_decay(rng, n=400, floor=0.05)
    ep = list(range(19, 400, 20))
    val = epoch_curve(1.0, 0.3, 20, rng) + np.linspace(0, 0.03, 20)  # slight late rise
    hist = {"loss": pts(loss), "val_loss": pts(val, ep)}
    hist["train_acc"] = pts(np.linspace(0.5, 0.99, 20), ep)
    hist["val_acc"] = pts(np.linspace(0.5, 0.91, 20), ep)
    assert diagnose_histories(hist) == []


# -- distribution_shift -----------------------------------------------------------------


def test_test_accuracy_far_below_validation(rng: np.random.Generator) -> None:
    hist, params, tags = healthy_run(rng, "noisy_decreasing")
    step = hist["val_accuracy"][-1][0]
    hist["test_accuracy"] = [(step, 0.61)]
    f = only(diagnose_histories(hist, params, tags), "distribution_shift")
    assert f.evidence["value"] == pytest.approx(0.61) and f.evidence["validation_value"] > 0.85
    assert "distribution" in " ".join(f.causes)


def test_test_loss_far_above_validation_without_accuracies() -> None:
    hist = {"val_loss": [(1, 0.5), (2, 0.4), (3, 0.35)], "test_loss": [(3, 0.9)]}
    assert ids(diagnose_histories(hist)) == ["distribution_shift"]
    hist["test_loss"] = [(3, 0.4)]
    assert diagnose_histories(hist) == []


# -- hyperparameter_range ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "param", "severity"),
    [
        ({"lr": "10"}, "lr", "warning"),
        ({"optimizer.learning_rate": "1e-7"}, "optimizer.learning_rate", "warning"),
        ({"optimizer": "AdamW", "lr": "0.5"}, "lr", "warning"),
        ({"learning_rate": "0"}, "learning_rate", "error"),
        ({"loss_scale": "0.5"}, "loss_scale", "warning"),
        (
            {"loss_scale_manager.init_loss_scale": "1e9"},
            "loss_scale_manager.init_loss_scale",
            "warning",
        ),
        ({"init.sigma": "5"}, "init.sigma", "warning"),
        ({"init_std": "1e-6"}, "init_std", "warning"),
        ({"weight_init": "zeros"}, "weight_init", "warning"),
        ({"batch_size": "0"}, "batch_size", "error"),
        ({"train.batch_size": "12.5"}, "train.batch_size", "error"),
        ({"momentum": "1.2"}, "momentum", "error"),
        ({"weight_decay": "3"}, "weight_decay", "warning"),
        ({"model.dropout": "1.0"}, "model.dropout", "error"),
    ],
)
def test_unreasonable_hyperparameters(params: dict[str, str], param: str, severity: str) -> None:
    f = only(diagnose_histories({}, params), "hyperparameter_range")
    assert f.evidence["param"] == param and f.severity == severity
    assert f.causes and f.next_steps


def test_reasonable_and_unrelated_params_are_quiet() -> None:
    params = {
        "lr": "0.05",
        "optimizer": "momentum",
        "momentum": "0.9",
        "batch_size": "256",
        "optimizer.lr": "1.0",
        "head_lr": "0.01",
        "min_lr": "0",
        "warmup_init_lr": "1e-9",
        "lr_decay": "0.1",
        "lr_scheduler": "step",
        "end_learning_rate": "0",
        "bias_init": "zeros",
        "init": "he_normal",
        "sigma": "0.01",
        "noise_sigma": "50",
        "normalize.std": "58.4",
        "loss_scale": "65536",
        "dropout": "0.5",
        "wd": "0.05",
        "epochs": "100",
        "seed": "0",
        "data.path": "/x",
        "hidden": "64",
    }
    assert diagnose_histories({}, params) == []


def test_adaptive_optimizer_lowers_the_learning_rate_limit() -> None:
    assert diagnose_histories({}, {"optimizer": "sgd", "lr": "0.5"}) == []
    assert ids(diagnose_histories({}, {"optimizer.name": "adam", "lr": "0.5"})) == [
        "hyperparameter_range"
    ]


# -- weights_unchanged / frozen_weights -------------------------------------------------


def test_zero_weight_delta_is_weights_unchanged(rng: np.random.Generator) -> None:
    hist = {"weight_delta": pts(np.zeros(20)), "weight_norm": pts(np.full(20, 12.5))}
    f = only(diagnose_histories(hist), "weights_unchanged")
    assert f.severity == "error" and f.evidence["metric"] == "weight_delta"
    assert f.evidence["weight_norm"] == 12.5


def test_constant_weight_norm_is_weights_unchanged() -> None:
    f = only(diagnose_histories({"weight_norm": pts([7.25] * 8)}), "weights_unchanged")
    assert f.evidence["spread"] == 0
    assert diagnose_histories({"weight_norm": pts([7.25, 7.26, 7.3, 7.31])}) == []


def test_every_weight_frozen_is_an_error() -> None:
    tags = {"lineage.frozen_params": '["fc1.weight", "fc1.bias"]', "lineage.trainable_params": "0"}
    f = only(diagnose_histories({}, {}, tags), "frozen_weights")
    assert f.severity == "error" and f.evidence["frozen"] == ["fc1.weight", "fc1.bias"]


def test_frozen_weights_with_a_stalled_loss(rng: np.random.Generator) -> None:
    loss = 2.3 + 0.01 * rng.standard_normal(100)
    params = {"frozen_params": "backbone.conv1.weight,backbone.conv2.weight"}
    found = diagnose_histories({"loss": pts(loss)}, params)
    f = only(found, "frozen_weights")
    assert f.evidence["frozen_count"] == 2 and "slow_convergence" in ids(found)


def test_frozen_weights_with_a_learning_loss_is_fine(rng: np.random.Generator) -> None:
    tags = {"lineage.frozen_params": '["backbone.conv1.weight"]'}
    assert diagnose_histories({"loss": pts(noisy_decay(rng))}, {}, tags) == []


# -- gradients --------------------------------------------------------------------------


def test_vanishing_gradient_norm(rng: np.random.Generator) -> None:
    grad = 1e-2 * np.exp(-np.arange(100) / 5)
    loss = 2.3 - 0.2 * (1 - np.exp(-np.arange(100) / 5))
    f = only(diagnose_histories({"grad_norm": pts(grad), "loss": pts(loss)}), "gradient_vanishing")
    assert f.evidence["value"] < 1e-8


def test_shrinking_gradients_of_a_converged_model_are_fine(rng: np.random.Generator) -> None:
    grad = 3.0 * np.exp(-np.arange(300) / 20) + 1e-6
    loss = noisy_decay(rng, n=300, floor=0.001, tau=20)
    assert diagnose_histories({"grad_norm": pts(grad), "loss": pts(loss)}) == []


def test_exploding_gradient_norm(rng: np.random.Generator) -> None:
    grad = 1.0 * 1.2 ** np.arange(60)
    f = only(diagnose_histories({"global_grad_norm": pts(grad)}), "gradient_exploding")
    assert f.severity == "error" and f.evidence["value"] >= 1e3
    nan = [1.0] * 10 + [math.inf]
    assert (
        only(diagnose_histories({"grad_norm": pts(nan)}), "gradient_exploding").evidence["step"]
        == 10
    )


# -- the registry and the thresholds ----------------------------------------------------


def test_registry_has_every_documented_check() -> None:
    assert list(CHECKS) == [
        "loss_runaway",
        "divergence",
        "slow_convergence",
        "oscillation",
        "zero_train_loss",
        "undertrained",
        "overfitting",
        "distribution_shift",
        "hyperparameter_range",
        "too_few_epochs",
        "near_full_batch",
        "weights_unchanged",
        "frozen_weights",
        "gradient_vanishing",
        "gradient_exploding",
        "constant_column",
        "data_out_of_range",
        "labels_out_of_range",
    ]


def test_thresholds_move_a_check(rng: np.random.Generator) -> None:
    params = {"lr": "2.0"}
    assert ids(diagnose_histories({}, params)) == ["hyperparameter_range"]
    loose = dataclasses.replace(DEFAULT_THRESHOLDS, lr_max=5.0)
    assert diagnose_histories({}, params, thresholds=loose) == []
    assert diagnose_histories({}, params, checks=default_checks(["divergence"])) == []


def test_unknown_check_id_is_a_usage_error() -> None:
    from lineage import UsageError

    with pytest.raises(UsageError, match=r"check must be one of .* got 'nope'"):
        default_checks(["nope"])


def test_finding_serializes_to_the_documented_shape(rng: np.random.Generator) -> None:
    loss = [2.0] * 10 + [math.nan]
    d = diagnose_histories({"loss": pts(loss)})[0].to_dict()
    assert {"check", "severity", "evidence", "causes", "next_steps"} <= set(d)
    assert {"step", "value", "window"} <= set(d["evidence"])


# -- what real recordings look like -----------------------------------------------------


def test_mlflow_clamped_infinity_reads_as_inf() -> None:
    # MLflow stores +/-Inf as +/-1.7976931348623157e308
    loss = [2.3, 3.2, 1.7976931348623157e308, 7.0, 8.0]
    f = only(diagnose_histories({"loss": pts(loss)}), "loss_runaway")
    assert f.evidence["value"] == "inf" and f.evidence["step"] == 2


def test_runaway_of_several_losses_is_one_finding() -> None:
    hist = {"loss": pts([2.3, math.nan]), "train_loss": pts([math.inf]), "aux_loss": pts([1.0])}
    f = only(diagnose_histories(hist), "loss_runaway")
    assert f.evidence["metric"] == "loss" and f.evidence["also"] == ["train_loss"]


def test_learning_rate_recorded_twice_is_one_finding() -> None:
    f = only(diagnose_histories({}, {"lr": "10", "optimizer.lr": "10.0"}), "hyperparameter_range")
    assert f.evidence["param"] == "lr" and f.evidence["also"] == ["optimizer.lr"]


def test_frozen_counts_as_lineage_mindspore_records_them(rng: np.random.Generator) -> None:
    stalled = {"loss": pts(2.3 + 0.01 * rng.standard_normal(100))}
    none_frozen = {"frozen_params": "0", "trainable_params": "4810"}
    assert ids(diagnose_histories(stalled, none_frozen, {"frozen_params": "0"})) == [
        "slow_convergence"
    ]
    all_frozen = {"frozen_params": "4810", "trainable_params": "0"}
    f = only(diagnose_histories({}, all_frozen, {"frozen_params": "4"}), "frozen_weights")
    assert f.severity == "error" and f.evidence["value"] == 4


def test_overfitting_with_per_step_loss_and_per_epoch_validation(
    rng: np.random.Generator,
) -> None:
    # lineage.mindspore: loss at global steps 1..160, train_loss and val_loss at epochs 1..80
    loss = noisy_decay(rng, n=160, tau=20, floor=0.003, noise=0.2)
    train_epoch = epoch_curve(2.0, 0.003, 80, rng)
    val = np.concatenate([epoch_curve(2.0, 0.75, 30, rng), 0.76 + 0.01 * rng.random(50)])
    hist = {
        "loss": pts(loss, range(1, 161)),
        "train_loss": pts(train_epoch, range(1, 81)),
        "val_loss": pts(val, range(1, 81)),
    }
    f = only(diagnose_histories(hist), "overfitting")
    assert f.evidence["metric"] == "val_loss" and "train_loss" in f.summary
