"""`LineageCallback`: lineage for ``Model.train`` / ``Model.fit`` with no other user code."""

from __future__ import annotations

import inspect
import os
import time
from typing import Any

from mindspore.train import Callback

from lineage.mindspore import _introspect as intro
from lineage.mindspore._recorder import TrainingRecorder
from lineage.mindspore._resume import TrialResume
from lineage.training import RecorderOptions


def _find(cell: Any, *names: str) -> Any:
    """An attribute of a wrapper cell (TrainOneStepCell.optimizer, WithLossCell._loss_fn)."""
    seen = 0
    while cell is not None and seen < 4:
        for name in names:
            value = getattr(cell, name, None)
            if value is not None:
                return value
        cell = getattr(cell, "network", None) or getattr(cell, "_backbone", None)
        seen += 1
    return None


def _calling_model(limit: int = 40) -> tuple[Any, dict[str, Any]]:
    """The ``Model`` whose train/fit is running, and the locals of its training loop
    (``initial_epoch``, ``dataset_helper``): the cb_params carry none of them (nor the
    Model's amp level)."""
    from mindspore.train import Model

    frame = inspect.currentframe()
    while frame is not None and limit > 0:
        owner = frame.f_locals.get("self")
        if isinstance(owner, Model):
            return owner, dict(frame.f_locals)
        frame, limit = frame.f_back, limit - 1
    return None, {}


