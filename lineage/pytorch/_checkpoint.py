"""Resumable plain PyTorch loops: save the training state into the trial's checkpoint folder
after an epoch, and restore the one the tuner hands an attempt that continues earlier work.

::

    start = lineage.pytorch.restore_checkpoint(model, opt, sched, watcher=w)  # 0: fresh
    for epoch in range(start + 1, epochs + 1):
        ...                                   # one epoch
        w.epoch_end(epoch, val_accuracy=accuracy)                 # report first
        lineage.pytorch.save_checkpoint(epoch, model, opt, sched, watcher=w)
        if w.pruned:                          # pruned, or paused to resume from here later
            break

One file, ``pytorch.pt``, holds the model's, optimizer's, scheduler's and AMP scaler's
``state_dict``, the epoch, the watcher's optimizer-step count (so the resumed run's per-step
curves continue where the checkpoint left off instead of starting again at step 1) and the
random-number generators' states. At a step where the tuner may pause the trial (an ASHA
rung with ``mode: promote``), saving waits after the commit for the controller's verdict on
the epoch's report (`lineage.pausing.await_verdict`) and then asks the watcher's trial again,
so ``w.pruned`` says whether the trial was paused at this epoch. Outside the tuner (no ``TUNER_CHECKPOINT_DIR``) saving does
nothing and restoring returns 0, so the same script runs by hand. In a multi-process trial
(``torchrun``) only rank 0 writes; every rank restores. The folder protocol is
:mod:`lineage.checkpoints`.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import torch

from lineage import checkpoints, pausing
from lineage._errors import UsageError, exiting_on_bad_environment
from lineage.pytorch import _introspect as intro
from lineage.training import checkpoint_root

__all__ = [
    "CHECKPOINT_FILE",
    "apply_settings",
    "check_every",
    "optimizer_settings",
    "restore_checkpoint",
    "save_checkpoint",
]

CHECKPOINT_FILE = "pytorch.pt"
"""The file `save_checkpoint` writes inside the trial's step folder."""


def _state(obj: Any) -> Any:
    return None if obj is None else obj.state_dict()


def optimizer_settings(optimizer: Any) -> list[dict[str, Any]]:
    """Each parameter group's hyperparameters as the script set them (a scheduler's starting
    lr, ``initial_lr``, stands for the lr it has moved since), to compare and re-apply with
    `apply_settings` after a framework restored an optimizer from a checkpoint.

    Args:
        optimizer: the ``torch.optim.Optimizer`` to read.

    Returns:
        One dict per parameter group: its settings but ``params`` and ``initial_lr``, with
        ``lr`` the group's ``initial_lr`` when it has one, else its ``lr``.
    """
    out = []
    for group in optimizer.param_groups:
        values = {k: v for k, v in group.items() if k not in ("params", "initial_lr")}
        values["lr"] = group.get("initial_lr", group.get("lr"))
        out.append(values)
    return out


def apply_settings(optimizer: Any, scheduler: Any, settings: list[dict[str, Any]]) -> None:
    """Give the restored optimizer the hyperparameters the script set this time (a
    continuation with explored values, as population-based training starts), keeping its
    state (momentum, Adam's moments) and the schedule's position: a scheduled lr keeps the
    factor the schedule had reached, applied to the new starting lr.

    Args:
        optimizer: the restored ``torch.optim.Optimizer``, changed in place.
        scheduler: its lr scheduler, whose ``base_lrs`` and last lr follow the new values;
            None (or one without ``base_lrs``): left as it is.
        settings: the script's settings, one dict per parameter group, as
            `optimizer_settings` returned them before the restore.

    Raises:
        ValueError: ``settings`` does not hold one dict per parameter group.
    """
    for group, new in zip(optimizer.param_groups, settings, strict=True):
        start = group.get("initial_lr")
        factor = group["lr"] / start if start else 1.0
        group.update({k: v for k, v in new.items() if k != "lr"})
        if start:
            group["initial_lr"] = new["lr"]
        group["lr"] = new["lr"] * factor
    if scheduler is not None and hasattr(scheduler, "base_lrs"):
        scheduler.base_lrs = [g.get("initial_lr", g["lr"]) for g in optimizer.param_groups]
        scheduler._last_lr = [g["lr"] for g in optimizer.param_groups]  # what get_last_lr says


def check_every(checkpoint_every: object) -> None:
    """Refuse a framework callback's ``checkpoint_every`` that is not None (the campaign's
    ``checkpoint.every``) or an int >= 0 (0: never).

    Args:
        checkpoint_every: the callback's argument: epochs between checkpoints, 0: never,
            None: the campaign's ``checkpoint.every``.

    Raises:
        UsageError: it is a bool, not an int, or below 0.
    """
    if checkpoint_every is None:
        return
    if (
        isinstance(checkpoint_every, bool)
        or not isinstance(checkpoint_every, int)
        or checkpoint_every < 0
    ):
        raise UsageError(f"checkpoint_every must be an int >= 0 or None, got {checkpoint_every!r}")


