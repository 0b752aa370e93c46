"""record_training in a hand-written ``mindspore.value_and_grad`` loop; checkpoints; failures."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.mindspore]


def test_value_and_grad_loop_records_steps_epochs_and_checkpoints(
    ms: ModuleType, make_data: Any, tiny_net: Any, sqlite_uri: str, read_run: Any
) -> None:
    from mindspore import nn

    import lineage
    from lineage.mindspore import record_training

    net = tiny_net()
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    lrs = [0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.02, 0.02]
    opt = nn.SGD(net.trainable_params(), learning_rate=lrs, momentum=0.9, weight_decay=1e-3)

    def forward(x: Any, y: Any) -> Any:
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)

    @ms.jit
    def train_step(x: Any, y: Any) -> Any:
        loss, grads = grad_fn(x, y)
        opt(grads)
        return loss, grads

    data, val = make_data(64, 16), make_data(24, 24, seed=3)
    seen: list[float] = []
    norms: list[float] = []
    with (
        lineage.start_run(experiment="ms-functional", tracking_uri=sqlite_uri) as run,
        record_training(
            net, opt, loss_fn, dataset=data, val_dataset=val, epochs=2, checkpoints=True
        ) as rec,
    ):
        for epoch in range(2):
            for x, y in data.create_tuple_iterator():
                loss, grads = train_step(x, y)
                seen.append(float(loss.asnumpy()))
                norms.append(float(np.sqrt(sum(np.sum(g.asnumpy() ** 2) for g in grads))))
                rec.step(loss, batch=x, grads=grads)
            rec.epoch_end(val_accuracy=0.5 + epoch / 10)
    view = read_run(sqlite_uri, run.run_id)

    v = view.values
    assert (v["optimizer.name"], v["optimizer.momentum"], v["optimizer.weight_decay"]) == (
        "SGD",
        0.9,
        0.001,
    )
    assert (v["loss_fn.name"], v["loss_fn.label_smoothing"]) == ("CrossEntropyLoss", 0.1)
    assert (v["epochs"], v["batch_size"], v["steps_per_epoch"], v["train_size"]) == (2, 16, 4, 64)
    assert v["val_size"] == 24
    assert [s for s, _ in view.series("loss")] == list(range(1, 9))
    assert [x for _, x in view.series("loss")] == pytest.approx(seen, rel=1e-6)
    assert [x for _, x in view.series("lr")] == pytest.approx(lrs)  # read from the optimizer
    assert view.series("val_accuracy") == [(1, 0.5), (2, 0.6)]
    assert [x for _, x in view.series("grad_norm")] == pytest.approx(norms, rel=1e-5)
    final = np.sqrt(sum(np.sum(p.asnumpy() ** 2) for p in net.trainable_params()))
    assert [s for s, _ in view.series("weight_norm")] == [1, 2]
    assert view.series("weight_norm")[-1][1] == pytest.approx(float(final), rel=1e-5)
    assert all(d > 0 for _, d in view.series("weight_delta"))
    for (_, thr), (_, secs) in zip(
        view.series("throughput"), view.series("train_time"), strict=True
    ):
        assert thr == pytest.approx(64 / secs, rel=1e-6)
    assert {"checkpoints/TinyNet-1.ckpt", "checkpoints/TinyNet-2.ckpt"} <= set(view.artifacts)
    import mlflow

    local = mlflow.artifacts.download_artifacts(
        run_id=run.run_id, artifact_path="checkpoints/TinyNet-2.ckpt", tracking_uri=sqlite_uri
    )
    saved = ms.load_checkpoint(local)
    for p in net.get_parameters():
        np.testing.assert_array_equal(saved[p.name].asnumpy(), p.asnumpy())


def test_model_checkpoint_files_are_uploaded_and_failure_marks_run(
    ms: ModuleType,
    make_data: Any,
    tiny_net: Any,
    sqlite_uri: str,
    read_run: Any,
    monkeypatch: Any,
    tmp_path: Path,
) -> None:
    from mindspore import nn
    from mindspore.train import Callback, CheckpointConfig, Model, ModelCheckpoint

    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    net = tiny_net()
    opt = nn.Adam(net.trainable_params(), learning_rate=0.01)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)
    ckpt = ModelCheckpoint(
        prefix="tiny",
        directory=str(tmp_path / "ckpt"),
        config=CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=10),
    )
    cb = LineageCallback(checkpoints=True, experiment="ms-ckpt")
    model.train(2, make_data(64, 16), callbacks=[ckpt, cb])  # 8 steps: a file every 2
    view = read_run(sqlite_uri, cb.run.run_id)
    uploaded = sorted(a for a in view.artifacts if a.startswith("checkpoints/"))
    written = sorted(f"checkpoints/{p.name}" for p in (tmp_path / "ckpt").glob("*.ckpt"))
    assert uploaded == written and len(written) == 4
    assert view.record.status == "FINISHED"

    class Boom(Callback):
        def on_train_step_end(self, run_context: Any) -> None:
            if run_context.original_args().cur_step_num == 3:
                raise RuntimeError("boom at step 3")

    failing = LineageCallback(experiment="ms-ckpt")
    with pytest.raises(RuntimeError, match="boom"):
        model.train(1, make_data(64, 16), callbacks=[failing, Boom()])
    view = read_run(sqlite_uri, failing.run.run_id)
    assert view.record.status == "FAILED"
    assert [s for s, _ in view.series("loss")] == [1, 2, 3]
