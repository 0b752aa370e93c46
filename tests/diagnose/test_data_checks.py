"""The data checks (``constant_column``, ``data_out_of_range``, ``labels_out_of_range``) on
the statistics a recorder logs about the first batch: a firing case and healthy cases each."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from diag_curves import HEALTHY_KINDS, healthy_run

from lineage.diagnose import Finding, diagnose_histories

COLUMNS_TAG = "lineage.data.train.columns"
DATA_CHECKS = {"constant_column", "data_out_of_range", "labels_out_of_range"}


def _stats(column: str, a: np.ndarray, role: str = "train") -> dict[str, list[tuple[int, float]]]:
    f = a.astype(np.float64)
    return {
        f"data.{role}.{column}.{k}": [(0, float(getattr(np, k)(f)))]
        for k in ("min", "mean", "max", "std")
    }


def _run(
    image: np.ndarray, label: np.ndarray, *, implied: list[float] | None, classes: int | None
) -> tuple[dict[str, Any], dict[str, str]]:
    hist = {**_stats("image", image), **_stats("label", label)}
    described: dict[str, Any] = {
        "image": {"kind": "image", "shape": list(image.shape), "dtype": "float32"},
        "label": {"kind": "label", "shape": list(label.shape), "dtype": "int32"},
    }
    if implied is not None:
        described["image"]["implied_range"] = implied
        described["image"]["range_source"] = "Normalize(mean=[0.5], std=[0.25])"
    if classes is not None:
        described["label"]["classes"] = classes
    return hist, {COLUMNS_TAG: json.dumps(described)}


def _data_findings(hist: dict[str, Any], tags: dict[str, str]) -> list[Finding]:
    return [f for f in diagnose_histories(hist, {}, tags) if f.check in DATA_CHECKS]


@pytest.fixture
def batch(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = (rng.uniform(0, 1, size=(32, 1, 8, 8)) - 0.5) / 0.25  # Normalize on [0, 1] input
    labels = rng.integers(0, 10, size=32)
    return images, labels


def test_a_healthy_batch_gives_no_data_finding(batch: tuple[np.ndarray, np.ndarray]) -> None:
    images, labels = batch
    hist, tags = _run(images, labels, implied=[-2.0, 2.0], classes=10)
    assert _data_findings(hist, tags) == []
    # the extremes themselves (a 0 and a 255 pixel) and float rounding are inside
    edges = np.array([-2.0, 2.0 + 1e-6]).reshape(2, 1, 1, 1)
    hist, tags = _run(edges, np.array([0, 9]), implied=[-2.0, 2.0], classes=10)
    assert _data_findings(hist, tags) == []


@pytest.mark.parametrize("kind", HEALTHY_KINDS)
def test_healthy_runs_with_a_healthy_batch_give_nothing(
    kind: str, seed: int, batch: tuple[np.ndarray, np.ndarray]
) -> None:
    hist, params, tags = healthy_run(np.random.default_rng(seed), kind)
    data_hist, data_tags = _run(*batch, implied=[-2.0, 2.0], classes=10)
    assert diagnose_histories({**hist, **data_hist}, params, {**tags, **data_tags}) == []


def test_a_constant_image_column_is_an_error(batch: tuple[np.ndarray, np.ndarray]) -> None:
    _, labels = batch
    blank = np.full((32, 1, 8, 8), -2.0)
    (f,) = _data_findings(*_run(blank, labels, implied=[-2.0, 2.0], classes=10))
    assert f.check == "constant_column" and f.severity == "error"
    assert f.evidence["column"] == "image" and f.evidence["value"] == -2.0
    assert f.evidence["metric"] == "data.train.image.std" and f.evidence["rows"] == 32
    assert "'image' is constant" in f.summary and f.causes and f.next_steps


def test_a_single_class_batch_is_a_warning_about_shuffling(
    batch: tuple[np.ndarray, np.ndarray],
) -> None:
    images, _ = batch
    (f,) = _data_findings(*_run(images, np.zeros(32, int), implied=None, classes=10))
    assert f.check == "constant_column" and f.severity == "warning"
    assert "huffle" in " ".join(f.next_steps)


def test_a_one_row_batch_is_never_constant() -> None:
    hist, tags = _run(np.zeros((1, 1, 8, 8)) + 0.5, np.array([3]), implied=None, classes=10)
    hist["data.train.image.std"] = [(0, 0.0)]
    assert diagnose_histories({k: v for k, v in hist.items() if "image" in k}, {}, tags) == []


def test_missing_rescale_is_out_of_range(batch: tuple[np.ndarray, np.ndarray]) -> None:
    _, labels = batch
    pixels = np.random.default_rng(1).integers(0, 256, size=(32, 1, 8, 8))
    wrong = (pixels - 0.5) / 0.25  # Normalize for [0, 1] input on 0-255 pixels
    (f,) = _data_findings(*_run(wrong, labels, implied=[-2.0, 2.0], classes=10))
    assert f.check == "data_out_of_range" and f.severity == "error"
    assert f.evidence["allowed"] == [-2.0, 2.0] and f.evidence["value"] == wrong.max()
    assert f.evidence["metric"] == "data.train.image.max"
    assert "Normalize(mean=[0.5], std=[0.25])" in f.summary


def test_no_implied_range_no_range_finding(batch: tuple[np.ndarray, np.ndarray]) -> None:
    _, labels = batch
    hist, tags = _run(np.arange(32.0 * 64).reshape(32, 1, 8, 8), labels, implied=None, classes=10)
    assert _data_findings(hist, tags) == []


@pytest.mark.parametrize(("labels", "value"), [(np.arange(1, 11), 10.0), (np.arange(-1, 9), -1.0)])
def test_labels_outside_the_class_count(
    batch: tuple[np.ndarray, np.ndarray], labels: np.ndarray, value: float
) -> None:
    images, _ = batch
    (f,) = _data_findings(*_run(images, labels, implied=[-2.0, 2.0], classes=10))
    assert f.check == "labels_out_of_range" and f.severity == "error"
    assert f.evidence["value"] == value and f.evidence["allowed"] == [0, 9]
    assert "10 outputs" in f.summary


def test_labels_without_a_class_count_are_not_judged(
    batch: tuple[np.ndarray, np.ndarray],
) -> None:
    images, _ = batch
    assert _data_findings(*_run(images, np.arange(1, 33), implied=None, classes=None)) == []


def test_statistics_without_the_columns_tag_still_show_a_constant_column() -> None:
    hist = _stats("x", np.ones((16, 4)))
    (f,) = diagnose_histories(hist)
    assert f.check == "constant_column" and f.evidence["kind"] == "tensor"
    assert diagnose_histories(hist, {}, {COLUMNS_TAG: "not json"})[0].check == "constant_column"
