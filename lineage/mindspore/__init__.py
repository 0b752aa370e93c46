"""MindSpore integration: record hyperparameters, metrics and data lineage without user code.

``Model.train`` / ``Model.fit``::

    from lineage.mindspore import LineageCallback
    model.fit(10, train_ds, valid_ds, callbacks=[LineageCallback()])

Functional loops (``mindspore.value_and_grad``)::

    from lineage.mindspore import record_training
    with record_training(net, optimizer, loss_fn, dataset=train_ds, epochs=10) as rec:
        ...
        rec.step(loss)
        rec.epoch_end(val_accuracy=acc)

Under the tuner, resumable with no other code: `LineageCallback` saves ``Model.train_network``
every ``checkpoint.every`` epochs and a retry or `tuner resume` continues from the last one
saved; a population-based training continuation trains on with its explored learning rate
and momentum (the optimizer's state comes from the checkpoint). A functional loop iterates over `resumable_epochs`::

    for epoch in resumable_epochs(10, net, optimizer, recorder=rec):
        ...

`TrialCheckpoint` and `restore_checkpoint` are the explicit way (``initial_epoch``).

Importing this module imports MindSpore (~3 s); ``import lineage`` never does.
"""

from __future__ import annotations

from lineage.mindspore._callback import LineageCallback
from lineage.mindspore._checkpoint import (
    TrialCheckpoint,
    restore_checkpoint,
    resumable_epochs,
    save_checkpoint,
)
from lineage.mindspore._functional import record_training
from lineage.mindspore._recorder import TrainingRecorder
from lineage.training import RecorderOptions

__all__ = [
    "LineageCallback",
    "RecorderOptions",
    "TrainingRecorder",
    "TrialCheckpoint",
    "record_training",
    "restore_checkpoint",
    "resumable_epochs",
    "save_checkpoint",
]
