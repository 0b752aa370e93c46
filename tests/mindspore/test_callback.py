"""LineageCallback on real MindSpore ``Model.fit`` runs, checked field by field."""

from __future__ import annotations

import hashlib
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.mindspore]


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]], rel: float = 1e-6) -> None:
    assert [step for step, _ in got] == [step for step, _ in want]
    assert [v for _, v in got] == pytest.approx([v for _, v in want], rel=rel)


def _capture(ms: ModuleType) -> Any:
    from mindspore.train import Callback

    class Capture(Callback):
        """What MindSpore itself saw: per-step loss, eval results, lr the optimizer used."""

        def __init__(self) -> None:
            self.losses: list[tuple[int, float]] = []
            self.evals: list[tuple[int, dict[str, float]]] = []

        def on_train_step_end(self, run_context: Any) -> None:
            cb = run_context.original_args()
            out = cb.net_outputs[0] if isinstance(cb.net_outputs, tuple) else cb.net_outputs
            self.losses.append((cb.cur_step_num, float(out.asnumpy())))

        def on_eval_end(self, run_context: Any) -> None:
            cb = run_context.original_args()
            self.evals.append((cb.cur_epoch_num, dict(cb.eval_results)))

    return Capture()


def test_fit_records_every_field(
    ms: ModuleType, make_data: Any, tiny_net: Any, sqlite_uri: str, read_run: Any, monkeypatch: Any
) -> None:
    from mindspore import dataset as mds
    from mindspore import nn
    from mindspore.train import Accuracy, Model

    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    ms.set_seed(123)
    mds.config.set_seed(7)
    net = tiny_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(
        net.trainable_params(),
        learning_rate=0.07,
        momentum=0.8,
        weight_decay=1e-4,
        use_nesterov=True,
    )
    model = Model(net, loss_fn, opt, metrics={"accuracy": Accuracy()})
    cap = _capture(ms)
    cb = LineageCallback(experiment="ms-fields")
    train, val = make_data(96, 16), make_data(40, 8, seed=1)
    model.fit(3, train, val, callbacks=[cb, cap])

    view = read_run(sqlite_uri, cb.run.run_id)
    assert view.record.status == "FINISHED"  # the callback started the run, so it ends it
    assert view.record.experiment == "ms-fields"
    expected = {
        "optimizer.name": "Momentum",
        "optimizer.lr": 0.07,
        "optimizer.momentum": 0.8,
        "optimizer.weight_decay": 0.0001,
        "optimizer.use_nesterov": True,
        "optimizer.loss_scale": 1.0,
        "loss_fn.name": "SoftmaxCrossEntropyWithLogits",
        "loss_fn.sparse": True,
        "loss_fn.reduction": "mean",
        "network.name": "TinyNet",
        "trainable_params": 8 * 6 + 6 + 6 * 4 + 4,
        "frozen_params": 0,
        "total_params": 82,
        "epochs": 3,
        "batch_size": 16,
        "steps_per_epoch": 6,
        "train_size": 96,
        "train_source": "GeneratorDataset",
        "val_size": 40,
        "val_batch_size": 8,
        "device.target": "CPU",
        "device.count": 1,
        "mode": "graph",
        "parallel_mode": "stand_alone",
        "amp_level": "O0",
        "eval_metrics": "accuracy",
        "seed": 123,
        "dataset_seed": 7,
        "dataset_sink_mode": False,
    }
    for key, value in expected.items():
        assert view.values.get(key) == value, key
    assert "optimizer.lr_schedule" not in view.values  # a constant lr is a param, not a metric
    assert "lr" not in view.histories
    assert view.tags["frozen_params"] == "0"
    assert view.tags["lineage.framework.mindspore"] == ms.__version__

    # loss at every global step, exactly the values the train network returned
    _same(view.series("loss"), cap.losses)
    assert [s for s, _ in view.series("loss")] == list(range(1, 19))
    # every evaluation, not only the last; eval_loss becomes val_loss
    _same(view.series("val_accuracy"), [(e, r["accuracy"]) for e, r in cap.evals])
    _same(view.series("val_loss"), [(e, r["eval_loss"]) for e, r in cap.evals])
    assert [s for s, _ in view.series("val_accuracy")] == [1, 2, 3]
    for key in ("epoch_time", "train_time", "throughput", "train_loss", "eval_time"):
        assert [s for s, _ in view.series(key)] == [1, 2, 3], key
    for (_, thr), (_, secs) in zip(
        view.series("throughput"), view.series("train_time"), strict=True
    ):
        assert thr == pytest.approx(96 / secs, rel=1e-6)
    epoch_means = [np.mean([v for s, v in cap.losses if (s - 1) // 6 == e]) for e in range(3)]
    assert [v for _, v in view.series("train_loss")] == pytest.approx(epoch_means, rel=1e-6)

    # data lineage: content fingerprint of the arrays behind the generator, pipeline as JSON
    src = train.children[0].source
    digest = hashlib.sha256()
    for arr in (src.x, src.y):
        digest.update(f"{arr.dtype.str}{arr.shape}".encode())
        digest.update(arr.tobytes())
    assert view.tags["lineage.data.train.fingerprint"] == f"sha256:{digest.hexdigest()}"
    assert view.tags["lineage.data.train.samples"] == "96"
    assert view.tags["lineage.data.val.samples"] == "40"
    assert {
        "frozen_params.json",
        "model/network.txt",
        "dataset/train_pipeline.json",
        "dataset/val_pipeline.json",
    } <= set(view.artifacts)
    pipeline = view.artifact_json("dataset/train_pipeline.json")["pipeline"]
    assert pipeline["op_type"] == "Batch"
    assert pipeline["batch_size"] == 16
    assert pipeline["children"][0]["op_type"] == "GeneratorDataset"
    assert view.artifact_json("frozen_params.json") == []


def test_frozen_weights_are_listed_with_their_reason(
    ms: ModuleType, make_data: Any, tiny_net: Any, sqlite_uri: str, read_run: Any
) -> None:
    from mindspore import nn
    from mindspore.train import FixedLossScaleManager, Model

    import lineage
    from lineage.mindspore import LineageCallback

    net = tiny_net()
    net.fc1.weight.requires_grad = False  # frozen on purpose
    # and fc2.bias silently left out of the optimizer (the bug the check exists for)
    given = [p for p in net.trainable_params() if p.name != "fc2.bias"]
    opt = nn.SGD(given, learning_rate=0.1, loss_scale=128.0)
    before = {p.name: p.asnumpy().copy() for p in net.get_parameters()}
    model = Model(
        net,
        nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
        opt,
        loss_scale_manager=FixedLossScaleManager(128.0, drop_overflow_update=False),
        amp_level="O2",
    )
    with lineage.start_run(experiment="ms-frozen", tracking_uri=sqlite_uri) as run:
        model.train(2, make_data(32, 16), callbacks=[LineageCallback(run)])
        assert run.status == "RUNNING"  # a run the callback was given is not ended by it
    view = read_run(sqlite_uri, run.run_id)

    after = {p.name: p.asnumpy() for p in net.get_parameters()}
    unchanged = sorted(n for n in before if np.array_equal(before[n], after[n]))
    assert unchanged == ["fc1.weight", "fc2.bias"]  # what really did not train
    frozen = view.artifact_json("frozen_params.json")
    assert frozen == [
        {"name": "fc1.weight", "shape": [6, 8], "size": 48, "reason": "requires_grad=False"},
        {"name": "fc2.bias", "shape": [4], "size": 4, "reason": "not given to the optimizer"},
    ]
    assert view.tags["frozen_params"] == "2"
    # weight_delta covers the trained weights only: what moved between epochs
    assert all(d > 0 for _, d in view.series("weight_delta"))
    assert view.values["frozen_params"] == 52
    assert view.values["trainable_params"] == 30
    assert view.values["total_params"] == 82
    assert view.values["optimizer.name"] == "SGD"
    assert view.values["optimizer.lr"] == 0.1
    assert view.values["optimizer.momentum"] == 0.0
    assert view.values["optimizer.nesterov"] is False
    # mixed precision and loss scaling, from the Model and its loss-scale manager
    assert view.values["amp_level"] == "O2"
    assert view.values["optimizer.loss_scale"] == 128.0
    assert view.values["loss_scale.manager"] == "FixedLossScaleManager"
    assert view.values["loss_scale.init"] == 128.0


def _cosine(step: int, min_lr: float, max_lr: float, decay_steps: int) -> float:
    p = min(step, decay_steps) / decay_steps
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + np.cos(np.pi * p))


def test_lr_schedule_is_a_per_step_metric(
    ms: ModuleType, make_data: Any, tiny_net: Any, sqlite_uri: str, read_run: Any, monkeypatch: Any
) -> None:
    from mindspore import nn
    from mindspore.train import Model

    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    net = tiny_net()
    schedule = nn.CosineDecayLR(min_lr=0.001, max_lr=0.05, decay_steps=7)
    opt = nn.Adam(net.trainable_params(), learning_rate=schedule, beta1=0.85, eps=1e-7)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)
    cb = LineageCallback(log_every=1)
    model.train(2, make_data(80, 16), callbacks=[cb])  # 5 steps per epoch, 10 in all

    view = read_run(sqlite_uri, cb.run.run_id)
    v = view.values
    assert v["optimizer.name"] == "Adam"
    assert v["optimizer.lr_schedule"] == "CosineDecayLR"
    assert v["optimizer.lr_schedule.min_lr"] == 0.001
    assert v["optimizer.lr_schedule.max_lr"] == 0.05
    assert v["optimizer.lr_schedule.decay_steps"] == 7
    assert (v["optimizer.beta1"], v["optimizer.beta2"], v["optimizer.eps"]) == (0.85, 0.999, 1e-7)
    assert "optimizer.lr" not in v
    # step k applies the schedule at global_step k-1 (and the decay ends at step 8)
    expected = [(k, _cosine(k - 1, 0.001, 0.05, 7)) for k in range(1, 11)]
    _same(view.series("lr"), expected, rel=1e-5)
    planned = view.artifact_json("lr_schedule.json")
    assert planned["lr"] == pytest.approx([lr for _, lr in expected], rel=1e-5)


def test_dynamic_lr_list_and_log_every(
    ms: ModuleType, make_data: Any, tiny_net: Any, sqlite_uri: str, read_run: Any, monkeypatch: Any
) -> None:
    from mindspore import nn
    from mindspore.train import Model

    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    net = tiny_net()
    lrs = nn.piecewise_constant_lr([3, 6, 8], [0.1, 0.05, 0.01])  # one value per step
    opt = nn.Momentum(net.trainable_params(), learning_rate=lrs, momentum=0.9)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)
    cb = LineageCallback(log_every=2)
    model.train(2, make_data(64, 16), callbacks=[cb])  # 4 steps per epoch, 8 in all

    view = read_run(sqlite_uri, cb.run.run_id)
    assert view.values["optimizer.lr_schedule"] == "list"
    assert view.values["optimizer.lr_schedule.length"] == 8
    assert view.values["optimizer.lr_schedule.max"] == 0.1
    assert view.values["optimizer.lr_schedule.last"] == 0.01
    _same(view.series("lr"), [(k, lrs[k - 1]) for k in (2, 4, 6, 8)])
    assert [s for s, _ in view.series("loss")] == [2, 4, 6, 8]
