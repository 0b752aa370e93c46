"""`Watcher`: what one PyTorch training records, whoever drives it (a plain loop, Lightning,
the Hugging Face Trainer).

params      optimizer.name, optimizer.<every key of optimizer.defaults> (the constructor's
            arguments with the defaults the script did not set), optimizer.param_groups,
            optimizer.group<i>.<key> where a group differs, scheduler.name, scheduler.<scalar
            settings>, network.name, network.module, trainable_params, frozen_params,
            total_params, precision, device.type, device.count, device.rank, amp,
            loss_scale.*, batch_size, steps_per_epoch, train_size, data.train.* (sampler,
            shuffle, workers, dataset class), and whatever the caller adds (hparams,
            TrainingArguments)
tags        lineage.framework.pytorch (version), frozen_params (count),
            lineage.data.train.{fingerprint,columns,sample_error,graph_error}
metrics     per optimizer step: lr (``lr.group<i>`` for other groups; logged when it
            changes), grad_norm (``grad_norm=True``), loss and step metrics passed to `log`;
            per epoch (step = epoch number from 1, as ``tuner.trial.report`` uses): train_loss (mean
            of the epoch's logged losses), epoch_time, weight_norm and weight_delta (the L2
            norm of the trainable weights and of their change over the epoch; ``weight_stats``),
            and the metrics passed to `epoch_end`; data.train.<column>.{min,mean,max,std} at
            step 0 (the first batch; label columns' ``classes`` in the columns tag)
artifacts   frozen_params.json, model/network.txt, dataset/train_pipeline.json and its picture
            dataset/train_pipeline.png, dataset/train_sample.png (images),
            dataset/train_sample_table.png (other tensors), dataset/train_sample.json

The per-step work on the training thread is a counter, a read of each group's lr and, when it
changed, one buffered metric point; the store is written by the run's own writer thread. A
loss or gradient norm still on an accelerator is kept as a tensor and read in one batch every
`DEFERRED_POINTS` points and at each epoch's end, so a step never waits for the device. What
is recorded about the data is made before the first step, in a child process and at the end
(see :mod:`lineage.pytorch._data`), never beside the steps.
"""

from __future__ import annotations

import atexit
import contextlib
import time
from collections.abc import Mapping
from typing import Any

import torch

from lineage import tags as T
from lineage._errors import UsageError
from lineage.pytorch import _introspect as intro
from lineage.pytorch._checks import unwrap
from lineage.pytorch._data import DataRecord
from lineage.pytorch._weights import weight_stats
from lineage.training import (
    ArtifactFolder,
    ParamLog,
    RecorderOptions,
    Trial,
    WeightStats,
    acquire_run,
    exit_status,
)

#: Points of accelerator tensors kept before they are read (one device sync) and logged.
DEFERRED_POINTS = 256


def _number(value: Any) -> float:
    return float(value.detach() if isinstance(value, torch.Tensor) else value)


def _read_all(values: list[Any]) -> list[float]:
    """Numbers and one-element tensors as floats, the tensors of each device read at once."""
    out: list[float] = [0.0] * len(values)
    by_device: dict[Any, list[int]] = {}
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            by_device.setdefault(v.device, []).append(i)
        else:
            out[i] = float(v)
    for device, idx in by_device.items():
        wide = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
        stacked = torch.stack([values[i].reshape(()).to(wide) for i in idx])
        for i, v in zip(idx, stacked.tolist(), strict=True):
            out[i] = v
    return out


