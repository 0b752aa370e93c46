"""Trial checkpoints: the folder protocol a training script, a framework callback and the tuner
share, so that a training interrupted at step N continues from N instead of from step 0.

A trial owns one checkpoint folder for its whole life, across attempts, named in
``TUNER_CHECKPOINT_DIR``. Each checkpoint is a subfolder ``step-<N>/`` (:func:`step_dir`)
that the script fills with whatever its framework writes, then *commits* with
:func:`commit`: a manifest ``.complete.json`` (each file's size) written last and atomically.
A folder without a manifest, or whose files no longer match it, is *torn* (the process died
while writing, or someone deleted a file): it is never resumed from. Committing prunes the
trial's older checkpoints down to the last ``TUNER_CHECKPOINT_KEEP`` (default 2). How often a
framework callback saves, in epochs, is ``TUNER_CHECKPOINT_EVERY`` (default 1; :func:`every`).

When an attempt should continue earlier work, the tuner names the last good checkpoint in
``TUNER_RESUME_FROM`` and the step it holds in ``TUNER_RESUME_STEP`` (:func:`resume_point`).
When the attempt continues another trial's checkpoint with other values of some
hyperparameters (population-based training's explore step), it names them in
``TUNER_RESUME_CHANGED``, a JSON list (:func:`resume_changed`): a framework callback then
keeps the optimizer's hyperparameters as the script set them instead of the checkpoint's.

With ``TUNER_CHECKPOINT_STORE=mlflow`` a committed checkpoint is also uploaded to the
artifacts of the process's MLflow run (``MLFLOW_RUN_ID``) under ``checkpoints/step-<N>/``,
pruned there to the same last K (:mod:`lineage.checkpoint_artifacts`), so it follows the
run to whatever artifact store the tracking server uses.

Nothing here imports a framework, MLflow or the tuner: a script pays nothing for it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from lineage import faults
from lineage._errors import EnvironmentValueError

__all__ = [
    "CHECKPOINT_DIR",
    "EVERY",
    "KEEP",
    "MANIFEST",
    "RESUME_CHANGED",
    "RESUME_FROM",
    "RESUME_STEP",
    "STORE",
    "Checkpoint",
    "commit",
    "every",
    "latest_good",
    "prune",
    "resume_changed",
    "resume_point",
    "step_dir",
]

CHECKPOINT_DIR = "TUNER_CHECKPOINT_DIR"
"""The variable naming the trial's checkpoint folder, kept across its attempts."""
RESUME_FROM = "TUNER_RESUME_FROM"
"""The variable naming the checkpoint folder an attempt continues from."""
RESUME_STEP = "TUNER_RESUME_STEP"
"""The variable holding the step that checkpoint holds."""
RESUME_CHANGED = "TUNER_RESUME_CHANGED"
"""The variable listing (JSON) the hyperparameters whose values differ from the checkpoint's."""
KEEP = "TUNER_CHECKPOINT_KEEP"
"""The variable holding how many committed checkpoints a trial keeps (default 2)."""
STORE = "TUNER_CHECKPOINT_STORE"
"""The variable that, set to ``mlflow``, also uploads committed checkpoints to the run."""
EVERY = "TUNER_CHECKPOINT_EVERY"
"""The variable holding the epochs between a framework callback's checkpoints (default 1)."""

MANIFEST = ".complete.json"
"""The file, written last and atomically, that commits a checkpoint folder."""
_PREFIX = "step-"
DEFAULT_KEEP = 2
DEFAULT_EVERY = 1


class Checkpoint:
    """A committed checkpoint: its folder and the step it holds."""

    __slots__ = ("path", "step")

    def __init__(self, path: Path, step: int) -> None:
        self.path = path
        self.step = step

    def __repr__(self) -> str:
        return f"Checkpoint({str(self.path)!r}, step={self.step})"


def step_dir(root: str | os.PathLike[str], step: int) -> Path:
    """The folder for the checkpoint of ``step`` under ``root`` (created, empty of a manifest).

    Args:
        root: the trial's checkpoint folder (``tuner.trial.checkpoint_dir()`` in a campaign).
        step: the step (epoch) the checkpoint belongs to; its folder name is the step, zero-padded,
            so folders sort by step.

    Returns:
        The step's folder, created if needed, with any earlier manifest of the same step removed (a
        rewritten step is torn until :func:`commit` runs again).
    """
    path = Path(root) / f"{_PREFIX}{int(step):09d}"
    path.mkdir(parents=True, exist_ok=True)
    (path / MANIFEST).unlink(missing_ok=True)  # rewriting a step: torn until committed again
    return path


