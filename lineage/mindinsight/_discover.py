"""Find the training runs under a MindInsight summary base directory.

``SummaryCollector(summary_dir)`` writes, per training, ``events.out.events.summary.<time>.
<host>_MS`` (scalars, histograms, images, graph) and the same name ending in ``_lineage``
(hyperparameters, evaluation, dataset graph, user-defined info). MindInsight calls the
directory, relative to the base, the *train id*. One pair of files is one training run; a
directory that several trainings wrote to holds several pairs.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SummaryRun", "find_runs"]

_MARK = ".summary."
_SUFFIXES = ("_MS", "_lineage")


@dataclass(frozen=True)
class SummaryRun:
    """One training's files. ``stem`` is the file name without ``_MS``/``_lineage``."""

    base_dir: Path
    summary_dir: Path
    stem: str
    summary_file: Path | None
    lineage_file: Path | None

    @property
    def train_id(self) -> str:
        """MindInsight's name for the run: ``./`` + the directory relative to the base."""
        rel = self.summary_dir.relative_to(self.base_dir).as_posix()
        return "./" if rel == "." else f"./{rel}"

    @property
    def files(self) -> list[Path]:
        return [p for p in (self.lineage_file, self.summary_file) if p is not None]

    @property
    def key(self) -> str:
        """The run's file (lineage file first), relative to the base: what identifies it."""
        return self.files[0].relative_to(self.base_dir).as_posix()

    def content_hash(self) -> str:
        """SHA-256 over the run's files (names and bytes): changes when a file grows."""
        h = hashlib.sha256()
        for path in self.files:
            h.update(path.name.encode() + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            h.update(b"\0")
        return h.hexdigest()


def find_runs(base_dir: str | os.PathLike[str]) -> list[SummaryRun]:
    """Every training run under ``base_dir`` (recursively), in a stable order: by directory,
    then by the time in the file name."""
    base = Path(base_dir).resolve()
    groups: dict[tuple[Path, str], dict[str, Path]] = {}
    for root, dirs, files in os.walk(base):
        dirs.sort()
        for name in files:
            if _MARK not in name:
                continue
            for suffix in _SUFFIXES:
                if name.endswith(suffix):
                    stem = name[: -len(suffix)]
                    groups.setdefault((Path(root), stem), {})[suffix] = Path(root) / name
    runs = [
        SummaryRun(
            base_dir=base,
            summary_dir=directory,
            stem=stem,
            summary_file=found.get("_MS"),
            lineage_file=found.get("_lineage"),
        )
        for (directory, stem), found in groups.items()
    ]
    runs.sort(key=lambda r: (r.summary_dir.as_posix(), _time_of(r.stem), r.stem))
    return runs


def _time_of(stem: str) -> int:
    # events.out.events.summary.<unix time>.<pid or rank>.<host>
    part = stem.split(_MARK, 1)[1].split(".", 1)[0]
    return int(part) if part.isdigit() else 0
