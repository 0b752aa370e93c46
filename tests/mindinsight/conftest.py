"""Fixtures: real summary directories written by MindSpore's SummaryCollector on CPU.

``summaries`` runs ``_make_summaries.py`` once per session in a subprocess (MindSpore is
imported there only; the tests read the files without it): 8 trainings in ``base/``, and
the first one's configuration also recorded by ``LineageCallback`` into ``callback_uri``.
Tests that modify a directory work on a copy (``copy_base``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Summaries:
    root: Path
    base: Path
    callback_uri: str
    runs: dict[str, dict[str, float]]


@pytest.fixture(scope="session")
def summaries(tmp_path_factory: pytest.TempPathFactory) -> Summaries:
    root = tmp_path_factory.mktemp("summaries")
    uri = f"sqlite:///{root / 'callback.db'}"
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    env.pop("MLFLOW_RUN_ID", None)
    done = subprocess.run(
        [sys.executable, str(HERE / "_make_summaries.py"), str(root), uri],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    return Summaries(root, root / "base", uri, runs)


def _writable_copy(src: Path, dest: Path) -> Path:
    # SummaryCollector leaves its files read-only (0400): copies must be writable to damage.
    shutil.copytree(src, dest)
    for path in dest.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR | (stat.S_IXUSR if path.is_dir() else 0))
    return dest


@pytest.fixture
def copy_base(summaries: Summaries, tmp_path: Path) -> Path:
    """A writable copy of the 8-run base directory."""
    return _writable_copy(summaries.base, tmp_path / "summary_base")