def commit(path: str | os.PathLike[str], step: int, *, keep: int | None = None) -> Checkpoint:
    """Mark the checkpoint in ``path`` complete (a manifest of its files, written atomically),
    then prune the checkpoints of its folder beyond the last ``keep``.

    Args:
        path: the step's folder, from :func:`step_dir`, holding every file of the checkpoint.
        step: the step it was taken at; the manifest records it.
        keep: how many committed checkpoints to keep under the parent folder; None:
            ``TUNER_CHECKPOINT_KEEP`` or its default.

    Returns:
        The committed :class:`Checkpoint`.

    Raises:
        OSError: the manifest could not be written (the checkpoint stays uncommitted, so a resume
            ignores it).
    """
    faults.point("checkpoint-written-not-committed")
    folder = Path(path)
    files = {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST and not p.name.endswith(".tmp")
    }
    tmp = folder / f"{MANIFEST}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"step": int(step), "files": files}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / MANIFEST)
    if keep is None:
        keep = int(os.environ.get(KEEP, DEFAULT_KEEP))
    prune(folder.parent, keep)
    if os.environ.get(STORE) == "mlflow":
        from lineage.checkpoint_artifacts import upload

        upload(folder, keep)
    return Checkpoint(folder, int(step))


def _read(folder: Path) -> tuple[int | None, str | None]:
    """The step a checkpoint folder holds, or ``(None, why it cannot be used)``."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        step = int(manifest["step"])
        files = dict(manifest["files"])
    except FileNotFoundError:
        return None, "never committed (the process died while writing it)"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable manifest ({exc})"
    for name, size in files.items():
        try:
            actual = (folder / name).stat().st_size
        except OSError:
            return None, f"{name} is missing"
        if actual != size:
            return None, f"{name} has {actual} bytes, {size} when committed"
    return step, None


def _candidates(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(_PREFIX)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def latest_good(
    root: str | os.PathLike[str],
    *,
    warn: Callable[[str], object] | None = None,
    at_most: int | None = None,
) -> Checkpoint | None:
    """The newest committed, intact checkpoint under ``root`` (with ``at_most``: of that
    step or an earlier one), or None. Each newer one that cannot be used is reported
    through ``warn`` in one line and skipped.

    Args:
        root: the trial's checkpoint folder.
        warn: called with one line for each newer folder that is skipped (torn, or a file missing or
            of the wrong size).
        at_most: the highest step to consider (a continuation resumes from the step it was forked
            at, not from a later one).

    Returns:
        The checkpoint to resume from, or None when no committed one is intact.
    """
    for folder in _candidates(Path(root)):
        step, why = _read(folder)
        if step is not None and at_most is not None and step > at_most:
            continue
        if step is not None:
            return Checkpoint(folder, step)
        if warn is not None:
            warn(f"checkpoint {folder} cannot be resumed from: {why}; trying an older one")
    return None


def prune(root: str | os.PathLike[str], keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` committed checkpoints under ``root`` (and any torn
    folder older than the oldest one kept); the folders deleted.

    Args:
        root: the trial's checkpoint folder.
        keep: how many committed checkpoints to keep (at least 1).

    Returns:
        The folders deleted, newest first.
    """
    keep = max(1, int(keep))
    kept = 0
    removed: list[Path] = []
    for folder in _candidates(Path(root)):
        good = _read(folder)[0] is not None
        if kept < keep:
            kept += good
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def every() -> int:
    """Epochs between the checkpoints a framework callback saves (``TUNER_CHECKPOINT_EVERY``,
    default 1; the last epoch is always saved). Raises `EnvironmentValueError` (a
    ValueError) naming the variable when it is not a whole number >= 1."""
    raw = os.environ.get(EVERY, "").strip()
    if not raw:
        return DEFAULT_EVERY
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise EnvironmentValueError(f"{EVERY} must be a whole number >= 1, got {raw!r}")
    return value


def resume_point() -> tuple[Path, int] | None:
    """``(folder, step)`` of the checkpoint this process should continue from, or None for a
    fresh start (the tuner sets it; a script run by hand starts fresh). Raises
    `EnvironmentValueError` (a ValueError) when ``TUNER_RESUME_STEP`` is not a whole number."""
    path = os.environ.get(RESUME_FROM)
    step = os.environ.get(RESUME_STEP)
    if not path or step is None:
        return None
    try:
        return Path(path), int(step)
    except ValueError:
        raise EnvironmentValueError(
            f"{RESUME_STEP} must be a whole number, got {step[:80]!r}"
        ) from None


def resume_changed() -> list[str]:
    """The hyperparameters whose values this attempt changed from those of the trial whose
    checkpoint it continues (``TUNER_RESUME_CHANGED``); empty for a fresh start and for a
    resume with the checkpoint's own values. Raises `EnvironmentValueError` (a ValueError)
    naming the variable when it does not hold a JSON list of names."""
    raw = os.environ.get(RESUME_CHANGED, "").strip()
    if not raw or resume_point() is None:
        return []
    try:
        names = json.loads(raw)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise EnvironmentValueError(
            f"{RESUME_CHANGED} must hold a JSON list of names, got {raw[:80]!r}"
        )
    return names