def save_checkpoint(
    epoch: int,
    model: torch.nn.Module,
    optimizer: Any = None,
    scheduler: Any = None,
    *,
    scaler: Any = None,
    watcher: Any = None,
) -> checkpoints.Checkpoint | None:
    """Save the training state after ``epoch`` as that epoch's checkpoint (committed, older
    ones pruned to the campaign's ``checkpoint.keep``); None outside the tuner and on ranks
    other than 0.

    Where the campaign's scheduler may pause the trial at ``epoch`` (ASHA's rungs with
    ``mode: promote``) and the epoch was reported, rank 0 then waits until the controller
    judged that report (at most ``trial.grace_period``), and ``watcher`` asks its trial
    whether to stop (every rank, as `Watcher.report` does): a loop that checks
    ``watcher.pruned`` after this call stops at the epoch it was paused at.

    Args:
        epoch: the epoch just trained; it names the step folder and is stored in the file.
        model: the ``torch.nn.Module`` whose ``state_dict`` is saved.
        optimizer: its optimizer, saved when given.
        scheduler: its lr scheduler, saved when given.
        scaler: the AMP ``torch.amp.GradScaler``, saved when given.
        watcher: the `Watcher` of the loop, whose optimizer-step count is saved and whose
            ``pruned`` is brought up to date after the commit; None: no count saved.

    Returns:
        The committed checkpoint, or None where nothing is saved.

    Raises:
        OSError: the checkpoint file or its manifest could not be written (the checkpoint
            stays uncommitted, so a resume ignores it).
    """
    committed = _save(epoch, model, optimizer, scheduler, scaler, watcher)
    if watcher is not None and os.environ.get(checkpoints.CHECKPOINT_DIR):
        # On every rank (rank 0 decides for all): the verdict may have come during the wait.
        watcher.report(int(epoch), {})
    return committed


def _save(
    epoch: int, model: Any, optimizer: Any, scheduler: Any, scaler: Any, watcher: Any
) -> checkpoints.Checkpoint | None:
    root = checkpoint_root(intro.rank())
    if root is None:
        return None
    folder = checkpoints.step_dir(root, epoch)
    state = {
        "epoch": int(epoch),
        "global_step": getattr(watcher, "global_step", None),
        "model": model.state_dict(),
        "optimizer": _state(optimizer),
        "scheduler": _state(scheduler),
        "scaler": _state(scaler),
        "rng": {"torch": torch.get_rng_state(), "python": random.getstate()},
    }
    tmp = folder / f"{CHECKPOINT_FILE}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, folder / CHECKPOINT_FILE)
    committed = checkpoints.commit(folder, epoch)
    pausing.await_verdict(int(epoch))
    return committed


def restore_checkpoint(
    model: torch.nn.Module,
    optimizer: Any = None,
    scheduler: Any = None,
    *,
    scaler: Any = None,
    watcher: Any = None,
) -> int:
    """Load the checkpoint this attempt continues from into the objects given; the epoch it
    holds (train from the next one), 0 for a fresh start. ``watcher`` (from `watch`) then
    counts optimizer steps on from the checkpoint's.

    When the attempt continues a checkpoint with other values of some hyperparameters
    (``TUNER_RESUME_CHANGED``, as population-based training's explore step sets it), the
    optimizer keeps the hyperparameters it was built with: only its state and the
    schedule's position come from the checkpoint. A plain retry restores the optimizer
    whole. A refused ``TUNER_*`` value ends the process with one line and exit status 2.

    Args:
        model: the ``torch.nn.Module`` to load the saved weights into.
        optimizer: its optimizer, loaded when given and the checkpoint holds one.
        scheduler: its lr scheduler, loaded when given and the checkpoint holds one.
        scaler: the AMP ``torch.amp.GradScaler``, loaded when given and the checkpoint
            holds one.
        watcher: the `Watcher` of the loop, whose epoch and optimizer-step counts continue
            from the checkpoint's; None: no counters moved.

    Returns:
        The epoch the checkpoint was taken after, or 0 with no checkpoint to continue from
        (outside the tuner too).

    Raises:
        SystemExit: a ``TUNER_*`` variable is refused (one line on stderr, exit status 2).
    """
    with exiting_on_bad_environment():
        point = checkpoints.resume_point()
        changed = bool(checkpoints.resume_changed())
    if point is None:
        return 0
    folder, epoch = point
    state = torch.load(Path(folder) / CHECKPOINT_FILE, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    settings = optimizer_settings(optimizer) if optimizer is not None and changed else None
    for obj, key in ((optimizer, "optimizer"), (scheduler, "scheduler"), (scaler, "scaler")):
        if obj is not None and state.get(key) is not None:
            obj.load_state_dict(state[key])
    if settings is not None and settings != optimizer_settings(optimizer):
        apply_settings(optimizer, scheduler, settings)
    rng = state.get("rng") or {}
    if "torch" in rng:
        torch.set_rng_state(rng["torch"])
    if "python" in rng:
        random.setstate(rng["python"])
    if watcher is not None:
        watcher.resumed(epoch, state.get("global_step"))
    return int(state.get("epoch", epoch))
