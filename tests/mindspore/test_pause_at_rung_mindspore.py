"""A MindSpore trial checkpointed by `LineageCallback` stops at the ASHA rung it was paused
at: the callback's save waits, after its commit, for the controller's verdict on the epoch's
report, so the script's own ``should_prune`` check at the epoch's end (as the digits example
makes it) and the callback's ``request_stop`` end ``Model.fit`` there. Real subprocess
trials importing MindSpore (CPU), a real MLflow SQLite store, Optuna on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tuner.conftest import _maker, trials_of
from tests.tuner.test_pause_at_rung import RUNGS_AT_1_AND_3

pytestmark = pytest.mark.slow

#: Four epochs of one dense layer on 32 random rows, evaluated after each epoch
#: (``Model.fit``'s ``valid_dataset``). The reported loss is the configuration's distance from
#: x = 0.3 (fixed per configuration, so a continuation ranks as its parent) plus a trace of
#: the real validation loss. ``computed`` gets ``number epoch`` per epoch begun, ``reported``
#: ``number epoch`` per epoch reported.
SCRIPT = """
import numpy as np
import mindspore as ms
from mindspore import dataset as mds, nn
from mindspore.train import Callback, Loss, Model
from lineage.mindspore import LineageCallback
from tuner import trial

ms.set_device("CPU")
x = float(trial.params()["x"])
rng = np.random.default_rng(0)
rows = rng.normal(size=(32, 8)).astype(np.float32)
labels = (rows[:, 0] > 0).astype(np.int32)


def data():
    return mds.NumpySlicesDataset((rows, labels), ["x", "y"], shuffle=False).batch(8)


net = nn.Dense(8, 2)
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
model = Model(net, loss_fn, nn.SGD(net.trainable_params(), 0.1), metrics={"loss": Loss()})


class Report(Callback):
    def on_train_epoch_begin(self, run_context):
        with open("computed", "a") as fh:
            fh.write(f"{trial.number()} {run_context.original_args().cur_epoch_num}\\n")

    def on_eval_end(self, run_context):
        cb = run_context.original_args()
        loss = (x - 0.3) ** 2 + 1e-3 * float(cb.eval_results["loss"])
        trial.report(cb.cur_epoch_num, loss=loss)
        with open("reported", "a") as fh:
            fh.write(f"{trial.number()} {cb.cur_epoch_num}\\n")

    def on_train_epoch_end(self, run_context):
        if trial.should_prune():
            run_context.request_stop()


model.fit(4, data(), valid_dataset=data(), callbacks=[LineageCallback(), Report()])
"""


def _last(path: Path) -> dict[int, int]:
    last: dict[int, int] = {}
    for line in path.read_text().splitlines():
        number, epoch = (int(v) for v in line.split())
        last[number] = max(last.get(number, epoch), epoch)
    return last


def test_a_paused_mindspore_trial_stops_at_its_rung(tmp_path: Path, sqlite_uri: str) -> None:
    from tuner.campaign import Controller

    config = _maker(tmp_path, sqlite_uri)(
        SCRIPT,
        budget={"trials": 4, "max_failures": 1},
        scheduler=RUNGS_AT_1_AND_3,
        # The wait for a verdict is bounded by the grace period: a loaded machine must not
        # end it before the controller decided.
        trial={"grace_period": 60},
        reads_tuner_params=True,
    )
    Controller(config, importance=False, handle_signals=False).run()
    trials = trials_of(config)
    paused = [t for t in trials if t.user_attrs.get("tuner.paused_at") is not None]
    assert paused, [(t.number, t.state.name, t.user_attrs) for t in trials]
    assert {t.state.name for t in trials} <= {"COMPLETE", "PRUNED"}
    computed, reported = _last(tmp_path / "computed"), _last(tmp_path / "reported")
    for t in paused:
        rung = t.user_attrs["tuner.paused_at"]
        # Neither an epoch begun nor one reported past the rung it was paused at.
        assert computed[t.number] == reported[t.number] == rung, (t.number, computed, reported)
        assert max(t.intermediate_values) == rung
        assert t.state.name == "PRUNED"
