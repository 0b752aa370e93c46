"""Trial checkpoints without script code: `LineageCallback` and `resumable_epochs` save under
the tuner's environment and continue a real MindSpore training from the checkpoint an attempt
is handed, to the same weights as a training never stopped."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from lineage import checkpoints

pytestmark = [pytest.mark.mindspore]

EPOCHS, ROWS, BATCH = 4, 48, 16  # 3 steps per epoch
STEPS = ROWS // BATCH


def _tuner_env(monkeypatch: Any, folder: Path, resume: checkpoints.Checkpoint | None) -> None:
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(folder))
    monkeypatch.setenv(checkpoints.KEEP, "10")
    for var in (checkpoints.RESUME_FROM, checkpoints.RESUME_STEP, checkpoints.EVERY):
        monkeypatch.delenv(var, raising=False)
    if resume is not None:
        monkeypatch.setenv(checkpoints.RESUME_FROM, str(resume.path))
        monkeypatch.setenv(checkpoints.RESUME_STEP, str(resume.step))


def _weights(cell: Any) -> dict[str, np.ndarray]:
    return {name: p.asnumpy().copy() for name, p in cell.parameters_dict().items()}


class _Setup:
    """A tiny classifier with a per-step learning-rate schedule and momentum: a continued
    training only matches an uninterrupted one when the optimizer's state and its step
    counter come back with the weights."""

    def __init__(self, ms: ModuleType, tiny_net: Any, make_data: Any, seed: int) -> None:
        from mindspore import dataset as mds
        from mindspore import nn
        from mindspore.train import Accuracy, Model

        ms.set_seed(seed)  # each attempt starts from other random weights
        mds.config.set_seed(11)  # and shuffles its data as every other attempt does
        self.net = tiny_net()
        schedule = [0.2 * 0.9**k for k in range(EPOCHS * STEPS)]
        self.opt = nn.Momentum(self.net.trainable_params(), learning_rate=schedule, momentum=0.9)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        self.model = Model(self.net, loss_fn, self.opt, metrics={"accuracy": Accuracy()})
        self.train, self.val = make_data(ROWS, BATCH, shuffle=True), make_data(24, 8, seed=1)


def _seen(ms: ModuleType, stop_after: int | None = None) -> Any:
    from mindspore.train import Callback

    class Seen(Callback):
        """The epoch and step numbers every other callback sees; with ``stop_after``, the
        attempt ends after that epoch (as if killed once its checkpoint was saved)."""

        def __init__(self) -> None:
            self.steps: list[int] = []
            self.epochs: list[int] = []
            self.evals: list[int] = []

        def on_train_step_end(self, run_context: Any) -> None:
            self.steps.append(int(run_context.original_args().cur_step_num))

        def on_eval_end(self, run_context: Any) -> None:
            self.evals.append(int(run_context.original_args().cur_epoch_num))

        def on_train_epoch_end(self, run_context: Any) -> None:
            epoch = int(run_context.original_args().cur_epoch_num)
            self.epochs.append(epoch)
            if epoch == stop_after:
                run_context.request_stop()

    return Seen()


def test_lineage_callback_resumes_mid_training_to_the_uninterrupted_weights(
    ms: ModuleType,
    tiny_net: Any,
    make_data: Any,
    tmp_path: Path,
    sqlite_uri: str,
    read_run: Any,
    monkeypatch: Any,
) -> None:
    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    # Uninterrupted.
    _tuner_env(monkeypatch, tmp_path / "full", None)
    full = _Setup(ms, tiny_net, make_data, seed=1)
    initial = _weights(full.net)
    full.model.fit(EPOCHS, full.train, full.val, callbacks=[LineageCallback(experiment="full")])
    saved = [c.name for c in sorted((tmp_path / "full").iterdir())]
    assert saved == [f"step-{e:09d}" for e in range(1, EPOCHS + 1)]  # every epoch by default

    # The first attempt stops after epoch 2; the second is handed epoch 2's checkpoint.
    folder = tmp_path / "trial"
    _tuner_env(monkeypatch, folder, None)
    first = _Setup(ms, tiny_net, make_data, seed=1)
    for name, param in first.net.parameters_dict().items():
        param.set_data(ms.Tensor(initial[name]))
    seen = _seen(ms, stop_after=2)
    first.model.fit(EPOCHS, first.train, first.val, callbacks=[LineageCallback(), seen])
    point = checkpoints.latest_good(folder)
    assert point is not None and point.step == 2

    _tuner_env(monkeypatch, folder, point)
    second = _Setup(ms, tiny_net, make_data, seed=99)
    seen = _seen(ms)
    callback = LineageCallback(experiment="continued")
    second.model.fit(EPOCHS, second.train, second.val, callbacks=[callback, seen])

    # Only the epochs left ran, numbered on from the checkpoint's epoch and step, on the
    # batches an uninterrupted training gets in those epochs (its shuffle order included).
    assert seen.epochs == [3, 4] and seen.evals == [3, 4]
    assert seen.steps == list(range(2 * STEPS + 1, EPOCHS * STEPS + 1))
    want, got = _weights(full.model.train_network), _weights(second.model.train_network)
    assert sorted(got) == sorted(want)  # weights, momentum buffers, global_step
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert int(second.opt.global_step.asnumpy().item()) == EPOCHS * STEPS
    run = read_run(sqlite_uri, callback.run.run_id)
    assert [s for s, _ in run.series("loss")] == list(range(2 * STEPS + 1, EPOCHS * STEPS + 1))
    assert [s for s, _ in run.series("val_accuracy")] == [3, 4]
    assert [s for s, _ in run.series("epoch_time")] == [3, 4]
    assert run.values["epochs"] == EPOCHS


def test_a_checkpoint_of_the_last_epoch_leaves_the_weights_as_saved(
    ms: ModuleType,
    tiny_net: Any,
    make_data: Any,
    tmp_path: Path,
    sqlite_uri: str,
    read_run: Any,
    monkeypatch: Any,
) -> None:
    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    folder = tmp_path / "trial"
    _tuner_env(monkeypatch, folder, None)
    first = _Setup(ms, tiny_net, make_data, seed=1)
    first.model.fit(EPOCHS, first.train, first.val, callbacks=[LineageCallback()])
    final = _weights(first.model.train_network)
    point = checkpoints.latest_good(folder)
    assert point is not None and point.step == EPOCHS

    _tuner_env(monkeypatch, folder, point)
    again = _Setup(ms, tiny_net, make_data, seed=5)
    seen = _seen(ms)
    callback = LineageCallback(experiment="done")
    again.model.fit(EPOCHS, again.train, again.val, callbacks=[callback, seen])

    # One step ran (MindSpore cannot skip it) and was undone: the weights, the momentum and
    # the schedule's position are the checkpoint's; the restored network was evaluated as
    # the last epoch, and nothing of the undone step was recorded or saved.
    got = _weights(again.model.train_network)
    for name in final:
        np.testing.assert_array_equal(got[name], final[name], err_msg=name)
    assert seen.epochs == [EPOCHS] and seen.evals == [EPOCHS] and len(seen.steps) == 1
    run = read_run(sqlite_uri, callback.run.run_id)
    assert "loss" not in run.histories and "val_accuracy" not in run.histories
    assert checkpoints.latest_good(folder).step == EPOCHS  # type: ignore[union-attr]


def test_a_script_that_resumes_on_its_own_is_left_to_it(
    ms: ModuleType, tiny_net: Any, make_data: Any, tmp_path: Path, sqlite_uri: str, monkeypatch: Any
) -> None:
    from lineage.mindspore import LineageCallback, TrialCheckpoint, _resume, restore_checkpoint

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    folder = tmp_path / "trial"
    _tuner_env(monkeypatch, folder, None)
    first = _Setup(ms, tiny_net, make_data, seed=1)
    first.model.fit(2, first.train, first.val, callbacks=[LineageCallback()])
    point = checkpoints.latest_good(folder)
    assert point is not None and point.step == 2

    saves: list[int] = []
    monkeypatch.setattr(_resume, "save_checkpoint", lambda cell, epoch, **kw: saves.append(epoch))
    _tuner_env(monkeypatch, folder, point)
    second = _Setup(ms, tiny_net, make_data, seed=5)
    start = restore_checkpoint(second.model.train_network)
    seen = _seen(ms)
    callbacks = [LineageCallback(), TrialCheckpoint(second.model.train_network), seen]
    second.model.fit(EPOCHS, second.train, second.val, callbacks=callbacks, initial_epoch=start)
    assert start == 2 and seen.epochs == [3, 4]  # not shifted a second time
    assert saves == []  # TrialCheckpoint saved, the callback did not
    assert checkpoints.latest_good(folder).step == 4  # type: ignore[union-attr]


def test_checkpoint_every_n_epochs_and_the_last(
    ms: ModuleType, tiny_net: Any, make_data: Any, tmp_path: Path, sqlite_uri: str, monkeypatch: Any
) -> None:
    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    _tuner_env(monkeypatch, tmp_path / "trial", None)
    monkeypatch.setenv(checkpoints.EVERY, "2")
    setup = _Setup(ms, tiny_net, make_data, seed=1)
    setup.model.train(3, setup.train, callbacks=[LineageCallback(data_sample=False)])
    assert sorted(p.name for p in (tmp_path / "trial").iterdir()) == [
        "step-000000002",
        "step-000000003",
    ]


def _functional(
    ms: ModuleType, tiny_net: Any, make_data: Any, seed: int, stop_after: int | None = None
) -> tuple[Any, Any, list[int], list[int]]:
    """A hand-written loop over `resumable_epochs`; the epochs it trained and the steps
    it recorded."""
    from mindspore import nn

    from lineage.mindspore import record_training, resumable_epochs

    ms.set_seed(seed)
    net = tiny_net()
    opt = nn.Adam(net.trainable_params(), learning_rate=[0.05 * 0.9**k for k in range(12)])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    data = make_data(ROWS, BATCH)

    def forward(x: Any, y: Any) -> Any:
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    trained: list[int] = []
    recorded: list[int] = []
    with record_training(net, opt, loss_fn, dataset=data, epochs=EPOCHS, data_sample=False) as rec:
        for epoch in resumable_epochs(EPOCHS, net, opt, recorder=rec):
            if stop_after is not None and epoch > stop_after:
                break  # killed after the checkpoint of stop_after
            for x, y in data.create_tuple_iterator():
                loss, grads = grad_fn(x, y)
                opt(grads)
                rec.step(loss)
                recorded.append(rec.global_step)
            rec.epoch_end()
            trained.append(epoch)
    return net, opt, trained, recorded


def test_resumable_epochs_continues_a_functional_loop(
    ms: ModuleType, tiny_net: Any, make_data: Any, tmp_path: Path, sqlite_uri: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    _tuner_env(monkeypatch, tmp_path / "full", None)
    net, opt, trained, _ = _functional(ms, tiny_net, make_data, seed=1)
    want = {**_weights(net), **_weights(opt)}
    assert trained == [1, 2, 3, 4]

    folder = tmp_path / "trial"
    _tuner_env(monkeypatch, folder, None)
    _, _, trained, _ = _functional(ms, tiny_net, make_data, seed=1, stop_after=2)
    assert trained == [1, 2]
    point = checkpoints.latest_good(folder)
    assert point is not None and point.step == 2

    _tuner_env(monkeypatch, folder, point)
    net, opt, trained, recorded = _functional(ms, tiny_net, make_data, seed=42)
    assert trained == [3, 4]
    assert recorded == list(range(2 * STEPS + 1, EPOCHS * STEPS + 1))
    got = {**_weights(net), **_weights(opt)}
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)

    # Handed the last epoch's checkpoint, the loop has nothing left to run.
    last = checkpoints.latest_good(folder)
    assert last is not None and last.step == EPOCHS
    _tuner_env(monkeypatch, folder, last)
    net, _, trained, _ = _functional(ms, tiny_net, make_data, seed=7)
    assert trained == []
    for name, value in _weights(net).items():
        np.testing.assert_array_equal(value, want[name])


def test_outside_the_tuner_nothing_is_saved_or_restored(
    ms: ModuleType, tiny_net: Any, make_data: Any, tmp_path: Path, sqlite_uri: str, monkeypatch: Any
) -> None:
    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    monkeypatch.chdir(tmp_path)
    for var in (checkpoints.CHECKPOINT_DIR, checkpoints.RESUME_FROM, checkpoints.RESUME_STEP):
        monkeypatch.delenv(var, raising=False)
    setup = _Setup(ms, tiny_net, make_data, seed=1)
    seen = _seen(ms)
    setup.model.train(2, setup.train, callbacks=[LineageCallback(data_sample=False), seen])
    assert seen.epochs == [1, 2]
    _, _, trained, _ = _functional(ms, tiny_net, make_data, seed=1)
    assert trained == [1, 2, 3, 4]
    assert not list(tmp_path.rglob("step-*"))
