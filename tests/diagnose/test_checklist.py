"""The accuracy-tuning guide's hyperparameter checklist: ``undertrained``, ``too_few_epochs``,
``near_full_batch``. A firing case and healthy cases (curves and configurations) for each."""

from __future__ import annotations

import math

import numpy as np
import pytest
from diag_curves import HEALTHY_KINDS, healthy_run, noisy_decay, pts

from lineage.diagnose import DEFAULT_THRESHOLDS, Finding, Series, diagnose_histories
from lineage.diagnose._progress import measure


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def ids(findings: list[Finding]) -> list[str]:
    return [f.check for f in findings]


def only(findings: list[Finding], check: str) -> Finding:
    matching = [f for f in findings if f.check == check]
    assert len(matching) == 1, ids(findings)
    return matching[0]


def approach(n: int, time_constants: float, start: float, end: float) -> np.ndarray:
    """A curve going from ``start`` towards ``end`` exponentially, ``time_constants`` of the
    approach elapsed at its last point (1: 37 % of the way still ahead; 4: 2 %)."""
    k = np.arange(n)
    return end + (start - end) * np.exp(-k * time_constants / (n - 1))


def epoch_run(
    rng: np.random.Generator, epochs: int, time_constants: float, noise: float = 0.01
) -> dict[str, list[tuple[int, float]]]:
    """Per-step loss (50 steps per epoch, 5 % mini-batch noise) and per-epoch validation loss
    and accuracy, as ``lineage.mindspore`` records them, all ``time_constants`` into their
    approach."""
    steps = 50 * epochs
    loss = approach(steps, time_constants, 2.3, 0.15) * np.exp(0.05 * rng.standard_normal(steps))
    val_loss = approach(epochs, time_constants, 1.6, 0.25) * (
        1 + noise * rng.standard_normal(epochs)
    )
    val_acc = approach(epochs, time_constants, 0.35, 0.95) + noise / 3 * rng.standard_normal(epochs)
    ep = range(1, epochs + 1)
    return {
        "loss": pts(loss, range(1, steps + 1)),
        "val_loss": pts(val_loss, ep),
        "val_accuracy": pts(val_acc, ep),
    }


CONFIG = {"epochs": "20", "batch_size": "32", "train_size": "1600", "steps_per_epoch": "50"}


# -- the measure ---------------------------------------------------------------------------


def test_rate_ratio_falls_with_the_time_constants_elapsed() -> None:
    ratios = []
    for c in (1.0, 2.0, 3.0, 4.0):
        curve = approach(100, c, 1.0, 0.2)
        p = measure(Series("val_loss", np.arange(100), curve), "loss", DEFAULT_THRESHOLDS)
        assert p is not None
        ratios.append(p.ratio)
    assert ratios == sorted(ratios, reverse=True)
    assert ratios[1] > DEFAULT_THRESHOLDS.undertrained_rate_ratio > ratios[2]


# -- undertrained --------------------------------------------------------------------------


@pytest.mark.parametrize("epochs", [6, 12, 30])
def test_validation_still_improving_is_undertrained(rng: np.random.Generator, epochs: int) -> None:
    hist = epoch_run(rng, epochs, time_constants=1.2)
    f = only(diagnose_histories(hist, {**CONFIG, "epochs": str(epochs)}), "undertrained")
    assert f.severity == "warning"
    assert f.evidence["metric"] == "val_accuracy" and f.evidence["step"] == epochs
    assert f.evidence["also"][0]["metric"] == "val_loss"
    assert f.evidence["rate_ratio"] >= 0.3 and f.evidence["tail_gain"] > 0
    assert f.evidence["window"][1] == epochs and f.evidence["value"] > 0.6
    assert "epochs" in " ".join(f.next_steps) and "early stopping" in " ".join(f.next_steps)
    assert "still improving" in f.summary


def test_two_epoch_run_is_judged_on_its_training_loss(rng: np.random.Generator) -> None:
    hist = epoch_run(rng, 2, time_constants=1.0)
    f = only(diagnose_histories(hist, {**CONFIG, "epochs": "2"}), "undertrained")
    assert f.evidence["metric"] == "loss" and f.evidence["window"][1] == 100


def test_accuracy_in_percent_is_undertrained(rng: np.random.Generator) -> None:
    acc = 100 * approach(15, 1.0, 0.3, 0.9) + 0.3 * rng.standard_normal(15)
    f = only(diagnose_histories({"val_acc": pts(acc, range(1, 16))}), "undertrained")
    assert f.evidence["metric"] == "val_acc" and f.evidence["value"] > 60


@pytest.mark.parametrize("kind", HEALTHY_KINDS)
@pytest.mark.parametrize("replicate", range(5))
def test_converged_healthy_runs_are_not_undertrained(kind: str, replicate: int, seed: int) -> None:
    hist, params, tags = healthy_run(np.random.default_rng(seed + replicate), kind)
    assert "undertrained" not in ids(diagnose_histories(hist, params, tags))


