"""Real MindSpore trainings recorded by ``LineageCallback`` and read back by the diagnosis:
the accuracy-tuning checklist (``undertrained``), and MindSpore's standard in-memory pipeline
(``NumpySlicesDataset`` with integer labels) in the environment the ``mindspore`` extra gives.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.mindspore]


def _fit(ms: ModuleType, net: Any, epochs: int, train: Any, val: Any, experiment: str) -> str:
    from mindspore import nn
    from mindspore.train import Accuracy, Model

    from lineage.mindspore import LineageCallback

    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, opt, metrics={"accuracy": Accuracy()})
    cb = LineageCallback(experiment=experiment)
    model.fit(epochs, train, val, callbacks=[cb])
    return str(cb.run.run_id)


def test_undertrained_after_one_epoch_not_once_converged(
    ms: ModuleType, make_data: Any, tiny_net: Any, sqlite_uri: str, monkeypatch: Any
) -> None:
    from lineage.diagnose import diagnose_run

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    runs = {}
    for epochs in (1, 10):
        ms.set_seed(0)
        train, val = make_data(480, 16), make_data(200, 50, seed=1)
        runs[epochs] = _fit(ms, tiny_net(), epochs, train, val, f"checklist-{epochs}")

    # one epoch: 30 steps, the loss still falling, one validation point (too few to judge)
    short = diagnose_run(runs[1], tracking_uri=sqlite_uri)
    assert [f.check for f in short] == ["undertrained", "too_few_epochs"]
    assert short[0].evidence["metric"] == "loss" and short[0].evidence["window"][1] == 30
    assert short[1].evidence["total_steps"] == 30 and short[1].evidence["suggested_epochs"] == 4
    # ten epochs: validation accuracy and loss have flattened
    assert diagnose_run(runs[10], tracking_uri=sqlite_uri) == []


def test_numpy_slices_dataset_with_integer_labels_trains_and_records(
    ms: ModuleType, tiny_net: Any, sqlite_uri: str, read_run: Any, monkeypatch: Any
) -> None:
    # MindSpore's most common in-memory pipeline. MindSpore 2.10 builds each row with
    # np.array(x, copy=False), which numpy >= 2 refuses for an integer label (a numpy
    # scalar): "Unable to avoid copy while creating an array as requested". The mindspore
    # extra pins numpy < 2 so that this trains.
    from mindspore import dataset as mds

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 8)).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.int32) + 2 * (x[:, 1] > 0)).astype(np.int32)
    train = mds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(16)
    val = mds.NumpySlicesDataset({"x": x[:32], "y": y[:32]}, shuffle=False).batch(16)
    ms.set_seed(0)
    run_id = _fit(ms, tiny_net(), 2, train, val, "numpy-slices")

    view = read_run(sqlite_uri, run_id)
    assert view.record.status == "FINISHED"
    assert view.params["train_size"] == "128" and view.params["steps_per_epoch"] == "8"
    assert [step for step, _ in view.series("loss")] == list(range(1, 17))
    assert all(np.isfinite(v) for _, v in view.series("loss"))
    assert [step for step, _ in view.series("val_accuracy")] == [1, 2]
