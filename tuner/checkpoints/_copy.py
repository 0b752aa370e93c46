"""Copying a checkpoint from one chain's folder into another's (a PBT exploit)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lineage import checkpoints

__all__ = ["copy_latest"]


def copy_latest(
    source: Path, folder: Path, warn: Callable[[str], Any], *, at_most: int | None = None
) -> None:
    """Copy the latest good checkpoint of ``source`` (of step ``at_most`` or before, when
    one is left) into ``folder`` (under its own step name, complete or not at all). The
    trial writing ``source`` may prune it meanwhile: then the next latest one is taken."""
    for _ in range(3):
        found = None if at_most is None else checkpoints.latest_good(source, at_most=at_most)
        found = found or checkpoints.latest_good(source, warn=warn)
        if found is None:
            warn(f"no checkpoint to start from in {source}; starting from scratch")
            return
        tmp = folder / f".copy-{found.path.name}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copytree(found.path, tmp)
            os.replace(tmp, folder / found.path.name)
            return
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    warn(f"the checkpoints of {source} changed while they were copied; starting from scratch")
