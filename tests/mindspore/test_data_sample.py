"""Data samples and the data graph of real MindSpore runs on scikit-learn's digits as 8x8 images.

One module-scoped fixture records three runs into one SQLite store:

- ``fit``: ``Model.fit`` through ``LineageCallback`` on uint8 HWC digits, ``Rescale(1/255)``,
  ``Normalize(mean=[0.5], std=[0.25])``, ``HWC2CHW`` (a healthy pipeline);
- ``broken``: ``record_training`` on the same digits without the ``Rescale`` (0-255 pixels
  normalised as if in [0, 1]) and labels counted from 1, given only ``x`` at its step (so the
  recorder reads the first batch from the dataset itself);
- ``off``: ``record_training(..., data_sample=False)``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.mindspore]


class Digits:
    """Random-access source: (8x8x1 uint8 image, 0-d int32 label)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = images, labels

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.images[i], np.asarray(self.labels[i], dtype=np.int32)

    def __len__(self) -> int:
        return len(self.images)


def _digits(n: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    pixels = np.round(d.images[offset : offset + n] * 255 / 16).astype(np.uint8)[..., None]
    return pixels, d.target[offset : offset + n].astype(np.int32)


def _pipeline(images: np.ndarray, labels: np.ndarray, batch: int, rescale: bool = True) -> Any:
    from mindspore import dataset as mds
    from mindspore.dataset import vision

    ops = [vision.Rescale(1.0 / 255.0, 0.0)] if rescale else []
    ops += [vision.Normalize(mean=[0.5], std=[0.25]), vision.HWC2CHW()]
    ds = mds.GeneratorDataset(Digits(images, labels), ["image", "label"], shuffle=False)
    return ds.map(ops, input_columns="image").batch(batch, drop_remainder=True)


def _first_batch_callback() -> Any:
    from mindspore.train import Callback

    class FirstBatch(Callback):
        """The batch the network received at step 1, as MindSpore handed it over."""

        def __init__(self) -> None:
            self.batch: list[np.ndarray] | None = None

        def on_train_step_end(self, run_context: Any) -> None:
            if self.batch is None:
                element = run_context.original_args().train_dataset_element
                self.batch = [t.asnumpy() for t in element]

    return FirstBatch()


@pytest.fixture(scope="module")
def runs(
    ms: ModuleType, tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> dict[str, Any]:
    from mindspore import nn
    from mindspore.train import Accuracy, Model

    import lineage
    from lineage.mindspore import LineageCallback, record_training

    work = tmp_path_factory.mktemp("data-sample")
    shutil.copyfile(_sqlite_template, work / "mlflow.db")
    uri = f"sqlite:///{work / 'mlflow.db'}"
    ms.set_seed(5)
    x, y = _digits(256)
    vx, vy = _digits(64, offset=256)

    net = nn.SequentialCell(nn.Flatten(), nn.Dense(64, 10))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(net, loss_fn, opt, metrics={"accuracy": Accuracy()})
    first = _first_batch_callback()
    with lineage.start_run(experiment="ms-data", tracking_uri=uri) as fit_run:
        cb = LineageCallback(data_sample=12)
        model.fit(1, _pipeline(x, y, 32), _pipeline(vx, vy, 64), callbacks=[cb, first])

    broken_net = nn.SequentialCell(nn.Flatten(), nn.Dense(64, 10))
    broken_ds = _pipeline(x, y + 1, 32, rescale=False)
    with (
        lineage.start_run(experiment="ms-data", tracking_uri=uri) as broken_run,
        record_training(broken_net, None, dataset=broken_ds, epochs=1) as rec,
    ):
        for image, _ in broken_ds.create_tuple_iterator(num_epochs=1):
            rec.step(2.3, batch=image)
            break
    with (
        lineage.start_run(experiment="ms-data", tracking_uri=uri) as off_run,
        record_training(broken_net, None, dataset=broken_ds, data_sample=False) as rec,
    ):
        rec.step(2.3)
    return {
        "uri": uri,
        "fit": fit_run.run_id,
        "broken": broken_run.run_id,
        "off": off_run.run_id,
        "first_batch": first.batch,
    }


def _png(view: Any, path: str) -> np.ndarray:
    import matplotlib.image
    import mlflow

    local = mlflow.artifacts.download_artifacts(
        run_id=view.run_id, artifact_path=path, tracking_uri=view.uri
    )
    return np.asarray(matplotlib.image.imread(local))


def _not_empty(image: np.ndarray, min_side: int = 200) -> None:
    assert image.ndim == 3 and min(image.shape[:2]) >= min_side, image.shape
    pixels = image[..., :3].reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) > 16  # not one colour (nor a few)
    assert pixels.std() > 0.05


def test_fit_records_the_batch_the_network_received(runs: dict[str, Any], read_run: Any) -> None:
    view = read_run(runs["uri"], runs["fit"])
    image, label = runs["first_batch"]
    for column, values in (("image", image), ("label", label)):
        for stat in ("min", "mean", "max", "std"):
            ((step, got),) = view.series(f"data.train.{column}.{stat}")
            want = float(getattr(np, stat)(values.astype(np.float64)))
            assert step == 0 and got == pytest.approx(want, rel=1e-6, abs=1e-9), (column, stat)
    columns = json.loads(view.tags["lineage.data.train.columns"])
    assert columns["image"] == {
        "kind": "image",
        "dtype": "float32",
        "shape": [32, 1, 8, 8],
        "layout": "NCHW",
        "implied_range": [-2.0, 2.0],
        "range_source": "Rescale(rescale=0.003922, shift=0) -> Normalize(mean=[0.5], std=[0.25])",
    }
    assert columns["label"] == {"kind": "label", "dtype": "int32", "shape": [32], "classes": 10}
    doc = view.artifact_json("dataset/train_sample.json")
    assert doc["rows"] == 12
    assert doc["columns"]["label"]["first_rows"] == [int(v) for v in label[:12]]
    assert "sample_error" not in " ".join(view.tags)


def test_fit_holds_its_sample_grid_and_data_graphs(runs: dict[str, Any], read_run: Any) -> None:
    view = read_run(runs["uri"], runs["fit"])
    assert {
        "dataset/train_sample.png",
        "dataset/train_sample.json",
        "dataset/train_pipeline.json",
        "dataset/train_pipeline.png",
        "dataset/val_pipeline.png",
    } <= set(view.artifacts)
    assert "dataset/train_sample_table.png" not in view.artifacts  # images + labels only
    grid = _png(view, "dataset/train_sample.png")
    _not_empty(grid)
    # 12 images: a 4 x 3 grid, each drawn from 8x8 pixels denormalised to grey levels
    assert grid.shape[0] > grid.shape[1] * 0.8
    for role in ("train", "val"):
        _not_empty(_png(view, f"dataset/{role}_pipeline.png"))


def test_a_healthy_pipeline_gives_no_data_finding(runs: dict[str, Any]) -> None:
    from lineage.diagnose import diagnose_run

    data_checks = {"constant_column", "data_out_of_range", "labels_out_of_range"}
    findings = diagnose_run(runs["fit"], tracking_uri=runs["uri"])
    assert [f.check for f in findings if f.check in data_checks] == []


def test_missing_rescale_and_labels_from_1_are_diagnosed(
    runs: dict[str, Any], read_run: Any
) -> None:
    from lineage.diagnose import diagnose_run

    view = read_run(runs["uri"], runs["broken"])
    ((_, top),) = view.series("data.train.image.max")
    assert top == pytest.approx((255 - 0.5) / 0.25)  # 0-255 pixels normalised as [0, 1] ones
    checks = {f.check: f for f in diagnose_run(runs["broken"], tracking_uri=runs["uri"])}
    assert checks["data_out_of_range"].evidence["allowed"] == [-2.0, 2.0]
    assert checks["labels_out_of_range"].evidence["value"] == 10.0
    assert "constant_column" not in checks
    # sampled from the dataset (the step got only x): still images with labels, as a grid
    _not_empty(_png(view, "dataset/train_sample.png"))


def test_data_sample_false_draws_no_sample_but_the_graph(
    runs: dict[str, Any], read_run: Any
) -> None:
    view = read_run(runs["uri"], runs["off"])
    assert not [a for a in view.artifacts if "sample" in a]
    assert not [m for m in view.histories if m.startswith("data.")]
    assert "lineage.data.train.columns" not in view.tags
    assert "dataset/train_pipeline.png" in view.artifacts


@pytest.mark.parametrize("bad", [0, -1, 257, 2.5, "16", None])
def test_bad_data_sample_is_one_line_naming_the_rule_and_value(ms: ModuleType, bad: Any) -> None:
    from lineage import UsageError
    from lineage.mindspore import LineageCallback, record_training

    if bad is None:  # None means off, like False
        LineageCallback(data_sample=bad)
        return
    for make in (
        lambda: LineageCallback(data_sample=bad),
        lambda: record_training(None, None, data_sample=bad),
    ):
        with pytest.raises(UsageError) as err:
            make()
        message = str(err.value)
        assert "\n" not in message
        assert message == (
            f"data_sample must be True, False or an int in [1, 256] (rows to draw), got {bad!r}"
        )
