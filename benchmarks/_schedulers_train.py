"""The training ``bench_schedulers.py`` tunes: a one-hidden-layer MLP on scikit-learn's digits.

500 training images and 797 validation images (a fixed split), SGD with momentum and weight
decay, batch 32, one thread. Its hyperparameters matter: ``lr`` over four decades decides
between a network that learns nothing in 27 epochs and one at 0.96 validation accuracy,
``momentum``, ``weight_decay`` and ``hidden`` shift it further.

Every epoch appends one JSON line to the file named by ``BENCH_COUNTER``: the epoch, its
validation accuracy, the CPU-seconds it took and when it ended. The benchmark counts the
epochs each arm *trained* from these lines, whatever its configs said. An epoch lasts at least
``BENCH_EPOCH_SECONDS`` of wall time (the rest after the computation is slept, costing no
CPU), so a scheduler's decision reaches a trial within an epoch, as when epochs take minutes.

Run by the tuner (``python _schedulers_train.py``), it reads its parameters from
``tuner.trial.params()``, reports ``val_accuracy`` per epoch, checkpoints the network and the
optimizer every epoch and continues from the checkpoint it is handed (a promotion, a PBT
exploit: the optimizer takes the trial's current ``lr``, ``momentum`` and ``weight_decay``).
Ray Tune's arms call :class:`Training` in process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _schedulers_counter import end_epoch, read_counter

__all__ = ["DEFAULTS", "Training", "read_counter"]

TRAIN_IMAGES = 500
BATCH = 32
#: Defaults of the parameters a trial may leave out.
DEFAULTS: dict[str, Any] = {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4, "hidden": 64}

_DATA: tuple[torch.Tensor, ...] | None = None


def _data() -> tuple[torch.Tensor, ...]:
    global _DATA
    if _DATA is None:
        import importlib.util

        # The CSV scikit-learn ships, read without importing scikit-learn.
        spec = importlib.util.find_spec("sklearn")
        assert spec is not None and spec.submodule_search_locations, "pip install scikit-learn"
        csv = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
        table = np.loadtxt(csv, delimiter=",")
        x = torch.tensor(table[:, :-1] / 16.0, dtype=torch.float32)
        y = torch.tensor(table[:, -1], dtype=torch.long)
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
        train, val = order[:TRAIN_IMAGES], order[1000:]
        _DATA = (x[train], y[train], x[val], y[val])
    return _DATA


class Training:
    """One trial's network and optimizer, trained an epoch at a time."""

    def __init__(self, params: dict[str, Any], seed: int) -> None:
        torch.set_num_threads(1)
        p = DEFAULTS | params
        torch.manual_seed(seed)
        hidden = int(p["hidden"])
        self.model = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
        )
        self.opt = torch.optim.SGD(self.model.parameters(), lr=float(p["lr"]))
        self.set_params(p)
        self.epoch = 0

    def set_params(self, params: dict[str, Any]) -> None:
        """The optimizer takes ``lr``, ``momentum``, ``weight_decay`` (PBT changes them)."""
        p = DEFAULTS | params
        for group in self.opt.param_groups:
            group["lr"] = float(p["lr"])
            group["momentum"] = float(p["momentum"])
            group["weight_decay"] = float(p["weight_decay"])

    def train_epoch(self) -> float:
        """One epoch; returns the validation accuracy and logs the epoch to the counter."""
        started, cpu = time.time(), time.process_time()
        x, y, xv, yv = _data()
        self.model.train()
        order = torch.randperm(len(x))
        for i in range(0, len(x), BATCH):
            batch = order[i : i + BATCH]
            self.opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.model(x[batch]), y[batch])
            loss.backward()
            self.opt.step()
        self.model.eval()
        with torch.no_grad():
            out = self.model(xv)
        # A diverged network (NaN logits) scores as chance would, not as a failure.
        accuracy = float((out.argmax(1) == yv).float().mean()) if torch.isfinite(out).all() else 0.1
        self.epoch += 1
        end_epoch(self.epoch, accuracy, started, cpu)
        return accuracy

    def state(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "opt": self.opt.state_dict(),
            "epoch": self.epoch,
        }

    def load(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.epoch = int(state["epoch"])


def main() -> int:
    from tuner import trial

    params = trial.params()
    max_epochs = int(os.environ.get("BENCH_MAX_EPOCHS", "27"))
    training = Training(params, seed=(trial.number() or 0) + int(os.environ.get("SEED", "0")))
    resume = trial.resume_from()
    if resume is not None:
        training.load(torch.load(resume[0] / "state.pt", weights_only=False))
        training.set_params(params)
    while training.epoch < max_epochs:
        accuracy = training.train_epoch()
        torch.save(training.state(), trial.checkpoint_dir(training.epoch) / "state.pt")
        trial.checkpointed(training.epoch)
        trial.report(training.epoch, val_accuracy=accuracy)
        if trial.should_prune():
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