@pytest.mark.parametrize("epochs", [6, 12, 30])
@pytest.mark.parametrize("replicate", range(5))
def test_curves_near_their_plateau_are_not_undertrained(
    epochs: int, replicate: int, seed: int
) -> None:
    # 3.5 time constants: 3 % of the improvement still ahead; noise of 2 %
    hist = epoch_run(np.random.default_rng(seed + replicate), epochs, 3.5, noise=0.02)
    assert diagnose_histories(hist, {**CONFIG, "epochs": str(epochs)}) == []


def test_flat_accuracy_beside_a_falling_loss_is_not_undertrained(rng: np.random.Generator) -> None:
    hist = epoch_run(rng, 20, time_constants=1.0)
    acc = approach(20, 5.0, 0.35, 0.95) + 0.003 * rng.standard_normal(20)
    hist["val_accuracy"] = pts(acc, range(1, 21))
    assert "undertrained" not in ids(diagnose_histories(hist, CONFIG))


def test_a_noisy_plateau_is_not_undertrained(rng: np.random.Generator) -> None:
    # the last epochs happen to go down, within the noise of a flat curve
    acc = np.concatenate([approach(10, 4.0, 0.4, 0.9), [0.88, 0.9, 0.89, 0.91, 0.92]])
    loss = np.concatenate([approach(10, 4.0, 1.5, 0.3), [0.31, 0.3, 0.3, 0.29, 0.28]])
    hist = {"val_accuracy": pts(acc, range(1, 16)), "val_loss": pts(loss, range(1, 16))}
    assert diagnose_histories(hist) == []


@pytest.mark.parametrize(
    ("status", "tags"),
    [("RUNNING", {}), ("KILLED", {}), ("FAILED", {}), (None, {"tuner.state": "PRUNED"})],
)
def test_runs_stopped_on_purpose_are_not_undertrained(
    rng: np.random.Generator, status: str | None, tags: dict[str, str]
) -> None:
    hist = epoch_run(rng, 12, time_constants=1.0)
    found = diagnose_histories(hist, CONFIG, tags, status=status)
    assert "undertrained" not in ids(found)
    assert "undertrained" in ids(diagnose_histories(hist, CONFIG, {}, status="FINISHED"))


def test_runaway_and_stalled_losses_are_not_undertrained(rng: np.random.Generator) -> None:
    stalled = 2.302 - 0.02 * np.arange(300) / 300 + 0.002 * rng.standard_normal(300)
    assert ids(diagnose_histories({"loss": pts(stalled)})) == ["slow_convergence"]
    falling_then_nan = [*approach(60, 1.0, 2.3, 0.5), math.nan]
    assert ids(diagnose_histories({"loss": pts(falling_then_nan)})) == ["loss_runaway"]


# -- too_few_epochs ------------------------------------------------------------------------


def test_one_epoch_of_a_small_data_set_is_too_few(rng: np.random.Generator) -> None:
    # what LineageCallback records for the digits example at --epochs 1
    params = {"epochs": "1", "batch_size": "32", "train_size": "1437", "steps_per_epoch": "45"}
    loss = approach(45, 1.0, 2.3, 0.3) * np.exp(0.1 * rng.standard_normal(45))
    found = diagnose_histories({"loss": pts(loss, range(1, 46))}, params)
    f = only(found, "too_few_epochs")
    assert f.severity == "warning" and f.evidence["param"] == "epochs"
    assert f.evidence["total_steps"] == 45 and f.evidence["suggested_epochs"] == 3
    assert "45 per epoch: 1437 samples / batch 32" in f.summary
    assert f.next_steps[0].startswith("Raise epochs to at least 3 (135 updates)")
    assert f.evidence["train_size"] == 1437 and f.evidence["batch_size"] == 32


@pytest.mark.parametrize(
    ("params", "param", "total"),
    [
        ({"num_epochs": "2", "train_size": "500", "batch_size": "64"}, "num_epochs", 16),
        (
            {"train.epochs": "3", "train.batch_size": "16", "train.train_size": "300"},
            "train.epochs",
            57,
        ),
        ({"max_steps": "50", "num_train_epochs": "3"}, "max_steps", 50),
        (
            {"epoch_size": "5", "dataset_sink_mode": "True", "sink_size": "10", "batch_size": "32"},
            "epoch_size",
            50,
        ),
    ],
)
def test_too_few_updates_from_other_spellings(
    params: dict[str, str], param: str, total: int
) -> None:
    f = only(diagnose_histories({}, params), "too_few_epochs")
    assert f.evidence["param"] == param and f.evidence["total_steps"] == total


