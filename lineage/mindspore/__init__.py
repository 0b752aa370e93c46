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

Under the tuner, resumable (a retry or `tuner resume` continues from the last epoch saved)::

    from lineage.mindspore import TrialCheckpoint, restore_checkpoint
    start = restore_checkpoint(model.train_network)
    if start < 10:  # else the checkpoint holds the last epoch: evaluate and report only
        model.fit(10, train_ds, valid_ds, initial_epoch=start,
                  callbacks=[LineageCallback(), TrialCheckpoint(model.train_network)])

Importing this module imports MindSpore (~3 s); ``import lineage`` never does.
"""

from __future__ import annotations

from lineage.mindspore._callback import LineageCallback
from lineage.mindspore._checkpoint import TrialCheckpoint, restore_checkpoint, save_checkpoint
from lineage.mindspore._functional import record_training
from lineage.mindspore._recorder import TrainingRecorder

__all__ = [
    "LineageCallback",
    "TrainingRecorder",
    "TrialCheckpoint",
    "record_training",
    "restore_checkpoint",
    "save_checkpoint",
]
