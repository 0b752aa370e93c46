"""Find the training runs under a MindInsight summary base directory.

``SummaryCollector(summary_dir)`` writes ``events.out.events.summary.<time>.<host>_MS``
(scalars, histograms, images, graph) and the same name ending in ``_lineage``
(hyperparameters, evaluation, dataset graph, user-defined info). A ``model.eval`` with the
same collector after ``model.train`` writes a second pair into the same directory. MindInsight
treats a directory, named by its path relative to the base (the *train id*), as one training:
it merges the directory's lineage files in time order and shows its scalar files together.
The same unit is used here: one directory holding summary files is one run.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SummaryRun", "find_runs"]

_MARK = ".summary."


@dataclass(frozen=True)
class SummaryRun:
    """One training: a directory and its summary files, oldest first."""

    base_dir: Path
    summary_dir: Path
    lineage_files: tuple[Path, ...]
    summary_files: tuple[Path, ...]

    @property
    def train_id(self) -> str:
        """MindInsight's name for the run: ``./`` + the directory relative to the base."""
        rel = self.summary_dir.relative_to(self.base_dir).as_posix()
        return "./" if rel == "." else f"./{rel}"

    @property
    def files(self) -> list[Path]:
        return [*self.lineage_files, *self.summary_files]

    def content_hash(self) -> str:
        """SHA-256 over the run's files (names and bytes): changes when a file grows or a
        file is added."""
        h = hashlib.sha256()
        for path in sorted(self.files, key=lambda p: p.name):
            h.update(path.name.encode() + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            h.update(b"\0")
        return h.hexdigest()


def find_runs(base_dir: str | os.PathLike[str]) -> list[SummaryRun]:
    """Every directory under ``base_dir`` (itself included, recursively) that holds summary
    files, in path order."""
    base = Path(base_dir).resolve()
    runs = []
    for root, dirs, files in os.walk(base):
        dirs.sort()
        lineage = sorted((f for f in files if _MARK in f and f.endswith("_lineage")), key=_order)
        scalars = sorted((f for f in files if _MARK in f and f.endswith("_MS")), key=_order)
        if lineage or scalars:
            here = Path(root)
            runs.append(
                SummaryRun(
                    base_dir=base,
                    summary_dir=here,
                    lineage_files=tuple(here / f for f in lineage),
                    summary_files=tuple(here / f for f in scalars),
                )
            )
    return runs


def _order(name: str) -> tuple[int, str]:
    # events.out.events.summary.<unix time>.<pid or rank>.<host>_<kind>
    part = name.split(_MARK, 1)[1].split(".", 1)[0]
    return (int(part) if part.isdigit() else 0, name)