def test_zero_epochs_is_an_error() -> None:
    f = only(diagnose_histories({}, {"epochs": "0", "batch_size": "32"}), "too_few_epochs")
    assert f.severity == "error" and "must be > 0" in f.summary


@pytest.mark.parametrize(
    "params",
    [
        {"epochs": "1", "batch_size": "32", "train_size": "1000000"},  # one pass over a big set
        {"num_train_epochs": "3", "per_device_batch_size": "8", "max_steps": "-1"},  # unknown
        {"num_train_epochs": "3", "batch_size": "32", "train_size": "2500", "max_steps": "-1"},
        {"epochs": "50", "batch_size": "16", "train_size": "200"},
        {"epochs": "2", "steps_per_epoch": "1563"},
        {"epochs": "2", "train_size": "0.8", "batch_size": "32"},  # a split fraction
        {"lr_schedule.epochs": "1", "epochs": "30", "steps_per_epoch": "20"},
        {"epochs": "100"},  # no data-set size: nothing to judge
    ],
)
def test_enough_updates_are_quiet(params: dict[str, str]) -> None:
    assert diagnose_histories({}, params) == []


def test_few_updates_that_converged_anyway_are_quiet(rng: np.random.Generator) -> None:
    params = {"epochs": "1", "batch_size": "32", "train_size": "1437", "steps_per_epoch": "45"}
    loss = approach(45, 6.0, 2.3, 0.3) * np.exp(0.05 * rng.standard_normal(45))
    assert diagnose_histories({"loss": pts(loss, range(1, 46))}, params) == []


def test_a_runaway_loss_is_not_blamed_on_epochs() -> None:
    params = {"epochs": "2", "batch_size": "32", "train_size": "1437", "lr": "10"}
    loss = [2.3, 5.0, 40.0, math.inf]
    assert ids(diagnose_histories({"loss": pts(loss)}, params)) == [
        "loss_runaway",
        "hyperparameter_range",
    ]


# -- near_full_batch -----------------------------------------------------------------------


def test_batch_close_to_the_data_set_size() -> None:
    params = {"batch_size": "1024", "train_size": "1437", "epochs": "200"}
    f = only(diagnose_histories({}, params), "near_full_batch")
    assert f.severity == "warning" and f.evidence["param"] == "batch_size"
    assert f.evidence["batch_share"] == pytest.approx(1024 / 1437)
    assert f.evidence["steps_per_epoch"] == 2 and f.evidence["allowed"] == [1, 718]
    assert "71% of the 1437 training samples: 2 updates per epoch" in f.summary
    assert any("batch size" in s for s in f.next_steps)


def test_batch_larger_than_the_data_set() -> None:
    f = only(
        diagnose_histories({}, {"bs": "64", "n_train": "40", "epochs": "500"}), "near_full_batch"
    )
    assert "whole training set (40 samples)" in f.summary
    f = only(
        diagnose_histories({}, {"batch_size": "64", "train_size": "40", "steps_per_epoch": "0"}),
        "near_full_batch",
    )
    assert f.severity == "error" and "no step trains" in f.summary


def test_data_set_size_from_the_tag_or_the_steps() -> None:
    tags = {"lineage.data.train.samples": "100"}
    f = only(diagnose_histories({}, {"batch_size": "80", "epochs": "300"}, tags), "near_full_batch")
    assert f.evidence["train_size"] == 100 and not f.evidence["train_size_estimated"]
    f = only(
        diagnose_histories({}, {"batch_size": "500", "steps_per_epoch": "2", "epochs": "300"}),
        "near_full_batch",
    )
    assert f.evidence["train_size_estimated"] and "about 1000" in f.summary


@pytest.mark.parametrize(
    "params",
    [
        {"batch_size": "256", "train_size": "1437", "epochs": "30"},
        {"batch_size": "32", "steps_per_epoch": "45", "epochs": "10"},
        {"batch_size": "2000", "train_size": "1437", "optimizer": "LBFGS", "epochs": "100"},
        {"batch_size": "128", "val_size": "100", "train_size": "50000", "epochs": "10"},
        {"val_batch_size": "256", "train_size": "300", "batch_size": "16", "epochs": "40"},
        {"batch_size": "32", "dataset_sink_mode": "True", "sink_size": "1", "epochs": "500"},
    ],
)
def test_usual_batch_sizes_are_quiet(params: dict[str, str]) -> None:
    assert diagnose_histories({}, params) == []


def test_healthy_runs_carry_the_params_the_new_checks_read(seed: int) -> None:
    # the healthy runs of test_checks are judged by all three checks, not skipped by them
    _, params, _ = healthy_run(np.random.default_rng(seed), "noisy_decreasing")
    assert {"epochs", "train_size", "steps_per_epoch", "batch_size"} <= set(params)
    loss = noisy_decay(np.random.default_rng(seed), n=500)
    assert diagnose_histories({"loss": pts(loss)}, params) == []
