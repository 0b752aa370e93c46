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
changed, one buffered metric point; the store is written by the run's own writer thread, and
the fingerprint, sample and pictures are made on a helper thread.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import torch

from lineage import tags as T
from lineage._errors import UsageError
from lineage.pytorch import _introspect as intro
from lineage.pytorch import _sample
from lineage.pytorch._weights import WeightStats, weight_stats

#: Rows drawn when ``data_sample=True``.
DEFAULT_SAMPLE = 16


class Trial(Protocol):
    """What a watcher needs of the tuner's in-trial API (``tuner.trial`` fits)."""

    def report(self, step: int, **metrics: float) -> None: ...

    def should_prune(self) -> bool: ...


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


def _unwrap(optimizer: Any) -> Any:
    # accelerate's AcceleratedOptimizer and Lightning's LightningOptimizer wrap the torch
    # optimizer; its hooks and hyperparameters live on the inner one.
    seen = 0
    while type(optimizer).__name__ != "Optimizer" and seen < 4:
        inner = getattr(optimizer, "optimizer", None)
        if not isinstance(inner, torch.optim.Optimizer):
            break
        optimizer, seen = inner, seen + 1
    return optimizer


def _number(value: Any) -> float:
    return float(value.detach() if isinstance(value, torch.Tensor) else value)


def _sample_count(value: Any) -> int:
    if value is True:
        return DEFAULT_SAMPLE
    if value is False or value is None:
        return 0
    if isinstance(value, int) and 1 <= value <= 256:
        return value
    raise UsageError(f"data_sample must be True, False or an int in [1, 256], got {value!r}")


