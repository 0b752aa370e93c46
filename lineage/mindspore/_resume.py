"""The trial-checkpoint side of `LineageCallback`: save every N epochs under the tuner, and
continue a ``Model.fit``/``Model.train`` from the checkpoint an attempt is handed, with no
``initial_epoch`` and no restore call in the script.

MindSpore fixes the range of epochs when ``fit`` starts (``range(initial_epoch, epoch)``),
so a continuation that resumes after epoch ``k`` of ``n`` runs that range from 0 and

- loads the checkpoint into ``Model.train_network`` at ``on_train_begin``, before any step
  (keeping the optimizer's hyperparameters as the script set them when the attempt changed
  some, ``TUNER_RESUME_CHANGED``: see `load_checkpoint`);
- moves the step counter (``cur_step_num``) to the checkpoint's step there, and the epoch
  number (``cur_epoch_num``, which MindSpore sets again at each epoch's begin) on by ``k`` at
  each ``on_train_epoch_begin``: every callback after that hook, the evaluation schedule of
  ``fit`` and the recorded curves see epochs ``k+1..n`` and steps after the checkpoint's;
- asks MindSpore to stop (``request_stop``) at the end of epoch ``n``, after ``n - k``
  epochs of training;
- moves the training data pipeline on to the checkpoint's step, as MindSpore's own failover
  does, so the epochs left get the batches (and the shuffle order) an uninterrupted
  training would have had: the continued training is the same training.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from lineage import checkpoints, pausing
from lineage._errors import exiting_on_bad_environment
from lineage.mindspore._checkpoint import (
    has_trial_checkpoint,
    load_checkpoint,
    restored,
    save_checkpoint,
)


class TrialResume:
    """Resumes and checkpoints one ``fit``/``train`` call; inactive outside the tuner."""

    def __init__(self) -> None:
        self.active = False
        #: True when the checkpoint holds the training's last epoch (see `step_end`).
        self.finished = False
        #: The epoch the training continues after (0: a fresh start).
        self.resumed_epoch = 0
        self._shift = 0
        self._save = False
        self._every = 1
        self._total = 0
        self._cell: Any = None
        self._folder: str | None = None
        self._steps_known = True
        #: The optimizer's hyperparameters stay as the script set them (`load_checkpoint`).
        self._keep = False

    def begin(self, cb: Any, initial_epoch: int, *, data: Any = None) -> None:
        """At ``on_train_begin``: restore the checkpoint to continue from, unless the script
        resumes on its own (it passed ``initial_epoch`` or called `restore_checkpoint`).
        ``data``: the ``DatasetHelper`` the training loop iterates, moved on to the
        checkpoint's step."""
        if not os.environ.get(checkpoints.CHECKPOINT_DIR):
            return
        with exiting_on_bad_environment():
            self._begin(cb, initial_epoch, data)

    def _begin(self, cb: Any, initial_epoch: int, data: Any) -> None:
        self.active = True
        self._every = checkpoints.every()
        self._cell = cb.get("train_network")
        self._save = not has_trial_checkpoint(cb.get("list_callback") or ())
        self._total = int(initial_epoch) + int(cb.get("epoch_num") or 0)
        self._steps_known = not initial_epoch  # with it, MindSpore counts steps from 0 again
        point = checkpoints.resume_point()
        if initial_epoch or point is None or restored(point[0]):
            return
        steps = int(cb.get("batch_num") or 0)
        self._folder = str(point[0])
        self._keep = bool(checkpoints.resume_changed())
        if point[1] >= self._total:
            self._finish(cb, point[1], steps)
            return
        epoch, step = load_checkpoint(self._cell, *point, keep_hyperparameters=self._keep)
        self.resumed_epoch = self._shift = epoch
        cb.cur_step_num = step if step is not None else epoch * steps
        if data is not None and steps:
            _skip_data(data, epoch * steps, steps)
        print(
            f"lineage.mindspore: resumed from the checkpoint of epoch {epoch}",
            file=sys.stderr,
            flush=True,
        )

    def _finish(self, cb: Any, epoch: int, steps: int) -> None:
        # Loaded only after the one step MindSpore runs (`step_end`): a schedule as long as
        # the training (a list, cosine_decay_lr) has no learning rate for a step after it.
        self.finished = True
        self.resumed_epoch = epoch
        self._shift = self._total - 1
        cb.cur_step_num = (self._total - 1) * steps
        print(
            f"lineage.mindspore: the checkpoint holds the last epoch ({epoch}): "
            "nothing left to train",
            file=sys.stderr,
            flush=True,
        )

    def epoch_begin(self, cb: Any) -> None:
        if self._shift:
            cb.cur_epoch_num = int(cb.cur_epoch_num) + self._shift

    def step_end(self, run_context: Any) -> None:
        """With nothing left to train, MindSpore still runs one step: ``fit`` refuses
        ``initial_epoch == epoch``, a callback cannot skip a step (``request_stop`` is read
        after it) and an exception would end the script. So the one step runs on the
        network as the script built it, the checkpoint is loaded over it (weights,
        optimizer state and ``global_step``), and the training stops: ``fit`` then evaluates the restored
        network as the last epoch, which the tuner already holds (it keeps one report per
        step), and the script goes on as after a full training."""
        if self.finished and self._folder is not None:
            load_checkpoint(
                self._cell, self._folder, self.resumed_epoch, keep_hyperparameters=self._keep
            )
            self._folder = None
            run_context.request_stop()

    def epoch_end(self, run_context: Any) -> None:
        """Save the epoch's checkpoint every N epochs and after the last; stop a continued
        training after its last epoch, and any training the tuner told to stop by the end of
        the save (see `save_checkpoint`)."""
        if not self.active or self.finished:
            return
        cb = run_context.original_args()
        epoch = int(cb.cur_epoch_num)
        if self._save and (epoch % self._every == 0 or epoch >= self._total):
            step = int(cb.cur_step_num) if self._steps_known else None
            saved = save_checkpoint(self._cell, epoch, step=step)
            if saved is not None and pausing.stopped():
                # Paused at this epoch (an ASHA rung) or pruned while saving waited for the
                # verdict: stop here, not after callbacks later in the list looked again.
                run_context.request_stop()
        if self._shift and epoch >= self._total:
            run_context.request_stop()


def _skip_data(helper: Any, step: int, steps_per_epoch: int) -> None:
    """Move the pipeline a training loop iterates on to ``step``: MindSpore's failover
    (``Model``'s ``_reset_training_dataset``) does it through the same private ``_reset``,
    which replays the shuffles of the epochs skipped. Without sink mode the helper's
    iterator wraps the pipeline's own; in sink mode the helper is made once the first epoch
    begins, after this point, and the data then start over. Any failure leaves the data as
    they are, with one line: the training still continues from the checkpoint."""
    inner: Any = getattr(helper, "iter", None)
    target: Any = getattr(inner, "iter", inner)
    try:
        target._reset(step, steps_per_epoch)
    except Exception as exc:  # said on stderr: the training goes on
        print(
            f"lineage.mindspore: the training data start over after the checkpoint: "
            f"the pipeline could not be moved on to step {step} ({exc})",
            file=sys.stderr,
            flush=True,
        )
