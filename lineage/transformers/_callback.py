"""`LineageCallback` for the Hugging Face ``Trainer``: the watcher fed by the Trainer's events."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from lineage import checkpoints, pausing
from lineage._errors import UsageError, exiting_on_bad_environment
from lineage.pytorch import Watcher, apply_settings, check_every
from lineage.training import RecorderOptions, Trial

# Trainer log keys the watcher records itself (loss, lr from the optimizer) or bookkeeping.
_NOT_METRICS = frozenset({"learning_rate", "epoch", "loss"})


def _arguments(args: TrainingArguments) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.to_dict().items():
        if isinstance(value, bool | int | float | str) and "token" not in key:
            out[f"args.{key}"] = value
    return out


def resume_path() -> str | None:
    """The checkpoint folder to pass as ``trainer.train(resume_from_checkpoint=resume_path())``:
    the one the tuner hands an attempt that continues earlier work (a retry, ``tuner
    resume``), None for a fresh start and outside the tuner. The Trainer then restores the
    weights, optimizer, scheduler, random states and its step count, and skips the batches
    already trained."""
    with exiting_on_bad_environment():
        point = checkpoints.resume_point()
    return None if point is None else str(point[0])


def _settings(args: TrainingArguments, optimizer: Any) -> list[dict[str, Any]]:
    """Each parameter group's hyperparameters as ``args`` sets them. The Trainer builds its
    groups with ``args.weight_decay`` first, then a group without decay (biases, norms):
    the first group takes ``args.weight_decay``, a later one only when it has decay."""
    out = []
    for i, group in enumerate(optimizer.param_groups):
        values = {k: v for k, v in group.items() if k not in ("params", "initial_lr")}
        values["lr"] = args.learning_rate
        if "weight_decay" in group and (i == 0 or group["weight_decay"]):
            values["weight_decay"] = args.weight_decay
        if "betas" in group:
            values["betas"] = (args.adam_beta1, args.adam_beta2)
        if "eps" in group:
            values["eps"] = args.adam_epsilon
        out.append(values)
    return out


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another filesystem, or one without hard links
        shutil.copy2(src, dst)


class LineageCallback(TrainerCallback):
    """Record a ``transformers.Trainer`` training into the lineage store::

        Trainer(model, args, train_dataset=..., callbacks=[LineageCallback(trial=tuner.trial)])

    At ``on_train_begin``: every field of ``TrainingArguments`` as ``args.<name>`` (the
    defaults the script did not set included; tokens and other secrets are left out), and
    everything `lineage.pytorch.watch` records of the model, the Trainer's optimizer and
    scheduler and its training dataloader. At each Trainer log: ``loss``, ``grad_norm`` and
    lr per optimizer step. At each evaluation (step = evaluation number from 1, the
    epoch when evaluating every epoch): every metric, ``eval_<name>`` recorded as ``val_<name>``, and
    ``epoch_time`` and ``train_loss``.

    ``trial`` (``tuner.trial``): report ``monitor`` (a ``val_`` name, default every
    evaluation metric) after each evaluation, and when the tuner prunes the trial set
    ``control.should_training_stop`` so the Trainer ends cleanly (its own saving and the run
    close as usual). Only the main process (``state.is_world_process_zero``) records and
    reports under ``torchrun`` unless ``all_ranks=True``. ``weight_stats``: as for
    `lineage.pytorch.watch` (``weight_norm`` and ``weight_delta`` at each evaluation).

    Under the tuner (``TUNER_CHECKPOINT_DIR`` set) the callback asks the Trainer to save a
    checkpoint (``control.should_save``) every ``checkpoint_every`` evaluations and at the
    evaluation after the last step (0: never; None: the campaign's ``checkpoint.every``,
    ``TUNER_CHECKPOINT_EVERY``, read when the training starts) and places the folder the Trainer wrote into the trial's checkpoint folder (moved when
    ``save_strategy`` is ``"no"``, else hard-linked so the Trainer's own rotation keeps
    working), committed under the evaluation number. An interrupted trial continues with
    ``trainer.train(resume_from_checkpoint=resume_path())``. The Trainer restores the
    optimizer and scheduler from the checkpoint; when the attempt continues it with other
    values of some hyperparameters (``TUNER_RESUME_CHANGED``, as population-based
    training's explore step sets it), the callback gives them back the values of
    ``TrainingArguments`` (each group's lr, weight decay, Adam's betas and eps), keeping the
    optimizer's state and the schedule's position. At an evaluation where the tuner may
    pause the trial (an ASHA rung with ``mode: promote``) the commit waits for the
    controller's verdict on the evaluation's report, and a paused trial's training stops
    there (``control.should_training_stop``). A refused ``TUNER_*`` value ends the process
    with one line and exit status 2.

    Args:
        trial: ``tuner.trial``, to report to and be pruned by; None: no reports.
        monitor: the one evaluation metric reported to ``trial``, a ``val_`` name; None:
            every evaluation metric. With a ``trial``, a name the evaluation lacks raises
            `UsageError` at the first evaluation.
        run: a `lineage.Run` to record into; None: the active run, else a new run in
            ``experiment`` (attached to ``MLFLOW_RUN_ID`` under the tuner) that the recorder
            ends.
        experiment: the experiment a new run is created in; None: `lineage.start_run`'s
            default.
        data_sample: rows of the first batch to draw (True: 16, an int: that many, False:
            off).
        fingerprint_data: hash the training data.
        all_ranks: record on every rank, not only rank 0.
        checkpoint_every: evaluations between the trial checkpoints the Trainer is asked to
            save under the tuner (and at the evaluation after the last step); 0: never;
            None: the campaign's ``checkpoint.every``.
        weight_stats: log ``weight_norm`` and ``weight_delta`` at each evaluation (None: for
            models up to `lineage.training.AUTO_WEIGHT_LIMIT` trainable elements).

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
        data_sample: bool | int = True,
        fingerprint_data: bool = True,
        all_ranks: bool = False,
        checkpoint_every: int | None = None,
        weight_stats: bool | None = None,
    ) -> None:
        options = RecorderOptions.of(locals())
        check_every(checkpoint_every)
        self.monitor = monitor
        self.checkpoint_every = checkpoint_every
        self.evaluations = 0
        #: Evaluations between checkpoints in this training (0: none).
        self._every = 0
        #: The evaluation whose checkpoint the callback asked for (`on_save` places it).
        self._saving: int | None = None
        #: Whether `monitor` was found among an evaluation's metrics.
        self._monitor_found = False
        self.watcher = Watcher(options)

    @property
    def run(self) -> Any:
        return self.watcher.run

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: Any = None,
        optimizer: Any = None,
        lr_scheduler: Any = None,
        train_dataloader: Any = None,
        **kwargs: Any,
    ) -> None:
        w = self.watcher
        w.disabled = not w.all_ranks and not state.is_world_process_zero
        w.global_step = state.global_step
        point, changed = self._environment()
        tuned = w.trial is not None or bool(os.environ.get(checkpoints.CHECKPOINT_DIR))
        if tuned and str(getattr(args.eval_strategy, "value", args.eval_strategy)) == "no":
            warnings.warn(
                "LineageCallback reports to the tuner and saves checkpoints at evaluations, "
                "but TrainingArguments.eval_strategy is 'no': this training will report "
                "nothing (never pruned) and save no checkpoint for the trial; set "
                "eval_strategy='epoch' or 'steps'",
                UserWarning,
                stacklevel=1,
            )
        if changed and optimizer is not None:
            # The Trainer loaded the checkpoint's optimizer and scheduler, their lr included.
            apply_settings(optimizer, lr_scheduler, _settings(args, optimizer))
        if state.global_step > 0 and point is not None:
            # Resumed from the trial's checkpoint: evaluations are numbered on from its step.
            self.evaluations = point[1]
            w.resumed(point[1], state.global_step)
        params = _arguments(args)
        params["epochs"] = args.num_train_epochs
        w.begin(
            model,
            optimizer,
            scheduler=lr_scheduler,
            loader=train_dataloader,
            params=params,
        )

    def _environment(self) -> tuple[Any, list[str]]:
        """The resume point and the hyperparameters changed; sets the checkpoint interval."""
        self._every = 0
        if not os.environ.get(checkpoints.CHECKPOINT_DIR):
            return None, []
        with exiting_on_bad_environment():
            every = self.checkpoint_every
            self._every = checkpoints.every() if every is None else every
            return checkpoints.resume_point(), checkpoints.resume_changed()

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not logs or "loss" not in logs:
            return  # evaluation and end-of-training summaries come through on_evaluate
        metrics = {
            k: v for k, v in logs.items() if isinstance(v, int | float) and k not in _NOT_METRICS
        }
        self.watcher.log(loss=logs["loss"], step=state.global_step, **metrics)

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        values = {
            ("val_" + k.removeprefix("eval_")): float(v)
            for k, v in (metrics or {}).items()
            if isinstance(v, int | float) and k != "epoch"
        }
        self._check_monitor(values)
        chosen = values
        if self.monitor is not None:
            chosen = {self.monitor: values[self.monitor]} if self.monitor in values else {}
        self.evaluations += 1
        step = self.evaluations
        every = self._every
        last = bool(state.max_steps) and state.global_step >= state.max_steps
        if every and (step % every == 0 or last):
            self._saving = step
            control.should_save = True  # the Trainer saves next, then calls on_save
        if self.watcher.epoch_end(step, report=chosen, **values):
            control.should_training_stop = True

    def _check_monitor(self, values: dict[str, float]) -> None:
        # A misspelt monitor would report nothing, and so never prune: under the tuner it
        # fails at the first evaluation (as Lightning's EarlyStopping with strict=True).
        if self.monitor is None or self.watcher.trial is None or self._monitor_found:
            return
        if self.monitor not in values:
            names = ", ".join(sorted(values)) or "none"
            raise UsageError(
                f"LineageCallback(monitor=...) must name a metric of the evaluation, got "
                f"{self.monitor!r}; the evaluation's metrics are: {names}"
            )
        self._monitor_found = True

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        root = os.environ.get(checkpoints.CHECKPOINT_DIR)
        step = self._saving
        self._saving = None
        if not root or step is None:
            return
        if state.is_world_process_zero:
            self._commit(args, state, root, step)
        # On every rank (rank 0 decides for all): at an ASHA rung the commit waited for the
        # verdict on the evaluation's report, and a paused trial stops at this evaluation.
        if self.watcher.report(step, {}):
            control.should_training_stop = True

    def _commit(self, args: TrainingArguments, state: TrainerState, root: str, step: int) -> None:
        written = Path(args.output_dir or ".") / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if not written.is_dir():
            return
        folder = checkpoints.step_dir(root, step)
        shutil.rmtree(folder)
        if args.save_strategy == "no":
            shutil.move(written, folder)
        else:
            shutil.copytree(written, folder, copy_function=_link_or_copy)
        checkpoints.commit(folder, step)
        pausing.await_verdict(step)

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.watcher.close("FINISHED")
