"""PyTorch integration: record a plain training loop with one call.

::

    import lineage.pytorch

    with lineage.pytorch.watch(
        model, optimizer, scheduler=scheduler, loader=train_loader, experiment="digits"
    ) as w:                            # starts the run (on rank 0 only under torchrun)
        for epoch in range(epochs):
            for x, y in train_loader:
                ...
                optimizer.step()
                w.log(loss=loss)
            if w.epoch_end(epoch, val_accuracy=acc):
                break                  # pruned by the tuner (pass trial=tuner.trial)

Under the tuner, `save_checkpoint` after each epoch and `restore_checkpoint` before the first
make the loop resumable: a retried or resumed trial continues after its last saved epoch.

Importing this module imports torch; ``import lineage`` never does.
"""

from __future__ import annotations

from typing import Any

from lineage._require import require

require("torch", "pytorch")

import torch  # noqa: E402

from lineage.pytorch._checkpoint import (  # noqa: E402
    CHECKPOINT_FILE,
    apply_settings,
    check_every,
    optimizer_settings,
    restore_checkpoint,
    save_checkpoint,
)
from lineage.pytorch._checks import check_arguments  # noqa: E402
from lineage.pytorch._watch import Watcher  # noqa: E402
from lineage.training import RecorderOptions, Trial  # noqa: E402


def watch(
    model: torch.nn.Module | None,
    optimizer: Any,
    *,
    scheduler: Any = None,
    loader: Any = None,
    scaler: Any = None,
    run: Any = None,
    experiment: str | None = None,
    log_every: int = 1,
    grad_norm: bool = False,
    data_sample: bool | int = True,
    fingerprint_data: bool = True,
    all_ranks: bool = False,
    trial: Trial | None = None,
    params: dict[str, Any] | None = None,
    weight_stats: bool | None = None,
) -> Watcher:
    """Watch a training: record its model, optimizer (every hyperparameter per parameter group,
    defaults included), ``scheduler``, ``loader`` (batch size, dataset pipeline and its picture,
    fingerprint, a first-batch sample) and AMP ``scaler`` now, and lr (and with
    ``grad_norm=True`` the gradient norm) after every ``optimizer.step()``.

    Records into ``run``, else the active lineage run, else a new run in ``experiment``
    (attached to ``MLFLOW_RUN_ID`` under the tuner) that `Watcher.close` ends. ``trial``
    (``tuner.trial``) makes `Watcher.epoch_end` report to the tuner and answer whether the
    trial was pruned. ``weight_stats`` logs ``weight_norm`` and ``weight_delta`` each epoch
    (None: for models up to 50 million trainable elements, which are copied to the CPU once an
    epoch). On ranks other than 0 nothing is recorded unless ``all_ranks=True``.
    See :mod:`lineage.pytorch._watch` for every name recorded. A wrong argument raises
    `lineage.UsageError` naming it before anything is recorded.

    Args:
        model: the ``torch.nn.Module`` trained: its class, parameter counts, dtype, device,
            frozen weights and ``repr`` are recorded, and its trainable weights are the ones
            ``weight_stats`` measures; None: not recorded.
        optimizer: the ``torch.optim.Optimizer`` (or accelerate's or Lightning's wrapper of
            one): its hyperparameters are recorded and a hook logs lr (and ``grad_norm``)
            after each ``step()``; None: not recorded.
        scheduler: the lr scheduler (anything with a ``step`` method), recorded as
            ``scheduler.name`` and its scalar settings; None: not recorded.
        loader: the training ``DataLoader`` (any iterable): its batch size, sampler and
            dataset are recorded, and when it has a ``dataset``, the pipeline, fingerprint and
            first-batch sample; None: not recorded.
        scaler: the AMP ``torch.amp.GradScaler``, recorded as ``amp`` and ``loss_scale.*``;
            None: ``amp`` is logged False.
        run: a `lineage.Run` to record into; None: the active run, else a new run in
            ``experiment`` (attached to ``MLFLOW_RUN_ID`` under the tuner) that the recorder
            ends.
        experiment: the experiment a new run is created in; None: `lineage.start_run`'s
            default.
        log_every: per-step metrics every N steps (an int >= 1).
        grad_norm: log the gradients' global norm at each logged step.
        data_sample: rows of the first batch to draw (True: 16, an int: that many, False:
            off).
        fingerprint_data: hash the training data.
        all_ranks: record on every rank, not only rank 0.
        trial: ``tuner.trial``, to report to and be pruned by; None: no reports.
        params: extra parameters to log, str names mapped to values; they take the place of
            what the recorder reads under the same names, and None values are skipped.
        weight_stats: log ``weight_norm`` and ``weight_delta`` each epoch (None: for models
            up to `lineage.training.AUTO_WEIGHT_LIMIT` trainable elements).

    Returns:
        The started `Watcher`; as a context manager it closes on leaving the block, ending
        the run it started (FAILED on an exception, KILLED on Ctrl-C). On a rank that does
        not record, every call of it does nothing.

    Raises:
        UsageError: an argument or a recording option is not what it must be (named, before
            anything is recorded); or starting a new run refused an argument or the
            environment (see `lineage.start_run`).
        StoreError: the store cannot be opened or refuses a new run.
    """
    options = RecorderOptions.of(locals())
    check_arguments(
        model, optimizer, scheduler=scheduler, loader=loader, scaler=scaler, params=params
    )
    return Watcher(options).begin(
        model, optimizer, scheduler=scheduler, loader=loader, scaler=scaler, params=params
    )


__all__ = [
    "CHECKPOINT_FILE",
    "RecorderOptions",
    "Trial",
    "Watcher",
    "apply_settings",
    "check_every",
    "optimizer_settings",
    "restore_checkpoint",
    "save_checkpoint",
    "watch",
]
