"""A training whose best learning rate changes as it trains: the noisy quadratic model.

SGD with heavy-ball momentum on a diagonal quadratic ``L(x) = 1/2 sum_i h_i x_i^2`` whose
gradient carries noise of variance ``h_i`` in each dimension (the noisy quadratic model of
Zhang et al. 2019, "Which algorithmic choices matter at which batch sizes?"). 100 dimensions,
curvatures ``h_i`` log-spaced over three decades (1e-3 to 1), ``x_i`` starting at variance 1.
The expected loss is computed exactly, not sampled: each dimension's second moments of
(position, velocity) evolve by a 2x2 linear map per step, so a training is deterministic
given its parameters and costs microseconds a step.

A large ``lr`` shrinks the flat dimensions fast but leaves a noise floor proportional to it;
a small one reaches a lower floor but leaves the flat dimensions where they started. So a
decaying learning rate beats every fixed one: over 30 epochs of 20 steps, the best fixed
``lr`` (0.040 at momentum 0) scores 1.41, ``lr`` 0.16 decayed by 0.8 every 3 epochs scores
1.62, and 0.34 decayed by 0.7 every 3 epochs 1.73: a loss 1.6 and 2.1 times lower. Momentum
moves the best ``lr`` (about ``lr / (1 - momentum)`` matters), not these scores
(``python _schedulers_nqm.py --sweep`` prints the comparison). The score, maximised, is the decades of loss reduction,
``-log10(loss / initial loss)``, reported as ``score`` to the tuner and under ``acc`` in the
counter ``bench_schedulers.py`` reads; a training whose loss grows past 1,000 times the
initial one has diverged, scores -3 from then on and stops moving.

Run by the tuner (``python _schedulers_nqm.py``), it reads ``lr`` and ``momentum`` from
``tuner.trial.params()``, reports ``score`` each epoch, checkpoints its state every epoch and
continues from the checkpoint it is handed with the trial's current ``lr`` and ``momentum``
(a PBT exploit). The counter and ``BENCH_EPOCH_SECONDS`` work as in ``_schedulers_train.py``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _schedulers_counter import end_epoch

DIMS = 100
STEPS_PER_EPOCH = 20
CURVATURE = np.logspace(-3, 0, DIMS)
#: A loss this many times the initial one means the training diverged.
DIVERGED = 1e3
DIVERGED_SCORE = -3.0
INITIAL_LOSS = float(0.5 * CURVATURE.sum())
#: The search space, in the config's words.
SPACE: dict[str, Any] = {
    "lr": {"type": "float", "low": 1e-3, "high": 10.0, "log": True},
    "momentum": {"type": "float", "low": 0.0, "high": 0.99},
}
DEFAULTS: dict[str, Any] = {"lr": 0.1, "momentum": 0.0}


class Training:
    """One trial's second moments, trained an epoch of ``STEPS_PER_EPOCH`` steps at a time.

    ``xx``, ``xv``, ``vv``: per dimension, E[x^2], E[x v], E[v^2] of position and velocity.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        self.xx = np.ones(DIMS)
        self.xv = np.zeros(DIMS)
        self.vv = np.zeros(DIMS)
        self.epoch = 0
        self.diverged = False
        self.set_params(params)

    def set_params(self, params: dict[str, Any]) -> None:
        p = DEFAULTS | params
        self.lr, self.momentum = float(p["lr"]), float(p["momentum"])

    def loss(self) -> float:
        return float(0.5 * np.sum(CURVATURE * self.xx))

    def score(self) -> float:
        if self.diverged:
            return DIVERGED_SCORE
        return -math.log10(self.loss() / INITIAL_LOSS)

    def step(self, steps: int) -> None:
        """``steps`` steps of v' = m v - lr (h x + noise), x' = x + v'."""
        if self.diverged:
            return
        lr, m, h = self.lr, self.momentum, CURVATURE
        # (x, v)' = A (x, v) + b * noise, A = [[1 - lr h, m], [-lr h, m]], b = (-lr, -lr),
        # noise of variance h: each second moment is a quadratic form of the old ones.
        a, c = 1.0 - lr * h, -lr * h
        noise = lr * lr * h
        for _ in range(steps):
            xx, xv, vv = self.xx, self.xv, self.vv
            self.xx = a * a * xx + 2 * a * m * xv + m * m * vv + noise
            self.xv = a * c * xx + (a * m + c * m) * xv + m * m * vv + noise
            self.vv = c * c * xx + 2 * c * m * xv + m * m * vv + noise
        if not self.loss() < DIVERGED * INITIAL_LOSS:  # NaN included
            self.diverged = True

    def train_epoch(self) -> float:
        """One epoch; returns the score and logs the epoch to the counter."""
        started, cpu = time.time(), time.process_time()
        self.step(STEPS_PER_EPOCH)
        self.epoch += 1
        score = self.score()
        end_epoch(self.epoch, score, started, cpu)
        return score

    def state(self) -> dict[str, Any]:
        return {
            "xx": self.xx.tolist(),
            "xv": self.xv.tolist(),
            "vv": self.vv.tolist(),
            "epoch": self.epoch,
            "diverged": self.diverged,
        }

    def load(self, state: dict[str, Any]) -> None:
        self.xx, self.xv, self.vv = (np.array(state[k]) for k in ("xx", "xv", "vv"))
        self.epoch = int(state["epoch"])
        self.diverged = bool(state["diverged"])


