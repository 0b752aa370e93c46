"""`TrainingRecorder`: what one MindSpore training records, whoever drives it.

`LineageCallback` (``Model.train``/``Model.fit``) and `record_training` (functional loops
with ``mindspore.value_and_grad``) both feed this one object, so the two paths record the
same names:

params      optimizer.name, optimizer.lr | optimizer.lr_schedule(.*), optimizer.<every
            constructor argument> (momentum, weight_decay, beta1, beta2, eps, loss_scale, ...),
            loss_fn.name(.*), network.name, network.module, trainable_params, frozen_params,
            total_params, epochs, batch_size, steps_per_epoch, train_size, val_size,
            device.target, device.id, device.count, mode, parallel_mode, amp_level,
            loss_scale.*, seed, dataset_seed
tags        frozen_params (count), lineage.framework.mindspore (version),
            lineage.data.{train,val}.{kind,path,fingerprint,samples}
metrics     per global step: loss, lr (when the lr changes over steps; ``lr.group<i>`` for
            other parameter groups), loss_scale (dynamic loss scaling), grad_norm (when the
            loop passes its gradients);
            per epoch (step = epoch number, as ``tuner.trial.report`` uses): train_loss (mean
            of the epoch's logged losses), epoch_time, train_time, throughput (samples/s),
            weight_norm, weight_delta, eval_time, val_<metric> for every evaluation
            (``val_loss`` from ``eval_loss``)
            data.train.<column>.{min,mean,max,std} at step 0: the first batch (data_sample)
artifacts   frozen_params.json, model/network.txt, dataset/<role>_pipeline.json and its
            picture dataset/<role>_pipeline.png, lr_schedule.json (dynamic lr),
            checkpoints/*.ckpt (when asked); with data_sample: dataset/train_sample.png
            (image grid), dataset/train_sample_table.png (other tensors),
            dataset/train_sample.json
tags (data) lineage.data.train.columns: per column kind, dtype, shape, the value range the
            pipeline implies, the class count; lineage.data.<role>.{sample,graph}_error
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import mindspore as ms

from lineage import tags as T
from lineage._errors import UsageError
from lineage.mindspore import _introspect as intro
from lineage.mindspore._data_record import DataRecord
from lineage.mindspore._epoch import EpochMeter, host_arrays, host_copy
from lineage.training import (
    ArtifactFolder,
    ParamLog,
    RecorderOptions,
    WeightStats,
    acquire_run,
    exit_status,
    global_norm,
    weight_stats_wanted,
)

_MAX_SCHEDULE_POINTS = 100_000


CHECKPOINT_MODES = (False, True, "last")


class TrainingRecorder:
    """Records one MindSpore training into a lineage run.

    ``options`` (`lineage.training.RecorderOptions`, or its fields as keywords): the run to
    record into (by default the active run, else a new run in ``options.experiment``,
    attached to ``MLFLOW_RUN_ID`` under the tuner, that this recorder also ends),
    ``log_every`` (per-step metrics every N steps), ``weight_stats`` (``weight_norm`` and ``weight_delta``, the L2 norm of the
    trainable weights and of their change since the previous epoch, at every epoch end; by
    default on for models up to 50 million trainable weights: it keeps one host copy of
    them), ``all_ranks`` (in data-parallel training, and in any process a launcher ranked,
    ``RANK_ID``, ``RANK``, only rank 0 records and every call is a no-op on other ranks
    unless it is True), ``fingerprint_data`` and ``data_sample`` (draw the first training
    batch as the network receives it: an image grid with labels, a table of other tensors,
    per-column statistics, see :mod:`lineage.mindspore._sample`; taken from the ``batch``
    given to the first `step` when that holds every dataset column, else from a fresh
    iterator over the training dataset). ``checkpoints``: False, True (every epoch) or
    ``"last"``.

    Not thread-safe: drive it from the training loop's thread.
    """

    def __init__(
        self,
        options: RecorderOptions | None = None,
        *,
        checkpoints: bool | str = False,
        **settings: Any,
    ) -> None:
        self.options = RecorderOptions.given(options, settings)
        if checkpoints not in CHECKPOINT_MODES:
            raise UsageError(f"checkpoints must be False, True or 'last', got {checkpoints!r}")
        self.run = self.options.run
        self.log_every = self.options.log_every
        self.checkpoints = checkpoints
        self._weight_stats: WeightStats | None = None
        self.disabled = False
        self.owns_run = False
        self.global_step = 0
        self.epoch = 0
        self._params = ParamLog()
        self.network: Any = None
        self.optimizer: Any = None
        self._lr: intro.LrEvaluator | None = None
        self._files = ArtifactFolder()
        self._data: DataRecord | None = None
        self._began = False
        self._ended = False
        #: Draw the data sample from the training dataset, not from a step's batch (set by
        #: the callback in dataset sink mode, where a step's inputs are device placeholders).
        self.sample_from_dataset = False
        self._meter = EpochMeter(time.perf_counter())

    @property
    def ended(self) -> bool:
        return self._ended

    # -- run ---------------------------------------------------------------------------------
    @property
    def conflicts(self) -> dict[str, str]:
        """Params not logged because the script had logged another value: key -> value."""
        return self._params.conflicts

    def _acquire(self) -> Any:
        if self.run is None:
            self.run, self.owns_run = acquire_run(None, self.options.experiment)
        return self.run

    def _log_params(self, params: Mapping[str, Any]) -> None:
        self._params.log(self.run, params)

    def _artifact(self, rel: str, content: Any) -> None:
        self._files.log(self.run, rel, content)

    def _data_record(self) -> DataRecord:
        if self._data is None:
            self._data = DataRecord(
                self._acquire(),
                self._files,
                fingerprint=self.options.fingerprint_data,
                sample_count=self.options.sample_rows,
            )
        return self._data

    # -- start -------------------------------------------------------------------------------
    def begin(
        self,
        *,
        network: Any,
        optimizer: Any = None,
        loss_fn: Any = None,
        train_dataset: Any = None,
        epochs: int | None = None,
        batch_size: int | None = None,
        device_number: int | None = None,
        parallel_mode: str | None = None,
        loss_scale_manager: Any = None,
        train_network: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> TrainingRecorder:
        """Record everything known before the first step. Returns ``self``."""
        rank = intro.rank()
        if not self.options.records_on(rank):
            self.disabled = True
            return self
        self._acquire()
        self.network, self.optimizer = network, optimizer
        values: dict[str, Any] = {}
        if optimizer is not None:
            values.update(intro.optimizer_params(optimizer))
            self._lr = intro.LrEvaluator(intro.learning_rates(optimizer))
        values.update(intro.cell_params("loss_fn", loss_fn))
        values["network.name"] = type(network).__name__
        values["network.module"] = type(network).__module__
        counts = intro.parameter_counts(network, optimizer)
        values["trainable_params"] = counts.trainable
        values["frozen_params"] = counts.frozen
        values["total_params"] = counts.total
        values["epochs"] = epochs
        values.update(intro.context_params(device_number, parallel_mode))
        values["device.rank"] = rank
        values["amp_level"] = intro.amp_level(train_network, network)
        values.update(intro.loss_scale_params(loss_scale_manager))
        info = None
        if train_dataset is not None:
            info = self._data_record().describe(train_dataset, "train")
            values.update(info.params())
            self._data_record().set_train(train_dataset, info)
        if batch_size is not None:
            values["batch_size"] = batch_size
        values.update(params or {})  # what the caller knows better (e.g. the Model's amp level)
        self._batch_rows = values.get("batch_size")
        self._log_params(values)
        self.run.set_tags(
            {
                T.FROZEN_PARAMS: len(counts.frozen_weights),
                T.framework_tag("mindspore"): ms.__version__,
            }
        )
        self._artifact("frozen_params.json", counts.frozen_weights)
        self._artifact("model/network.txt", repr(network))
        if self._lr is not None and self._lr.dynamic:
            self._schedule_artifact(epochs, info.steps if info else None)
        weights = [
            p
            for p in (getattr(optimizer, "parameters", None) or network.trainable_params())
            if p.requires_grad
        ]
        self._weight_stats = None
        if weights and weight_stats_wanted(self.options.weight_stats, counts.trainable):
            self._weight_stats = WeightStats(lambda: host_copy(weights))
        self._began = True
        self._meter.reset(time.perf_counter())
        return self

    def describe_eval_dataset(self, dataset: Any) -> None:
        """Record the validation dataset (once)."""
        if self.disabled or dataset is None or self._data_record().described("val"):
            return
        self._log_params(self._data_record().describe(dataset, "val").params())

    def _schedule_artifact(self, epochs: int | None, steps: int | None) -> None:
        assert self._lr is not None
        total = epochs * steps if epochs and steps else None
        doc: dict[str, Any] = {"kinds": [i.kind for i in self._lr.infos]}
        if total and total <= _MAX_SCHEDULE_POINTS:
            # The lr applied at each 1-based step k (the optimizer evaluates it at k - 1).
            doc["steps"] = total
            per_step = [self._lr.at(k - 1) for k in range(1, total + 1)]
            if len(self._lr.infos) == 1:
                doc["lr"] = [values[0] for values in per_step]
            else:  # one list per parameter group
                doc["lr"] = [list(group) for group in zip(*per_step, strict=True)]
        if self._lr.failed:
            doc["error"] = self._lr.failed
        self._artifact("lr_schedule.json", doc)

    def resumed(self, epoch: int, step: int | None = None) -> None:
        """Continue after a checkpoint restored into the network: the next epoch is
        ``epoch + 1`` and the next step ``step + 1``, and ``weight_delta`` measures from the
        restored weights."""
        self.epoch = int(epoch)
        if step is not None:
            self.global_step = int(step)
        if self._weight_stats is not None:
            self._weight_stats.reset()

    # -- per step ----------------------------------------------------------------------------
    def epoch_begin(self, epoch: int | None = None) -> None:
        """Start timing an epoch (optional: by default an epoch starts when the last ended)."""
        self.epoch = epoch - 1 if epoch is not None else self.epoch
        self._meter.reset(time.perf_counter())

    def step(
        self,
        loss: Any = None,
        *,
        outputs: Any = None,
        batch: Any = None,
        rows: int | None = None,
        step: int | None = None,
        grads: Any = None,
        **metrics: float,
    ) -> None:
        """Record one training step (or ``step - global_step`` steps in sink mode).

        ``loss``: the step's loss (a Tensor or a number); or ``outputs``: the train network's
        outputs (loss or (loss, overflow, loss_scale)). ``batch`` or ``rows`` count the samples
        for throughput (else the dataset's batch size). ``grads`` (the gradients of a
        ``value_and_grad`` loop) logs ``grad_norm``, their global L2 norm. Extra ``metrics``
        are logged as given.
        """
        if self.disabled:
            return
        if self.options.sample_rows and self._began and not self._data_record().sampled:
            data = self._data_record()
            started = time.perf_counter()
            data.from_dataset = self.sample_from_dataset
            data.log_sample(batch, self.network)
            self._meter.pause(time.perf_counter() - started)  # not training time
        now = time.perf_counter()
        new_step = self.global_step + 1 if step is None else int(step)
        done = max(new_step - self.global_step, 1)
        self.global_step = new_step
        n = rows if rows is not None else intro.batch_rows(batch)
        if n is None and self._batch_rows is not None:
            n = int(self._batch_rows) * done
        self._meter.step(now, done, n)
        if self.global_step % self.log_every and done < self.log_every:
            return
        values: dict[str, float] = {}
        source = outputs if outputs is not None else loss
        value = intro.loss_value(source)
        if value is not None:
            values["loss"] = value
            self._meter.loss(value)
        scale = intro.loss_scale_value(outputs)
        if scale is not None:
            values["loss_scale"] = scale
        if self._lr is not None and self._lr.dynamic:
            applied = intro.global_step(self.optimizer)
            index = (applied if applied is not None else self.global_step) - 1
            for i, lr in enumerate(self._lr.at(index)):
                if lr is not None:
                    values["lr" if i == 0 else f"lr.group{i}"] = lr
        if grads is not None:
            values["grad_norm"] = global_norm(host_arrays(grads))
        values.update({k: float(v) for k, v in metrics.items()})
        if values:
            self.run.log_metrics(values, step=self.global_step)

    # -- evaluation and epoch end -----------------------------------------------------------
    def evaluation(
        self,
        results: Mapping[str, Any],
        *,
        epoch: int | None = None,
        prefix: str = "val_",
        seconds: float | None = None,
    ) -> dict[str, float]:
        """Record an evaluation's metrics; ``eval_loss`` becomes ``val_loss``.

        Logged at ``epoch``, by default the epoch in progress (or the last one ended when
        no step ran since).
        """
        values: dict[str, float] = {}
        if self.disabled:
            return values
        for key, value in results.items():
            name = key
            if key == "eval_loss" and "loss" not in results:
                name = "loss"  # Model.fit adds eval_loss; a user metric named loss wins
            v = intro.scalar(value)
            if isinstance(v, int | float) and not isinstance(v, bool):
                values[f"{prefix}{name}"] = float(v)
        if seconds is not None:
            values["eval_time"] = seconds
        if epoch is None:
            epoch = self.epoch + 1 if self._meter.steps else max(self.epoch, 1)
        if values:
            self.run.log_metrics(values, step=int(epoch))
        return values

    def epoch_end(self, epoch: int | None = None, **metrics: float) -> dict[str, float]:
        """Close the current epoch: time, throughput, mean loss, and the given ``metrics``."""
        if self.disabled:
            return {}
        now = time.perf_counter()
        self.epoch = int(epoch) if epoch is not None else self.epoch + 1
        values = self._meter.summary(now)
        if self._weight_stats is not None:
            values.update(self._weight_stats.measure())
        values.update({k: float(v) for k, v in metrics.items()})
        self.run.log_metrics(values, step=self.epoch)
        if self.checkpoints is True:
            self.save_checkpoint()
        self._meter.reset(time.perf_counter())
        return values

    # -- checkpoints -------------------------------------------------------------------------
    def log_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Upload a checkpoint file written by someone else (e.g. ``ModelCheckpoint``)."""
        if self.disabled:
            return
        self.run.log_artifact(Path(path), "checkpoints")

    def save_checkpoint(self) -> None:
        """Save the network's weights after the current epoch and upload them."""
        if self.disabled:
            return
        path = self._files.path(f"checkpoints/{type(self.network).__name__}-{self.epoch}.ckpt")
        ms.save_checkpoint(self.network, str(path))
        self.log_checkpoint(path)
        path.unlink(missing_ok=True)

    # -- end ---------------------------------------------------------------------------------
    def end(self, status: str = "FINISHED") -> None:
        """Finish recording: final checkpoint when asked, then end the run if this recorder
        started it (a run it was given or found active is only flushed)."""
        if self._ended or self.run is None:
            return
        self._ended = True
        try:
            if status == "FINISHED" and self.checkpoints == "last" and self._began:
                self.save_checkpoint()
            if self._lr is not None and self._lr.failed:
                self.run.set_tags({T.LR_ERROR: self._lr.failed})
        finally:
            self._files.close()
            if self.owns_run:
                self.run.end(status)
            else:
                try:
                    self.run.flush()
                except Exception as exc:  # the owner ends the run and reports store errors
                    print(f"lineage.mindspore: flush failed: {exc}", file=sys.stderr)

    def __enter__(self) -> TrainingRecorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.end(exit_status(exc_type))