def _from_rank_zero(flag: bool) -> bool:
    """Rank 0's ``flag`` on every rank of an initialized torch.distributed group of more than
    one process (a collective: every rank calls it), else ``flag``."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return flag
    # NCCL moves only CUDA tensors; a mixed backend ("cpu:gloo,cuda:nccl") takes CPU ones.
    on_cuda = dist.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if on_cuda else None
    value = torch.tensor([int(flag)], dtype=torch.int32, device=device)
    dist.broadcast(value, src=0)
    return bool(value.item())


class Watcher:
    """Records one PyTorch training into a lineage run; made by :func:`watch`, or from
    ``options`` (a `lineage.training.RecorderOptions`) or the same settings as keywords.

    Not thread-safe: call `log` and `epoch_end` from the training loop's thread. On a rank
    other than 0 (``torchrun``, DDP) every method is a no-op unless ``all_ranks=True``, but
    `epoch_end` and `report` under torch.distributed return rank 0's pruning decision.
    """

    def __init__(self, options: RecorderOptions | None = None, **settings: Any) -> None:
        options = RecorderOptions.given(options, settings)
        self.options = options
        self.run = options.run
        self.log_every = options.log_every
        self.trial: Trial | None = options.trial
        self.all_ranks = options.all_ranks
        self._weights: WeightStats | None = None
        self.rank = intro.rank()
        self.disabled = not options.records_on(self.rank)
        self.owns_run = False
        self.global_step = 0
        self.epoch = 0
        self.pruned = False
        self._params = ParamLog()
        self._optimizer: Any = None
        self._hooks: list[Any] = []
        self._last_lr: list[float] = []
        self._losses: list[Any] = []  # numbers and tensors, read at the epoch's end
        self._deferred: list[tuple[str, torch.Tensor, int, int]] = []
        self._epoch_started = time.perf_counter()
        self._data: DataRecord | None = None
        self._files = ArtifactFolder()
        self._closed = False
        self._classes: int | None = None

    # -- start -------------------------------------------------------------------------------
    def begin(
        self,
        model: torch.nn.Module | None,
        optimizer: torch.optim.Optimizer | None,
        *,
        scheduler: Any = None,
        loader: Any = None,
        scaler: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Watcher:
        """Record what is known before the first step and hook the optimizer. Returns self."""
        if self.disabled or self._closed:
            return self
        self._acquire()
        values: dict[str, Any] = {"device.rank": self.rank}
        frozen: list[str] = []
        if model is not None:
            found, frozen = intro.model_params(model)
            values.update(found)
            self._weights = weight_stats(model, self.options.weight_stats)
            self._classes = intro.output_size(model)
        if optimizer is not None:
            optimizer = unwrap(optimizer)
            self.attach_optimizer(optimizer)
            values.update(intro.optimizer_params(optimizer))
        values.update(intro.scheduler_params(scheduler))
        values.update(intro.scaler_params(scaler))
        if loader is not None:
            values.update(intro.loader_params(loader))
        values.update(params or {})
        self.log_params(values)
        self.run.set_tags(
            {T.framework_tag("pytorch"): torch.__version__, T.FROZEN_PARAMS: len(frozen)}
        )
        self._files.log(self.run, "frozen_params.json", frozen)
        if model is not None:
            self._files.log(self.run, "model/network.txt", repr(model))
        if loader is not None and getattr(loader, "dataset", None) is not None:
            self._data = DataRecord(
                self.run,
                count=self.options.sample_rows,
                classes=self._classes,
                fingerprint_data=self.options.fingerprint_data,
            )
            self._data.start(loader)
        self._epoch_started = time.perf_counter()
        return self

    def attach_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Count steps and log lr (and grad_norm) after each ``optimizer.step()``."""
        if self.disabled or optimizer is self._optimizer:
            return
        for hook in self._hooks:
            hook.remove()
        self._optimizer = optimizer
        self._last_lr = [float("nan")] * len(optimizer.param_groups)
        self._hooks = [optimizer.register_step_post_hook(self._after_step)]
        if self.options.grad_norm:
            self._hooks.append(optimizer.register_step_pre_hook(self._before_step))

    def _acquire(self) -> None:
        if self.run is None:
            self.run, self.owns_run = acquire_run(None, self.options.experiment)
            if self.owns_run:
                # At interpreter exit only the watcher's own work is done; lineage's exit
                # handler, registered before this one and so run after it, ends the run
                # FINISHED, FAILED (an uncaught exception) or KILLED (a signal).
                atexit.register(self._release)

    @property
    def conflicts(self) -> dict[str, str]:
        """Params not logged because the script had logged another value: key -> value."""
        return self._params.conflicts

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Log parameters one at a time: a value the script already logged differently (MLflow
        params are immutable) is kept, and the clash goes to a tag instead of failing."""
        if self.disabled:
            return
        self._acquire()
        self._params.log(self.run, params)

    def resumed(self, epoch: int, global_step: int | None = None) -> None:
        """Continue numbering after a checkpoint: the next `epoch_end` is ``epoch + 1`` and
        the next optimizer step ``global_step + 1``, so the run's curves do not repeat steps."""
        self.epoch = int(epoch)
        if global_step is not None:
            self.global_step = int(global_step)
        self._last_lr = [float("nan")] * len(self._last_lr)

    # -- per step ----------------------------------------------------------------------------
    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if (self.global_step + 1) % self.log_every:
            return
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if grads:
            self._point("grad_norm", torch.nn.utils.get_total_norm(grads), self.global_step + 1)

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.global_step += 1
        if self.global_step % self.log_every:
            return
        last = self._last_lr
        for i, group in enumerate(optimizer.param_groups):
            lr = group.get("lr")
            if i < len(last) and lr != last[i] and isinstance(lr, float | int):
                last[i] = lr
                self.run.log_metric("lr" if i == 0 else f"lr.group{i}", lr, self.global_step)

    def _point(self, key: str, value: Any, step: int) -> None:
        if isinstance(value, torch.Tensor) and value.device.type != "cpu" and value.numel() == 1:
            self._deferred.append((key, value.detach(), step, int(time.time() * 1000)))
            if len(self._deferred) >= DEFERRED_POINTS:
                self._flush_deferred()
        else:
            self.run.log_metric(key, _number(value), step)

    def _flush_deferred(self) -> None:
        points, self._deferred = self._deferred, []
        if not points:
            return
        values = _read_all([p[1] for p in points])
        for (key, _, step, ts), value in zip(points, values, strict=True):
            self.run.log_metric(key, value, step, ts)

    def log(self, loss: Any = None, step: int | None = None, **metrics: Any) -> None:
        """Log the step's ``loss`` (a tensor or a number) and other step metrics at ``step``
        (default: the optimizer steps taken so far). The loss also feeds ``train_loss``."""
        if self.disabled or self.run is None:
            return
        at = self.global_step if step is None else step
        if loss is not None:
            on_device = isinstance(loss, torch.Tensor) and loss.device.type != "cpu"
            loss = loss.detach() if on_device else _number(loss)
            self._losses.append(loss)
            if at % self.log_every == 0:
                self._point("loss", loss, at)
        for key, value in metrics.items():
            self._point(key, value, at)

    # -- per epoch ---------------------------------------------------------------------------
    def epoch_end(
        self, epoch: int | None = None, *, report: Mapping[str, Any] | None = None, **metrics: Any
    ) -> bool:
        """Log the epoch's metrics at step ``epoch`` (default: 1 for the first epoch, then
        counting on, as MindSpore numbers epochs and ``tuner.trial.report`` expects), with
        ``train_loss`` and ``epoch_time``; under the tuner report ``report`` (default: the
        metrics given). Returns True when the tuner pruned the trial (the loop should stop)."""
        at = self.epoch + 1 if epoch is None else int(epoch)
        self.epoch = at
        if self.disabled or self.run is None:
            return self.report(at, {})  # takes rank 0's decision under torch.distributed
        values = {k: _number(v) for k, v in metrics.items()}
        now = time.perf_counter()
        epoch_values = dict(values)
        epoch_values["epoch_time"] = now - self._epoch_started
        if self._weights is not None:
            epoch_values.update(self._weights.measure())
        self._flush_deferred()
        if self._losses:
            losses = _read_all(self._losses)
            epoch_values["train_loss"] = sum(losses) / len(losses)
        self._losses.clear()
        self._epoch_started = now
        self.run.log_metrics(epoch_values, step=at)
        if report is not None:
            values = {k: _number(v) for k, v in report.items()}
        return self.report(at, values)

    def report(self, step: int, metrics: Mapping[str, float]) -> bool:
        """Report ``metrics`` to the tuner (when watching a trial); True once pruned.

        Under torch.distributed with several processes every rank must call it (as
        `epoch_end` does on every rank): rank 0 asks the tuner and the others get its answer,
        so all of them stop at the same step."""
        if self.trial is None:
            return False
        pruned = self.pruned
        if not self.disabled:
            if metrics:
                self.trial.report(step, **metrics)
            pruned = pruned or self.trial.should_prune()
        if _from_rank_zero(pruned) and not self.pruned:
            self.pruned = True
            if self.run is not None and not self.disabled:
                self.run.set_tags({T.PRUNED_AT: step})
        return self.pruned

    # -- end -------------------------------------------------------------------------------
    def close(self, status: str = "FINISHED") -> None:
        """Remove the hooks, wait for the data pictures, and end the run with ``status`` if
        this watcher started it. Safe to call more than once."""
        if self._closed:
            return
        self._release()
        if self.run is not None and self.owns_run:
            self.run.end(status)

    def _release(self) -> None:
        """Everything `close` does but ending the run."""
        if self._closed:
            return
        self._closed = True
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        # The run may have been ended under the watcher; then these have nowhere to go.
        with contextlib.suppress(UsageError):
            self._flush_deferred()
        if self._data is not None:
            with contextlib.suppress(UsageError):
                self._data.finish()
        self._files.close()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close(exit_status(exc_type))
