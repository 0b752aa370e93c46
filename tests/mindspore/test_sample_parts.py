"""The parts of a data sample without a training: column kinds, the range a serialized
pipeline implies, denormalisation, and the table and graph pictures (no MindSpore run)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.mindspore]


def _map(column: str, *ops: tuple[str, dict[str, Any] | None], child: Any = None) -> Any:
    return {
        "op_type": "Map",
        "input_columns": [column],
        "operations": [{"tensor_op_name": n, "tensor_op_params": p} for n, p in ops],
        "children": [child or {"op_type": "ImageFolderDataset", "children": []}],
    }


def _png(path: Path) -> np.ndarray:
    import matplotlib.image

    image = np.asarray(matplotlib.image.imread(path))
    assert image.ndim == 3 and min(image.shape[:2]) >= 150, image.shape
    assert len(np.unique(image[..., :3].reshape(-1, 3), axis=0)) > 16  # not one colour
    return image


def test_ranges_the_pipeline_implies(ms: ModuleType) -> None:
    from lineage.mindspore._sample import implied_ranges

    imagenet = _map(
        "image",
        ("Decode", {"rgb": True}),
        ("RandomResizedCrop", {"size": [224, 224]}),
        ("Normalize", {"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}),
        ("HwcToChw", None),
    )
    ranges, source = implied_ranges(imagenet, "image", 3)
    assert ranges is not None
    want = [-2.1179, 2.2489, -2.0357, 2.4286, -1.8044, 2.64]
    assert np.ravel(ranges) == pytest.approx(want, abs=1e-3)
    assert source == (
        "Decode(rgb=True) -> Normalize(mean=[123.7, 116.3, 103.5], std=[58.4, 57.12, 57.38])"
    )
    # Rescale(1/255) reads 0-255 input; ToTensor gives [0, 1]; a later Rescale maps the range
    rescaled = _map("image", ("Rescale", {"rescale": 1 / 255, "shift": 0.0}))
    assert np.ravel(implied_ranges(rescaled, "image", 1)[0]) == pytest.approx([0.0, 1.0])
    both = _map("image", ("ToTensor", {}), ("Rescale", {"rescale": 2.0, "shift": -1.0}))
    assert implied_ranges(both, "image", 1)[0] == [(-1.0, 1.0)]
    # nothing says the range: a Rescale of another factor alone, other columns, no pipeline
    assert implied_ranges(
        _map("image", ("Rescale", {"rescale": 0.0625, "shift": 0.0})), "image", 1
    ) == (None, None)
    assert implied_ranges(imagenet, "label", 1) == (None, None)
    assert implied_ranges(None, "image", 3) == (None, None)
    # a 3-channel Normalize on a 1-channel column cannot be read
    assert implied_ranges(imagenet, "image", 1) == (None, None)


def test_column_kinds_and_class_count(ms: ModuleType) -> None:
    from mindspore import nn

    from lineage.mindspore._sample import build_sample, network_outputs

    rng = np.random.default_rng(0)
    names = ["image", "hwc", "features", "label", "target"]
    batch = [
        rng.normal(size=(8, 3, 32, 32)).astype(np.float32),
        rng.integers(0, 256, size=(8, 16, 16, 1)).astype(np.uint8),
        rng.normal(size=(8, 64)).astype(np.float32),
        rng.integers(0, 10, size=8).astype(np.int32),
        rng.normal(size=(8, 1)).astype(np.float32),
    ]
    net = nn.SequentialCell(nn.Flatten(), nn.Dense(64, 32), nn.ReLU(), nn.Dense(32, 7))
    sample = build_sample("train", names, batch, count=4, classes=network_outputs(net))
    kinds = {c.name: (c.kind, c.layout) for c in sample.columns}
    assert kinds == {
        "image": ("image", "NCHW"),
        "hwc": ("image", "NHWC"),
        "features": ("tensor", None),
        "label": ("label", None),
        "target": ("label", None),
    }
    assert sample.label() is not None and sample.label().classes == 7  # type: ignore[union-attr]
    assert [c.name for c in sample.tabular()] == ["features"]
    assert all(len(c.rows) == 4 for c in sample.columns)
    assert sample.metrics()["data.train.features.max"] == pytest.approx(float(batch[2].max()))


def test_denormalised_pixels_are_the_original_ones(ms: ModuleType) -> None:
    from lineage.mindspore._sample_figures import to_display

    original = np.random.default_rng(1).uniform(0, 1, size=(4, 3, 8, 8))
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    normalised = (original - mean[None, :, None, None]) / std[None, :, None, None]
    ranges = [((0 - m) / s, (1 - m) / s) for m, s in zip(mean, std, strict=True)]
    shown, how = to_display(normalised, "NCHW", ranges)
    assert shown.shape == (4, 8, 8, 3) and "implies" in how
    assert shown == pytest.approx(np.moveaxis(original, 1, -1))
    stretched, how = to_display(normalised[:, :1], "NCHW", None)
    assert stretched.min() == 0.0 and stretched.max() == 1.0 and "batch's range" in how


def test_table_and_branched_graph_pictures(ms: ModuleType, tmp_path: Path) -> None:
    from lineage.mindspore._pipeline_figure import box_text, save_pipeline_graph
    from lineage.mindspore._sample_figures import TableColumn, save_sample_table

    rng = np.random.default_rng(2)
    table = save_sample_table(
        [TableColumn("x", rng.normal(size=(32, 20)), 8), TableColumn("y", np.arange(32), 8)],
        tmp_path / "table.png",
        title="train",
    )
    _png(table)
    left = _map("image", ("Decode", None), ("Normalize", {"mean": [0.5], "std": [0.5]}))
    right = {
        "op_type": "Map",
        "operations": ["<lambda>"],
        "children": [{"op_type": "NumpySlicesDataset"}],
    }
    graph = {
        "op_type": "Batch",
        "batch_size": 16,
        "children": [{"op_type": "Zip", "children": [left, right]}],
    }
    wide = _png(save_pipeline_graph(graph, tmp_path / "graph.png", title="train data pipeline"))
    single = _png(save_pipeline_graph(left, tmp_path / "one.png"))
    assert wide.shape[1] > 1.8 * single.shape[1]  # two branches side by side
    title, lines = box_text(left)
    assert title == "Map" and lines[-1] == "2. Normalize(mean=[0.5], std=[0.5])"
    assert box_text(right) == ("Map", ["1. <lambda>"])
