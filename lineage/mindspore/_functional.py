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
