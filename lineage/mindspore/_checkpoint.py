"""Resumable MindSpore trainings: save a checkpoint every epoch into the trial's checkpoint
folder, and restore the one the tuner hands an attempt that continues earlier work.

``Model.fit``/``Model.train``::

    from lineage.mindspore import TrialCheckpoint, restore_checkpoint

    start = restore_checkpoint(model.train_network or net)     # 0 on a fresh start
    if start < epochs:
        model.fit(epochs, train_ds, valid_ds, initial_epoch=start,
                  callbacks=[TrialCheckpoint(net_with_optimizer)])
    else:  # the checkpoint holds the last epoch: the training is done
        trial.report(start, **model.eval(valid_ds))

An attempt stopped after it saved its last epoch (while it evaluated, closed its run or
exited) continues from that checkpoint: `restore_checkpoint` then returns ``epochs``, and
``Model.fit`` refuses ``initial_epoch == epoch``, so the script only evaluates and reports
(the tuner keeps one value per step: a report of a step the trial already holds is dropped).

A functional loop calls :func:`restore_checkpoint` before its first epoch and
:func:`save_checkpoint` after each one. Saving the cell that holds the optimizer (a
``TrainOneStepCell``, or ``Model.train_network``) keeps its state (momentum, Adam's moments)
too. Outside the tuner (no ``TUNER_CHECKPOINT_DIR``) saving does nothing and restoring
returns 0, so the same script runs by hand. In a trial of several processes (msrun,
torchrun) only rank 0 saves, and every rank restores the same checkpoint. The folder
protocol is :mod:`lineage.checkpoints`.
"""

from __future__ import annotations

import os
from typing import Any

import mindspore as ms
from mindspore.train import Callback

from lineage import checkpoints
from lineage.mindspore._introspect import rank

__all__ = ["CHECKPOINT_FILE", "TrialCheckpoint", "restore_checkpoint", "save_checkpoint"]

CHECKPOINT_FILE = "mindspore.ckpt"


def save_checkpoint(cell: Any, epoch: int) -> checkpoints.Checkpoint | None:
    """Save ``cell``'s parameters as the checkpoint of ``epoch`` (committed, older ones pruned);
    None outside the tuner, and on every rank but 0 of a multi-process trial (data parallel:
    every rank holds the same weights, and all of them restore rank 0's checkpoint)."""
    root = os.environ.get(checkpoints.CHECKPOINT_DIR)
    if not root or rank() not in (None, 0):
        return None
    folder = checkpoints.step_dir(root, epoch)
    ms.save_checkpoint(cell, str(folder / CHECKPOINT_FILE))
    return checkpoints.commit(folder, epoch)


def restore_checkpoint(cell: Any) -> int:
    """Load the checkpoint this attempt continues from into ``cell``; the epochs it holds
    (the epoch to start from), 0 for a fresh start. When that is the training's last epoch,
    nothing is left to train: skip ``Model.fit`` (it refuses ``initial_epoch == epoch``)."""
    point = checkpoints.resume_point()
    if point is None:
        return 0
    folder, epoch = point
    ms.load_param_into_net(cell, ms.load_checkpoint(str(folder / CHECKPOINT_FILE)))
    return epoch


class TrialCheckpoint(Callback):
    """Save ``cell`` every ``every`` epochs (and after the last) through `save_checkpoint`."""

    def __init__(self, cell: Any, *, every: int = 1) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.cell = cell
        self.every = every

    def on_train_epoch_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        epoch = int(cb.cur_epoch_num)
        if epoch % self.every == 0 or epoch == int(getattr(cb, "epoch_num", epoch)):
            save_checkpoint(self.cell, epoch)