class Watcher:
    """Records one PyTorch training into a lineage run; made by :func:`watch`.

    Not thread-safe: call `log` and `epoch_end` from the training loop's thread. On a rank
    other than 0 (``torchrun``, DDP) every method is a no-op unless ``all_ranks=True``.
    """

    def __init__(
        self,
        *,
        run: Any = None,
        experiment: str | None = None,
        log_every: int = 1,
        grad_norm: bool = False,
        data_sample: bool | int = True,
        fingerprint_data: bool = True,
        all_ranks: bool = False,
        trial: Trial | None = None,
        weight_stats: bool | None = None,
    ) -> None:
        if isinstance(log_every, bool) or not isinstance(log_every, int) or log_every < 1:
            raise UsageError(f"log_every must be an int >= 1, got {log_every!r}")
        self._count = _sample_count(data_sample)
        self.run = run
        self.experiment = experiment
        self.log_every = log_every
        self.grad_norm = grad_norm
        self.fingerprint_data = fingerprint_data
        self.all_ranks = all_ranks
        self.trial = trial
        self.weight_stats = weight_stats
        self._weights: WeightStats | None = None
        self.rank = intro.rank()
        self.disabled = not all_ranks and self.rank not in (None, 0)
        self.owns_run = False
        self.global_step = 0
        self.epoch = 0
        self.pruned = False
        self.conflicts: dict[str, str] = {}
        self._optimizer: Any = None
        self._hooks: list[Any] = []
        self._last_lr: list[float] = []
        self._losses: list[float] = []
        self._epoch_started = time.perf_counter()
        self._helper: threading.Thread | None = None
        self._tmp: Path | None = None
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
            self._weights = weight_stats(model, self.weight_stats)
            self._classes = intro.output_size(model)
        if optimizer is not None:
            optimizer = _unwrap(optimizer)
            self.attach_optimizer(optimizer)
            values.update(intro.optimizer_params(optimizer))
        values.update(intro.scheduler_params(scheduler))
        values.update(intro.scaler_params(scaler))
        if loader is not None:
            values.update(intro.loader_params(loader))
        values.update(params or {})
        self.log_params(values)
        self.run.set_tags(
            {T.framework_tag("pytorch"): torch.__version__, "frozen_params": len(frozen)}
        )
        self._artifact("frozen_params.json", frozen)
        if model is not None:
            self._artifact("model/network.txt", repr(model))
        if loader is not None and getattr(loader, "dataset", None) is not None:
            # Fingerprint, sample and pictures take a second or more: off the training thread.
            self._helper = threading.Thread(
                target=self._describe_data, args=(loader,), name="lineage-data", daemon=True
            )
            self._helper.start()
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
        if self.grad_norm:
            self._hooks.append(optimizer.register_step_pre_hook(self._before_step))

    def _acquire(self) -> None:
        if self.run is None:
            import lineage

            self.run = lineage.active_run()
            if self.run is None:
                self.run = lineage.start_run(experiment=self.experiment)
                self.owns_run = True
                atexit.register(self.close)

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Log parameters one at a time: a value the script already logged differently (MLflow
        params are immutable) is kept, and the clash goes to a tag instead of failing."""
        if self.disabled:
            return
        self._acquire()
        for key, value in params.items():
            if value is None:
                continue
            try:
                self.run.log_params({key: value})
            except UsageError:
                self.conflicts[key] = str(value)
        if self.conflicts:
            self.run.set_tags({"lineage.pytorch.conflicts": json.dumps(self.conflicts)[:4000]})

    def _tmp_file(self, rel: str) -> Path:
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="lineage-torch-"))
        path = self._tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _artifact(self, rel: str, content: Any) -> None:
        path = self._tmp_file(rel)
        text = content if isinstance(content, str) else json.dumps(content, indent=1, default=str)
        path.write_text(text, encoding="utf-8")
        parent = str(Path(rel).parent)
        self.run.log_artifact(path, None if parent == "." else parent)

    def _describe_data(self, loader: Any) -> None:
        # The run may be ended under the helper when the training fails early.
        with contextlib.suppress(UsageError):
            self._describe_data_into_run(loader)

    def _describe_data_into_run(self, loader: Any) -> None:
        # A picture or a fingerprint is never worth a failed training: errors become tags.
        dataset = loader.dataset
        steps: list[dict[str, Any]] = []
        try:
            steps = intro.pipeline(dataset)
            self._artifact("dataset/train_pipeline.json", {"pipeline": steps})
            path = _sample.draw_pipeline(
                steps,
                self._tmp_file("dataset/train_pipeline.png"),
                title="train data pipeline (source on top; the last step feeds the loader)",
            )
            self.run.log_artifact(path, "dataset")
        except Exception as exc:
            self.run.set_tags({T.data_tag("train", "graph_error"): _one_line(exc)})
        if self.fingerprint_data:
            digest = intro.fingerprint(dataset)
            if digest:
                self.run.set_tags({T.data_tag("train", "fingerprint"): digest})
        if self._count:
            try:
                n = min(self._count, len(dataset))
                # The first items through the dataset's transforms and the loader's collate:
                # the batch as the model receives it, without touching the loader's sampler
                # (a fresh iterator would draw from the shuffle's random generator).
                collate = getattr(loader, "collate_fn", None) or torch.utils.data.default_collate
                cols = _sample.columns(collate([dataset[i] for i in range(n)]))
                self.run.set_tags(
                    {
                        T.data_tag("train", "columns"): json.dumps(
                            _sample.describe(cols, classes=self._classes)
                        )[:4000]
                    }
                )
                self.run.log_metrics(_sample.statistics(cols), step=0)
                self._artifact(
                    "dataset/train_sample.json",
                    {name: a[:n].tolist() for name, a in cols.items() if a.size <= 65_536},
                )
                for path in _sample.draw_sample(
                    cols, self._tmp_file("dataset/x").parent, count=n, steps=steps
                ):
                    self.run.log_artifact(path, "dataset")
            except Exception as exc:
                self.run.set_tags({T.data_tag("train", "sample_error"): _one_line(exc)})

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
            norm = torch.nn.utils.get_total_norm(grads)
            self.run.log_metric("grad_norm", float(norm), self.global_step + 1)

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

    def log(self, loss: Any = None, step: int | None = None, **metrics: Any) -> None:
        """Log the step's ``loss`` (a tensor or a number) and other step metrics at ``step``
        (default: the optimizer steps taken so far). The loss also feeds ``train_loss``."""
        if self.disabled or self.run is None:
            return
        at = self.global_step if step is None else step
        if loss is not None:
            value = _number(loss)
            self._losses.append(value)
            if at % self.log_every == 0:
                self.run.log_metric("loss", value, at)
        for key, value in metrics.items():
            self.run.log_metric(key, _number(value), at)

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
            return False
        values = {k: _number(v) for k, v in metrics.items()}
        now = time.perf_counter()
        epoch_values = dict(values)
        epoch_values["epoch_time"] = now - self._epoch_started
        if self._weights is not None:
            epoch_values.update(self._weights.measure())
        if self._losses:
            epoch_values["train_loss"] = sum(self._losses) / len(self._losses)
        self._losses.clear()
        self._epoch_started = now
        self.run.log_metrics(epoch_values, step=at)
        if report is not None:
            values = {k: _number(v) for k, v in report.items()}
        return self.report(at, values)

    def report(self, step: int, metrics: Mapping[str, float]) -> bool:
        """Report ``metrics`` to the tuner (when watching a trial); True once pruned."""
        if self.disabled or self.trial is None:
            return False
        if metrics:
            self.trial.report(step, **metrics)
        if self.trial.should_prune():
            self.pruned = True
            if self.run is not None:
                self.run.set_tags({"lineage.pruned_at": step})
        return self.pruned

    # -- end -------------------------------------------------------------------------------
    def close(self, status: str = "FINISHED") -> None:
        """Remove the hooks, wait for the data pictures, and end the run if this watcher
        started it. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        if self._helper is not None:
            self._helper.join(timeout=60)
        if self.run is not None and self.owns_run:
            self.run.end(status)

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close("FINISHED")
        else:
            self.close("KILLED" if issubclass(exc_type, KeyboardInterrupt) else "FAILED")