def final_score(schedule: list[float], momentum: float = 0.0) -> float:
    """The score after one epoch per entry of ``schedule`` (that epoch's ``lr``)."""
    training = Training({"lr": schedule[0], "momentum": momentum})
    for lr in schedule:
        training.set_params({"lr": lr, "momentum": momentum})
        training.step(STEPS_PER_EPOCH)
    return training.score()


def reference(epochs: int) -> dict[str, float]:
    """What a schedule can gain at ``epochs`` epochs, momentum 0: the best fixed ``lr`` of a
    grid of 81 over the tuned range, and the best start of each decay (0.8 and 0.7 every 3
    epochs), with their scores."""
    grid = np.logspace(-3, 1, 81)
    out: dict[str, float] = {}
    for name, decay in (("fixed", 1.0), ("decay_0.8_every_3", 0.8), ("decay_0.7_every_3", 0.7)):
        score, lr = max(
            (final_score([lr * decay ** (e // 3) for e in range(epochs)]), lr) for lr in grid
        )
        out[f"{name}_lr"] = round(float(lr), 4)
        out[f"{name}_score"] = round(score, 4)
    return out


def sweep(epochs: int = 30) -> None:
    """Fixed learning rates against decaying ones, printed (the docstring's margin)."""
    grid = np.logspace(-3, 1, 161)
    for m in (0.0, 0.5, 0.9):
        fixed = [(final_score([lr] * epochs, m), lr) for lr in grid]
        best, best_lr = max(fixed)
        print(f"momentum {m}: best fixed lr {best_lr:.4g} scores {best:.3f}")
        for decay, every in ((0.8, 3), (0.7, 3), (0.5, 3), (0.8, 2), (0.5, 5)):
            tried = []
            for lr in grid:
                schedule = [lr * decay ** (e // every) for e in range(epochs)]
                tried.append((final_score(schedule, m), lr))
            score, lr0 = max(tried)
            print(f"  x{decay} every {every} epochs from lr {lr0:.4g}: {score:.3f}")


def main() -> int:
    from tuner import trial

    params = trial.params()
    max_epochs = int(os.environ.get("BENCH_MAX_EPOCHS", "30"))
    training = Training(params)
    resume = trial.resume_from()
    if resume is not None:
        training.load(json.loads((resume[0] / "state.json").read_text()))
        training.set_params(params)
    while training.epoch < max_epochs:
        score = training.train_epoch()
        (trial.checkpoint_dir(training.epoch) / "state.json").write_text(
            json.dumps(training.state())
        )
        trial.checkpointed(training.epoch)
        trial.report(training.epoch, score=score)
        if trial.should_prune():
            break
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--sweep"]:
        sweep()
        raise SystemExit(0)
    raise SystemExit(main())
