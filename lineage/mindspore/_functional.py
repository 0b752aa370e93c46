"""`record_training`: lineage for functional loops built on ``mindspore.value_and_grad``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lineage.mindspore._recorder import TrainingRecorder
from lineage.training import RecorderOptions


def record_training(
    network: Any,
    optimizer: Any,
    loss_fn: Any = None,
    *,
    dataset: Any = None,
    val_dataset: Any = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    loss_scaler: Any = None,
    params: Mapping[str, Any] | None = None,
    run: Any = None,
    experiment: str | None = None,
    log_every: int = 1,
    checkpoints: bool | str = False,
    fingerprint_data: bool = True,
    all_ranks: bool = False,
    weight_stats: bool | None = None,
    data_sample: bool | int = True,
) -> TrainingRecorder:
    """Start recording a hand-written training loop; returns the `TrainingRecorder`.

    Everything the callback records up front is recorded here from the objects you pass
    (optimizer hyperparameters and lr schedule, loss function, network, frozen weights,
    dataset sizes/fingerprint/pipeline, device, seeds, ``loss_scaler`` from
    ``mindspore.amp``). In the loop, ``rec.step(loss)`` after each optimizer update logs
    ``loss`` (and ``lr`` read from the optimizer's own step counter when it follows a
    schedule); ``rec.epoch_end(**metrics)`` logs epoch time, throughput, mean loss and your
    metrics at step = epoch::

        grad_fn = mindspore.value_and_grad(forward, None, optimizer.parameters)
        with record_training(net, optimizer, loss_fn, dataset=train_ds, epochs=5) as rec:
            for epoch in range(5):
                for x, y in train_ds.create_tuple_iterator():
                    loss, grads = grad_fn(x, y)
                    optimizer(grads)
                    rec.step(loss, batch=x, grads=grads)  # grads: optional, grad_norm
                rec.epoch_end(val_accuracy=evaluate(net, val_ds))

    ``data_sample`` (True: 16 rows, an int: that many, False: off) draws the first batch as
    the loop receives it (see `LineageCallback`): pass the whole row, ``batch=(x, y)``, to
    the first ``rec.step`` to draw exactly that batch with its labels; given only ``x`` (or
    nothing), the recorder reads the first batch from ``dataset`` itself.

    Leaving the ``with`` block ends the run (FAILED on an exception) when the recorder
    started it; without ``with``, call ``rec.end()``.

    Args:
        network: the network trained (a ``mindspore.nn.Cell``): its class, parameter counts,
            frozen weights and ``repr`` are recorded.
        optimizer: the ``mindspore.nn.Optimizer`` that updates it: its hyperparameters and lr
            schedule are recorded, and the weights it updates count as trainable (the rest as
            frozen) and are the ones ``weight_stats`` measures.
        loss_fn: the loss cell, recorded as ``loss_fn.name`` and its constructor arguments;
            None: not recorded.
        dataset: the training dataset pipeline: its size, sources, fingerprint and pipeline
            are recorded, and the data sample is read from it when the first ``rec.step``
            is not given the whole row; None: not recorded.
        val_dataset: the validation dataset pipeline, described the same way under ``val``;
            None: not recorded.
        epochs: the epochs the loop will run, logged as ``epochs`` and used to tabulate a
            dynamic lr schedule in ``lr_schedule.json``; None: not logged.
        batch_size: rows per batch, logged as ``batch_size`` (over the dataset's own) and
            used for throughput when a step's batch does not tell its rows; None: the
            dataset's batch size, when it has one.
        loss_scaler: the ``mindspore.amp`` loss scaler of the loop, its settings logged as
            ``loss_scale.*``; None: not recorded.
        params: extra parameters to log, str names mapped to values; they take the place of
            what the recorder reads under the same names, and None values are skipped.
        run: the `lineage.Run` the loop is recorded into; None: the active lineage run, or
            else a new run in ``experiment`` (under the tuner, the trial's run
            ``MLFLOW_RUN_ID`` names) that the recorder ends.
        experiment: the experiment a new run is created in; None: `lineage.start_run`'s
            default.
        log_every: per-step metrics every N steps (an int >= 1).
        checkpoints: upload the network's weights as the run's artifact
            ``checkpoints/<network class>-<epoch>.ckpt``: False: never, True: at every
            ``rec.epoch_end``, ``"last"``: once, when the recording ends FINISHED. (The
            tuner's trial checkpoints are `resumable_epochs`' and `save_checkpoint`'s.)
        fingerprint_data: hash the training data.
        all_ranks: record on every rank, not only rank 0.
        weight_stats: log ``weight_norm`` and ``weight_delta`` each epoch (None: for models
            up to `lineage.training.AUTO_WEIGHT_LIMIT` trainable elements).
        data_sample: rows of the first batch to draw (True: 16, an int: that many, False:
            off).

    Returns:
        The started `TrainingRecorder`; as a context manager it ends the run it started on
        leaving the block. On a rank that does not record, every call of it does nothing.

    Raises:
        UsageError: a recording option is not what it must be, or ``checkpoints`` is not
            False, True or ``"last"`` (named, before anything is recorded); or starting a new
            run refused an argument or the environment (see `lineage.start_run`).
        StoreError: the store cannot be opened or refuses a new run.
    """
    options = RecorderOptions.of(locals())
    rec = TrainingRecorder(options, checkpoints=checkpoints)
    rec.begin(
        network=network,
        optimizer=optimizer,
        loss_fn=loss_fn,
        train_dataset=dataset,
        epochs=epochs,
        batch_size=batch_size,
        loss_scale_manager=loss_scaler,
        params=params,
    )
    if val_dataset is not None:
        rec.describe_eval_dataset(val_dataset)
    return rec