class LineageCallback(Callback):
    """Record a MindSpore training into the lineage store::

        model.fit(10, train_ds, valid_ds, callbacks=[LineageCallback()])

    At ``on_train_begin``: optimizer class and every hyperparameter (lr value or schedule,
    momentum, weight decay, betas, eps, loss scale), loss function, network class, trainable
    and frozen parameter counts (``frozen_params.json`` lists each frozen weight and why),
    epochs, batch size, steps per epoch, dataset sources, sizes, fingerprint and serialized
    pipeline, device target and count, parallel mode, mixed-precision level, seeds.
    Per step: ``loss`` (every ``log_every`` steps, buffered by the recording API), ``lr``
    when it follows a schedule, ``loss_scale`` under dynamic loss scaling. Per epoch:
    ``epoch_time``, ``train_time``, ``throughput`` (samples/s), ``train_loss``,
    ``weight_norm`` and ``weight_delta`` (see ``weight_stats``), and after
    every evaluation ``val_<metric>`` (all of them, not only the last evaluation).
    ``data_sample`` (default True: 16 rows; an int: that many; False: off) draws the first
    batch as the network receives it, after the pipeline: ``dataset/train_sample.png``, an
    image grid denormalised from the pipeline's ``Normalize`` with each label underneath, or
    ``dataset/train_sample_table.png`` for other tensors, plus per-column min/mean/max/std
    (metrics ``data.train.<column>.*`` at step 0) that ``lineage diagnose`` checks. Each
    serialized pipeline is also drawn, one box per operation, as
    ``dataset/<role>_pipeline.png`` beside its JSON.
    ``checkpoints=True`` uploads a checkpoint per epoch (the files a ``ModelCheckpoint`` in
    the same callback list writes, else its own), ``"last"`` only the final weights.

    Under the tuner (``TUNER_CHECKPOINT_DIR`` set) the callback also makes the trial
    resumable with no other code: it saves ``Model.train_network`` (the weights and the
    optimizer's state, ``global_step`` included: the learning-rate schedule's position) with
    the epoch and step into the trial's checkpoint folder every ``TUNER_CHECKPOINT_EVERY``
    epochs (the campaign's ``checkpoint.every``, default 1) and after the last, on rank 0;
    and when the tuner hands the attempt a checkpoint (``TUNER_RESUME_FROM``) it loads it
    before the first step and trains only the epochs left, numbered on from the
    checkpoint's epoch and step (see `TrialResume`), so the recorded curves and the
    script's own reports continue without a repeated step. Other callbacks see the
    continued numbers from ``on_train_epoch_begin`` of this callback on: put it first.
    A script that resumes on its own (``initial_epoch``, `restore_checkpoint`) or saves
    with `TrialCheckpoint` keeps doing so, and the callback then does not.

    ``run``: a `lineage.Run` to record into; default the active run, else a new run in
    ``experiment`` (attached to ``MLFLOW_RUN_ID`` under the tuner) that the callback ends
    when training ends. In data-parallel jobs, and in every process a launcher ranks (msrun's
    ``RANK_ID``, torchrun's ``RANK``), only rank 0 records unless ``all_ranks=True``: the
    other ranks start no run and log nothing.
    See `TrainingRecorder` for the exact names.

    Args:
        run: a `lineage.Run` to record into; None: the active run, else a new run in
            ``experiment`` (attached to ``MLFLOW_RUN_ID`` under the tuner) that the recorder
            ends.
        log_every: per-step metrics every N steps (an int >= 1).
        checkpoints: upload checkpoints as the run's artifacts: False: never, True: one per
            epoch, ``"last"``: only the final weights.
        experiment: the experiment a new run is created in; None: `lineage.start_run`'s
            default.
        fingerprint_data: hash the training data.
        all_ranks: record on every rank, not only rank 0.
        weight_stats: log ``weight_norm`` and ``weight_delta`` each epoch (None: for models
            up to `lineage.training.AUTO_WEIGHT_LIMIT` trainable elements).
        data_sample: rows of the first batch to draw (True: 16, an int: that many, False:
            off).

    Raises:
        UsageError: a recording option or ``checkpoints`` is not what it must be (named, when
            the callback is made).
    """

    def __init__(
        self,
        run: Any = None,
        log_every: int = 1,
        checkpoints: bool | str = False,
        *,
        experiment: str | None = None,
        fingerprint_data: bool = True,
        all_ranks: bool = False,
        weight_stats: bool | None = None,
        data_sample: bool | int = True,
    ) -> None:
        options = RecorderOptions.of(locals())
        super().__init__()
        self.recorder = TrainingRecorder(
            options, checkpoints=False if checkpoints is True else checkpoints
        )
        self.checkpoints = checkpoints
        self._eval_started = 0.0
        self._uploaded: set[str] = set()
        self._ckpt_callbacks: list[Any] = []
        self._finishing = False
        self.resume = TrialResume()

    @property
    def run(self) -> Any:
        return self.recorder.run

    # -- training ----------------------------------------------------------------------------
    def on_train_begin(self, run_context: Any) -> None:
        cb = run_context.original_args()
        train_network = cb.get("train_network")
        optimizer = cb.get("optimizer") or _find(train_network, "optimizer")
        loss_fn = cb.get("loss_fn") or _find(cb.get("network"), "_loss_fn", "loss_fn")
        self._ckpt_callbacks = [
            c for c in cb.get("list_callback") or () if hasattr(c, "latest_ckpt_file_name")
        ]
        params: dict[str, Any] = {"dataset_sink_mode": bool(cb.get("dataset_sink_mode", False))}
        model, loop = _calling_model()
        params.update(intro.model_params(model))
        # Before the recorder starts: its step counter and weight snapshot follow the restore.
        self.resume = TrialResume()
        self.resume.begin(cb, int(loop.get("initial_epoch") or 0), data=loop.get("dataset_helper"))
        if cb.get("dataset_sink_mode") and cb.get("sink_size", -1) > 0:
            params["sink_size"] = cb.get("sink_size")
        self.recorder.global_step = int(cb.get("cur_step_num") or 0)
        # In sink mode the step's inputs are device placeholders: sample the dataset instead.
        self.recorder.sample_from_dataset = bool(cb.get("dataset_sink_mode"))
        self.recorder.begin(
            network=cb.get("network"),
            optimizer=optimizer,
            loss_fn=loss_fn,
            train_dataset=cb.get("train_dataset"),
            epochs=cb.get("epoch_num"),
            device_number=cb.get("device_number"),
            parallel_mode=cb.get("parallel_mode"),
            loss_scale_manager=cb.get("loss_scale_mananger"),  # sic: MindSpore's spelling
            train_network=train_network,
            params=params,
        )

    def on_train_epoch_begin(self, run_context: Any) -> None:
        cb = run_context.original_args()
        self.resume.epoch_begin(cb)
        self.recorder.epoch_begin(cb.cur_epoch_num)

    def on_train_step_end(self, run_context: Any) -> None:
        if self.resume.finished:  # a step taken only to be undone: not recorded
            self.resume.step_end(run_context)
            return
        cb = run_context.original_args()
        self.recorder.step(
            outputs=cb.get("net_outputs"),
            batch=cb.get("train_dataset_element"),
            step=int(cb.cur_step_num),
        )
        self._upload_new_checkpoints()

    def on_train_epoch_end(self, run_context: Any) -> None:
        if self.resume.finished:
            return
        cb = run_context.original_args()
        self.recorder.epoch_end(cb.cur_epoch_num)
        if self.checkpoints is True and not self._ckpt_callbacks:
            self.recorder.save_checkpoint()
        self._upload_new_checkpoints()
        self.resume.epoch_end(run_context)

    def on_train_end(self, run_context: Any) -> None:
        # A ModelCheckpoint later in the list may still write its final file in its own
        # on_train_end: finish in __exit__, which MindSpore calls after every callback's end.
        self._finishing = True

    def _upload_new_checkpoints(self) -> None:
        # Files written by a ModelCheckpoint in the same callback list (one per step at most,
        # so looking after every step misses none).
        if self.checkpoints is not True:
            return
        for ckpt in self._ckpt_callbacks:
            path = ckpt.latest_ckpt_file_name
            if path and path not in self._uploaded and os.path.isfile(path):
                self._uploaded.add(path)
                self.recorder.log_checkpoint(path)

    # -- evaluation (Model.fit's valid_dataset) ------------------------------------------------
    def on_eval_begin(self, run_context: Any) -> None:
        self._eval_started = time.perf_counter()

    def on_eval_end(self, run_context: Any) -> None:
        if self.recorder.run is None or self.recorder.ended:
            return  # a standalone Model.eval outside any recorded training
        if self.resume.finished:
            return  # the last epoch's evaluation, which the earlier attempt recorded
        cb = run_context.original_args()
        results = cb.get("eval_results") or cb.get("metrics") or {}
        self.recorder.describe_eval_dataset(cb.get("valid_dataset"))
        self.recorder.evaluation(
            results,
            epoch=cb.get("cur_epoch_num"),
            seconds=time.perf_counter() - self._eval_started,
        )

    # -- end -------------------------------------------------------------------------------
    def __exit__(self, *err: Any) -> None:
        # MindSpore enters and exits the callback around training and around each evaluation;
        # the run ends when training ended (on_train_end ran) or an exception escaped.
        if err and err[0] is not None:
            self.recorder.end("KILLED" if issubclass(err[0], KeyboardInterrupt) else "FAILED")
        elif self._finishing:
            self._finishing = False
            self._upload_new_checkpoints()
            self.recorder.end("FINISHED")
