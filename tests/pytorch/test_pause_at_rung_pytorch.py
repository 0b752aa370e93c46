"""A PyTorch trial saving through `lineage.pytorch.save_checkpoint` stops at the ASHA rung it
was paused at: the save waits, after its commit, for the controller's verdict on the epoch's
report, and the documented loop (``if w.pruned: break`` after the save) then ends there.
Real subprocess trials importing torch, a real MLflow SQLite store, Optuna on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tuner.conftest import _maker, trials_of
from tests.tuner.test_pause_at_rung import RUNGS_AT_1_AND_3

pytestmark = pytest.mark.slow

#: Four epochs of a 64-16-10 MLP on 64 random rows. The reported loss is the configuration's
#: distance from x = 0.3 (fixed per configuration, so a continuation ranks as its parent)
#: plus a trace of the real validation loss. ``computed`` gets ``number epoch`` per epoch
#: trained, ``reported`` ``number epoch`` per epoch reported.
SCRIPT = """
import os
import torch
import lineage.pytorch
from tuner import trial

torch.set_num_threads(1)
x = float(trial.params()["x"])
torch.manual_seed(0)
data = torch.randn(64, 64)
labels = torch.randint(0, 10, (64,))
model = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
w = lineage.pytorch.watch(model, opt, trial=trial, data_sample=False, fingerprint_data=False)
start = lineage.pytorch.restore_checkpoint(model, opt, watcher=w)
for epoch in range(start + 1, 5):
    loss = torch.nn.functional.cross_entropy(model(data), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    w.log(loss=loss)
    with open("computed", "a") as fh:
        fh.write(f"{trial.number()} {epoch}\\n")
    w.epoch_end(epoch, report={"loss": (x - 0.3) ** 2 + 1e-3 * float(loss)})
    with open("reported", "a") as fh:
        fh.write(f"{trial.number()} {epoch}\\n")
    lineage.pytorch.save_checkpoint(epoch, model, opt, watcher=w)
    if w.pruned:
        break
w.close()
"""


def _last(path: Path) -> dict[int, int]:
    last: dict[int, int] = {}
    for line in path.read_text().splitlines():
        number, epoch = (int(v) for v in line.split())
        last[number] = max(last.get(number, epoch), epoch)
    return last


def test_a_paused_pytorch_trial_stops_at_its_rung(tmp_path: Path, sqlite_uri: str) -> None:
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
        # Neither an epoch trained nor one reported past the rung it was paused at.
        assert computed[t.number] == reported[t.number] == rung, (t.number, computed, reported)
        assert max(t.intermediate_values) == rung
        assert t.state.name == "PRUNED"
