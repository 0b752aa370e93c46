"""`LineageCallback` for ``lightning.Trainer``: the plain-loop watcher fed by Lightning's hooks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import lightning as L
import torch

from lineage import checkpoints, pausing
from lineage._errors import UsageError, exiting_on_bad_environment
from lineage.pytorch import Watcher, apply_settings, check_every, optimizer_settings
from lineage.training import RecorderOptions, Trial

CHECKPOINT_FILE = "lightning.ckpt"
"""The file the callback saves each checkpoint into, inside the trial's step folder."""

_TRAINER_SETTINGS = (
    "max_epochs",
    "max_steps",
    "accumulate_grad_batches",
    "gradient_clip_val",
    "gradient_clip_algorithm",
    "num_devices",
    "num_nodes",
    "world_size",
    "check_val_every_n_epoch",
    "val_check_interval",
)


def _scalars(values: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in values.items():
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            out[key] = float(value.detach())
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = float(value)
    return out


def resume_path() -> str | None:
    """The checkpoint file to pass as ``trainer.fit(..., ckpt_path=resume_path())``: the one the
    tuner hands an attempt that continues earlier work (a retry, ``tuner resume``), None for a
    fresh start and outside the tuner. Lightning then restores the weights, optimizer,
    schedulers, loops (epoch, global step) and callbacks' states itself."""
    with exiting_on_bad_environment():
        point = checkpoints.resume_point()
    return None if point is None else str(point[0] / CHECKPOINT_FILE)


class LineageCallback(L.Callback):
    """Record a Lightning training into the lineage store::

        trainer = L.Trainer(max_epochs=5, callbacks=[LineageCallback(trial=tuner.trial)])

    At ``on_train_start``: the module's ``hparams`` (as logged by ``save_hyperparameters``),
    the trainer's settings (``trainer.max_epochs``, ``trainer.precision``, strategy, devices,
    gradient clipping and accumulation), and everything `lineage.pytorch.watch` records of the
    model, the first optimizer and scheduler and the training dataloader. Per training batch:
    ``loss`` (the ``training_step``'s loss) and lr after each optimizer step. Per epoch (step =
    epoch number from 1): every scalar of ``trainer.callback_metrics`` (what ``self.log`` logged,
    validation included), ``train_loss`` and ``epoch_time``.

    ``trial`` (``tuner.trial``): report ``monitor`` (default: every epoch metric) after each
    epoch, and when the tuner prunes the trial set ``trainer.should_stop`` (agreed across DDP
    ranks), so Lightning ends the fit cleanly: checkpoints and the run close as usual.
    Only global rank 0 records and reports unless ``all_ranks=True``. ``run``, ``experiment``,
    ``log_every``, ``grad_norm``, ``data_sample``, ``weight_stats``: as for
    `lineage.pytorch.watch`.

    Under the tuner (``TUNER_CHECKPOINT_DIR`` set) the callback also saves the whole training
    state with ``trainer.save_checkpoint`` every ``checkpoint_every`` epochs (and after the
    last; 0: never; None: the campaign's ``checkpoint.every``, ``TUNER_CHECKPOINT_EVERY``,
    read when the fit starts) into the trial's checkpoint folder and commits it there, so an
    interrupted trial resumes with ``trainer.fit(..., ckpt_path=resume_path())``. When the
    attempt continues a checkpoint with other values of some hyperparameters
    (``TUNER_RESUME_CHANGED``, as population-based training's explore step sets it), the
    optimizer keeps the hyperparameters ``configure_optimizers`` gave it; the checkpoint
    gives its state and the schedule's position. A plain retry restores it whole. At an
    epoch where the tuner may pause the trial (an ASHA rung with ``mode: promote``) the
    commit waits for the controller's verdict on the epoch's report, and a paused trial's fit
    stops at that epoch (``trainer.should_stop``). A refused ``TUNER_*`` value ends the
    process with one line and exit status 2.

    Args:
        trial: ``tuner.trial``, to report to and be pruned by; None: no reports.
        monitor: the one epoch metric reported to ``trial``; None: every epoch metric. With
            a ``trial``, a name the epoch does not log raises `UsageError` at the first epoch
            whose validation ran.
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
        checkpoint_every: epochs between the trial checkpoints saved under the tuner (and
            after the last); 0: never; None: the campaign's ``checkpoint.every``.
        weight_stats: log ``weight_norm`` and ``weight_delta`` each epoch (None: for models
            up to `lineage.training.AUTO_WEIGHT_LIMIT` trainable elements).

    Raises:
        UsageError: a recording option or ``checkpoint_every`` is not what it must be (named, when
            the callback is made).
    """

    def __init__(
        self,
        *,
        trial: Trial | None = None,
        monitor: str | None = None,
        run: Any = None,
        experiment: str | None = None,
        log_every: int = 1,
        grad_norm: bool = False,
        data_sample: bool | int = True,
        fingerprint_data: bool = True,
        all_ranks: bool = False,
        checkpoint_every: int | None = None,
        weight_stats: bool | None = None,
    ) -> None:
        options = RecorderOptions.of(locals())
        super().__init__()
        check_every(checkpoint_every)
        self.monitor = monitor
        self.checkpoint_every = checkpoint_every
        #: Epochs between checkpoints in this fit (`checkpoint_every`, else the campaign's).
        self._every = 0
        self._settings: list[list[dict[str, Any]]] = []
        #: Whether this fit's training began (on_train_start), and its validation ran.
        self._started = False
        self._validated = False
        #: Whether `monitor` was found among an epoch's metrics.
        self._monitor_found = False
        self.watcher = Watcher(options)

    @property
    def run(self) -> Any:
        return self.watcher.run

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._every = 0
        self._settings = []
        self._started = self._validated = False
        if not os.environ.get(checkpoints.CHECKPOINT_DIR):
            return
        with exiting_on_bad_environment():
            every = self.checkpoint_every
            self._every = checkpoints.every() if every is None else every
            changed = checkpoints.resume_changed()
        if changed:
            # The optimizers as configure_optimizers built them, before Lightning loads a
            # checkpoint's optimizer states (hyperparameters included) into them.
            self._settings = [optimizer_settings(o) for o in trainer.optimizers]

    def _keep_settings(self, trainer: L.Trainer) -> None:
        # A continuation with explored hyperparameters (population-based training) trains
        # with them: the checkpoint gives the optimizer's state and the schedule's position.
        configs = {
            id(getattr(c.scheduler, "optimizer", None)): c.scheduler
            for c in trainer.lr_scheduler_configs
        }
        for optimizer, settings in zip(trainer.optimizers, self._settings, strict=False):
            if settings != optimizer_settings(optimizer):
                apply_settings(optimizer, configs.get(id(optimizer)), settings)

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.ckpt_path and self._settings:
            self._keep_settings(trainer)
        self._begin(trainer, pl_module)

    def _begin(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Record the fit's settings, model, optimizer and data (once per fit)."""
        self._started = True
        w = self.watcher
        w.disabled = not w.options.records_on(trainer.global_rank)
        optimizer = trainer.optimizers[0] if trainer.optimizers else None
        configs = trainer.lr_scheduler_configs
        params: dict[str, Any] = {
            f"trainer.{k}": getattr(trainer, k, None) for k in _TRAINER_SETTINGS
        }
        params["trainer.precision"] = str(trainer.precision)
        params["trainer.strategy"] = type(trainer.strategy).__name__
        params["trainer.accelerator"] = type(trainer.accelerator).__name__
        params.update(
            {
                k: v
                for k, v in dict(pl_module.hparams).items()
                if isinstance(v, bool | int | float | str)
            }
        )
        w.global_step = trainer.global_step
        w.begin(
            pl_module,
            optimizer,
            scheduler=configs[0].scheduler if configs else None,
            loader=trainer.train_dataloader,
            params=params,
        )

    def on_train_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if loss is not None:
            self.watcher.log(loss=loss)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            self._validated = True

    def _check_monitor(self, trainer: L.Trainer, metrics: Mapping[str, float]) -> None:
        # A misspelt monitor would report nothing, and so never prune: under the tuner it
        # fails at the first epoch whose validation ran (as EarlyStopping's strict check).
        if self.monitor is None or self.watcher.trial is None or self._monitor_found:
            return
        if self.monitor in metrics:
            self._monitor_found = True
        elif self._validated or not trainer.enable_validation:
            names = ", ".join(sorted(metrics)) or "none"
            raise UsageError(
                f"LineageCallback(monitor=...) must name a metric the epoch logs, got "
                f"{self.monitor!r}; the epoch's metrics are: {names}"
            )

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        w = self.watcher
        metrics = _scalars(trainer.callback_metrics)
        self._check_monitor(trainer, metrics)
        chosen = metrics
        if self.monitor is not None:
            chosen = {self.monitor: metrics[self.monitor]} if self.monitor in metrics else {}
        epoch = trainer.current_epoch + 1
        pruned = w.epoch_end(epoch, report=chosen, **metrics)
        # After the report: an attempt resumed from this epoch keeps the epoch's report.
        if self._save(trainer, epoch):
            # At an ASHA rung the save waited for the verdict on the report: ask again.
            pruned = w.report(epoch, {})
        # Rank 0 decides; every rank must stop at the same epoch or DDP hangs.
        if trainer.strategy.reduce_boolean_decision(pruned, all=False):
            trainer.should_stop = True

    def _save(self, trainer: L.Trainer, epoch: int) -> bool:
        """Save and commit the epoch's trial checkpoint when one is due (the same answer on
        every rank); whether one was."""
        root = os.environ.get(checkpoints.CHECKPOINT_DIR)
        every = self._every
        if not root or not every or (epoch % every and epoch != trainer.max_epochs):
            return False
        # Every rank takes part (the strategy gathers sharded state and waits at a barrier);
        # the strategy writes on global rank 0, which then commits the folder.
        folder = checkpoints.step_dir(root, epoch)
        trainer.save_checkpoint(folder / CHECKPOINT_FILE)
        if trainer.is_global_zero:
            checkpoints.commit(folder, epoch)
            pausing.await_verdict(epoch)
        return True

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not self._started:
            # Nothing was left to train (a checkpoint that already holds the last epoch):
            # Lightning skipped on_train_start, but the run still gets the fit's lineage.
            self._begin(trainer, pl_module)
        self.watcher.close("FINISHED")

    def on_exception(
        self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException
    ) -> None:
        self.watcher.close("KILLED" if isinstance(exception, KeyboardInterrupt) else "FAILED")
