"""`LineageCallback` for the Hugging Face ``Trainer``: the watcher fed by the Trainer's events."""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from lineage.pytorch import Trial, Watcher

# Trainer log keys the watcher records itself (loss, lr from the optimizer) or bookkeeping.
_NOT_METRICS = frozenset({"learning_rate", "epoch", "loss"})


def _arguments(args: TrainingArguments) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.to_dict().items():
        if isinstance(value, bool | int | float | str) and "token" not in key:
            out[f"args.{key}"] = value
    return out


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
    reports under ``torchrun`` unless ``all_ranks=True``.
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
    ) -> None:
        self.monitor = monitor
        self.evaluations = 0
        self.watcher = Watcher(
            run=run,
            experiment=experiment,
            data_sample=data_sample,
            fingerprint_data=fingerprint_data,
            all_ranks=all_ranks,
            trial=trial,
        )

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
        params = _arguments(args)
        params["epochs"] = args.num_train_epochs
        w.begin(
            model,
            optimizer,
            scheduler=lr_scheduler,
            loader=train_dataloader,
            params=params,
        )

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
        chosen = values
        if self.monitor is not None:
            chosen = {self.monitor: values[self.monitor]} if self.monitor in values else {}
        self.evaluations += 1
        step = self.evaluations
        if self.watcher.epoch_end(step, report=chosen, **values):
            control.should_training_stop = True

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.watcher.close("FINISHED")
