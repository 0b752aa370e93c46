"""Resumable MindSpore trainings: save checkpoints into the trial's checkpoint folder, and
restore the one the tuner hands an attempt that continues earlier work.

`LineageCallback` does this on its own under the tuner (see `_resume.py`), and
:func:`resumable_epochs` does it for a functional loop. The explicit way, for a script that
manages its own starting epoch (``Model.fit``/``Model.train``)::

    from lineage.mindspore import TrialCheckpoint, restore_checkpoint

    start = restore_checkpoint(model.train_network)     # 0 on a fresh start
    if start < epochs:
        model.fit(epochs, train_ds, valid_ds, initial_epoch=start,
                  callbacks=[TrialCheckpoint(model.train_network)])
    else:  # the checkpoint holds the last epoch: the training is done
        trial.report(start, **model.eval(valid_ds))

``Model.fit`` refuses ``initial_epoch == epoch``, hence the ``else``. A `LineageCallback`
in the same list sees that the script resumed (``initial_epoch``, or a call of
:func:`restore_checkpoint`) and that a `TrialCheckpoint` saves, and then does neither itself.

A checkpoint is one MindSpore file holding every parameter of the cells saved (a
``TrainOneStepCell``, ``Model.train_network``, holds the optimizer's state beside the weights:
momentum, Adam's moments, and ``global_step``, the learning-rate schedule's position) plus the
epoch and the training step it was taken after. Outside the tuner (no
``TUNER_CHECKPOINT_DIR``) saving does nothing and restoring returns 0, so the same script runs
by hand. An attempt that continues another trial's checkpoint with other hyperparameters
(population-based training's explore step, named in ``TUNER_RESUME_CHANGED``) keeps the
optimizer's hyperparameters as the script set them (learning rate or its schedule, momentum,
whatever the optimizer holds as a ``Parameter``) and takes the rest from the checkpoint. In a trial of several processes (msrun, torchrun) only rank 0 saves, and every rank
restores the same checkpoint. The folder protocol is :mod:`lineage.checkpoints`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import mindspore as ms
from mindspore import nn
from mindspore.train import Callback

from lineage import checkpoints, pausing
from lineage._errors import exiting_on_bad_environment
from lineage.mindspore._introspect import rank
from lineage.training import checkpoint_root

__all__ = [
    "CHECKPOINT_FILE",
    "TrialCheckpoint",
    "load_checkpoint",
    "optimizer_hyperparameters",
    "restore_checkpoint",
    "resumable_epochs",
    "save_checkpoint",
]

CHECKPOINT_FILE = "mindspore.ckpt"
#: Attributes of MindSpore's optimizers that hold hyperparameters (not state: moments and
#: ``global_step`` are training progress and always come from a checkpoint).
HYPERPARAMETERS = (
    "learning_rate",
    "momentum",
    "weight_decay",
    "dampening",
    "beta1",
    "beta2",
    "eps",
    "epsilon",
    "decay",
    "rho",
    "lr_power",
    "l1",
    "l2",
)
#: Entries MindSpore's ``append_dict`` adds to the checkpoint file beside the parameters.
EPOCH_KEY, STEP_KEY = "trial_epoch", "trial_step"

#: Checkpoint folders this process has restored: a second fit in the same process, or a
#: `LineageCallback` after the script's own `restore_checkpoint`, does not restore again.
_restored: set[str] = set()


def _cells(cells: Any) -> list[Any]:
    return list(cells) if isinstance(cells, list | tuple) else [cells]


def _save_object(cells: Any) -> Any:
    """What ``mindspore.save_checkpoint`` takes: the cell itself, or for several cells (a
    network and its optimizer) each parameter once, by name."""
    found = _cells(cells)
    if len(found) == 1:
        return found[0]
    merged: dict[str, Any] = {}
    for cell in found:
        merged.update(cell.parameters_dict())
    return [{"name": name, "data": param} for name, param in merged.items()]


def save_checkpoint(
    cell: Any, epoch: int, *, step: int | None = None
) -> checkpoints.Checkpoint | None:
    """Save the parameters of ``cell`` (or of a list of cells, e.g. ``[net, optimizer]``) as
    the checkpoint of ``epoch``, with ``step`` (the training steps done) when given;
    committed, older ones pruned. None outside the tuner, and on every rank but 0 of a
    multi-process trial (data parallel: every rank holds the same weights, and all of them
    restore rank 0's checkpoint).

    Args:
        cell: the cell whose parameters are saved (``Model.train_network`` holds the
            optimizer's state beside the weights), or a list of cells, each parameter saved
            once by name.
        epoch: the epoch the checkpoint is taken after; it names the step folder and is stored
            in the file.
        step: the training steps done, stored in the file; None: not stored (a restore then
            leaves the step count to the caller).

    Where the campaign's scheduler may pause the trial at ``epoch`` (ASHA's rungs with
    ``mode: promote``) and this process reported the epoch, the call then waits until the
    controller judged that report (at most ``trial.grace_period``): a loop that checks
    ``tuner.trial.should_prune()`` after it stops at the epoch it was paused at.

    Returns:
        The committed checkpoint, or None where nothing is saved.

    Raises:
        OSError: the step folder or its manifest could not be written (the checkpoint stays
            uncommitted, so a resume ignores it).
    """
    root = checkpoint_root(rank())
    if root is None:
        return None
    folder = checkpoints.step_dir(root, epoch)
    extra: dict[str, Any] = {EPOCH_KEY: int(epoch)}
    if step is not None:
        extra[STEP_KEY] = int(step)
    ms.save_checkpoint(_save_object(cell), str(folder / CHECKPOINT_FILE), append_dict=extra)
    committed = checkpoints.commit(folder, epoch)
    pausing.await_verdict(int(epoch))
    return committed


def load_checkpoint(
    cell: Any,
    folder: str | os.PathLike[str],
    epoch: int,
    *,
    keep_hyperparameters: bool = False,
) -> tuple[int, int | None]:
    """Load the checkpoint in ``folder`` into ``cell`` (or each of a list of cells);
    ``(epoch, step)`` it was taken after (``epoch`` as given and ``step`` None for a
    checkpoint saved without them). With ``keep_hyperparameters`` the optimizers' hyperparameters
    (`optimizer_hyperparameters`) keep their values; weights, the optimizers' state (moments,
    ``global_step``) and everything else come from the checkpoint."""
    params = ms.load_checkpoint(str(Path(folder) / CHECKPOINT_FILE))
    saved_epoch, saved_step = params.pop(EPOCH_KEY, None), params.pop(STEP_KEY, None)
    if keep_hyperparameters:
        kept = optimizer_hyperparameters(cell)
        for name, param in kept.items():
            # The current value, loaded over itself: a name left out of the dictionary
            # would make MindSpore warn that the network does not match the checkpoint.
            params[name] = ms.Parameter(ms.Tensor(param.asnumpy()), name=name)
        if kept:
            print(
                f"lineage.mindspore: kept the optimizer's {', '.join(sorted(kept))} as the "
                "script set them (other hyperparameters than the checkpoint's); the rest "
                "comes from the checkpoint",
                file=sys.stderr,
                flush=True,
            )
    for one in _cells(cell):
        ms.load_param_into_net(one, params)
    _restored.add(str(folder))
    at = int(saved_epoch.asnumpy()) if saved_epoch is not None else int(epoch)
    return at, int(saved_step.asnumpy()) if saved_step is not None else None


def optimizer_hyperparameters(cell: Any) -> dict[str, Any]:
    """``{name: Parameter}`` of the hyperparameters the optimizers in ``cell`` (or a list of
    cells) hold as Parameters, which their checkpoints save beside the weights and the
    optimizer's state: the learning rate (a value, a list schedule, one per parameter group),
    momentum, and any other of `HYPERPARAMETERS` a MindSpore optimizer keeps that way."""
    found: dict[str, Any] = {}
    for one in _cells(cell):
        for _, sub in one.cells_and_names():
            if not isinstance(sub, nn.Optimizer):
                continue
            for attr in HYPERPARAMETERS:
                for param in _parameters(getattr(sub, attr, None)):
                    found[param.name] = param
            for name, param in sub.parameters_and_names(expand=False):
                if name.startswith("learning_rate"):  # per-group rates
                    found[param.name] = param
    return found


def _parameters(value: Any) -> list[Any]:
    if isinstance(value, ms.Parameter):
        return [value]
    if isinstance(value, ms.ParameterTuple | list | tuple):
        return [p for p in value if isinstance(p, ms.Parameter)]
    if isinstance(value, nn.Cell):  # a list schedule, a dynamic weight decay
        return list(value.get_parameters())
    return []


def restored(folder: str | os.PathLike[str]) -> bool:
    """Whether this process has already loaded the checkpoint in ``folder``."""
    return str(folder) in _restored


def restore_checkpoint(cell: Any) -> int:
    """Load the checkpoint this attempt continues from into ``cell``; the epochs it holds
    (the epoch to start from), 0 for a fresh start. When that is the training's last epoch,
    nothing is left to train: skip ``Model.fit`` (it refuses ``initial_epoch == epoch``).

    Args:
        cell: the cell to load into (``Model.train_network``, to restore the optimizer's state
            with the weights), or a list of cells. When the attempt changed hyperparameters
            (``TUNER_RESUME_CHANGED``), its optimizers keep the ones the script set.

    Returns:
        The epoch the checkpoint was taken after (the one handed by the tuner when the file
        does not hold it), or 0 with no checkpoint to continue from (outside the tuner too).

    Raises:
        EnvironmentValueError: ``TUNER_RESUME_STEP`` is not a whole number, or
            ``TUNER_RESUME_CHANGED`` does not hold a JSON list of names.
    """
    point = checkpoints.resume_point()
    if point is None:
        return 0
    return load_checkpoint(cell, *point, keep_hyperparameters=bool(checkpoints.resume_changed()))[0]


def resumable_epochs(epochs: int, *cells: Any, recorder: Any = None) -> Iterator[int]:
    """The epochs (1 to ``epochs``) a functional loop has left to train, restoring the
    checkpoint the tuner hands this attempt into ``cells`` (the network and its optimizer)
    before the first, and saving them every ``TUNER_CHECKPOINT_EVERY`` epochs (and after the
    last) once the loop body of an epoch has run::

        with record_training(net, optimizer, loss_fn, dataset=train_ds, epochs=10) as rec:
            for epoch in resumable_epochs(10, net, optimizer, recorder=rec):
                for x, y in train_ds.create_tuple_iterator():
                    ...
                    rec.step(loss)
                rec.epoch_end(val_accuracy=acc)
                trial.report(epoch, val_accuracy=acc)

    ``recorder`` (a `TrainingRecorder`): its epoch and step counters continue from the
    checkpoint's, so the recorded curves go on without repeating a step. An epoch the body
    leaves with ``break`` (pruned) is not saved; when the tuner tells the trial to stop
    during the save (paused at an ASHA rung), no further epoch is yielded. When the
    checkpoint holds the last epoch, nothing is yielded. Outside the tuner: ``1..epochs``, nothing saved or restored.

    Args:
        epochs: the training's epoch count: the last epoch yielded, and under the tuner always
            saved.
        *cells: the cells to restore and save (the network and its optimizer), at least one.
        recorder: the `TrainingRecorder` of the loop, whose epoch and step counters continue
            from the checkpoint's and whose step count is saved with each checkpoint; None:
            no counters moved and no step saved.

    Yields:
        Each epoch number left to train, from the one after the checkpoint's to ``epochs``.

    Raises:
        TypeError: no cells were given (raised when the first epoch is asked for).
        SystemExit: a ``TUNER_*`` variable is refused (one line on stderr, exit status 2).
    """
    if not cells:
        raise TypeError("resumable_epochs needs the cells to save (the network, the optimizer)")
    root = os.environ.get(checkpoints.CHECKPOINT_DIR)
    start = 0
    with exiting_on_bad_environment():
        point = checkpoints.resume_point() if root else None
        changed = point is not None and bool(checkpoints.resume_changed())
        every = checkpoints.every() if root else 0
    if point is not None and not restored(point[0]):
        start, step = load_checkpoint(list(cells), *point, keep_hyperparameters=changed)
        if recorder is not None:
            recorder.resumed(min(start, epochs), step)
    for epoch in range(start + 1, epochs + 1):
        yield epoch
        if every and (epoch % every == 0 or epoch == epochs):
            step = recorder.global_step if recorder is not None else None
            if save_checkpoint(list(cells), epoch, step=step) is not None and pausing.stopped():
                return  # paused (or pruned) at this epoch: no further one


class TrialCheckpoint(Callback):
    """Save ``cell`` every ``every`` epochs (default ``TUNER_CHECKPOINT_EVERY``, else 1; and
    after the last) through `save_checkpoint`, and stop the training (``request_stop``) when
    the tuner told the trial to stop by then (paused at this epoch, or pruned).

    Args:
        cell: what `save_checkpoint` saves (``Model.train_network``), a cell or a list of
            cells.
        every: epochs between checkpoints, an int >= 1; None: ``TUNER_CHECKPOINT_EVERY``,
            else 1, read at each epoch's end.

    Raises:
        ValueError: ``every`` is below 1.
    """

    def __init__(self, cell: Any, *, every: int | None = None) -> None:
        if every is not None and every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.cell = cell
        self.every = every

    def on_train_epoch_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        epoch = int(cb.cur_epoch_num)
        with exiting_on_bad_environment():
            every = self.every or checkpoints.every()
        if epoch % every and epoch != int(getattr(cb, "epoch_num", epoch)):
            return
        # No step: with ``initial_epoch`` MindSpore counts steps from 0 again.
        if save_checkpoint(self.cell, epoch) is not None and pausing.stopped():
            run_context.request_stop()


def has_trial_checkpoint(callbacks: Sequence[Any]) -> bool:
    """Whether a `TrialCheckpoint` is among ``callbacks`` (the script saves on its own)."""
    return any(isinstance(c, TrialCheckpoint) for c in callbacks)
