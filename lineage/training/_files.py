"""The temporary folder a training recorder writes its artifacts through."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ArtifactFolder"]


class ArtifactFolder:
    """Files written locally before a run uploads them: one temporary folder, made on first
    use and removed by :meth:`close` (the run holds its own copy once it has logged a file)."""

    def __init__(self) -> None:
        self._root: Path | None = None

    def path(self, rel: str) -> Path:
        """Where the file ``rel`` goes, its folder created."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="lineage-run-"))
        path = self._root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def log(self, run: Any, rel: str, content: Any) -> None:
        """Write ``content`` (text as is, anything else as indented JSON) to ``rel`` and log
        it as the artifact ``rel`` of ``run``."""
        path = self.path(rel)
        text = content if isinstance(content, str) else json.dumps(content, indent=1, default=str)
        path.write_text(text, encoding="utf-8")
        parent = str(Path(rel).parent)
        run.log_artifact(path, None if parent == "." else parent)

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
