"""Helpers of the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

CACHE_DIR = os.path.join(tempfile.gettempdir(), f"lineage-test-cache-{os.getpid()}")


@dataclass(frozen=True)
class PlainStore:
    """A store logged by plain mlflow: its URI and the run ids by run name."""

    uri: str
    ids: dict[str, str]


def lineage(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``lineage ARGS`` in a subprocess, as a user runs it."""
    # A wide virtual terminal, so that tables are not folded into unreadable columns.
    # Its own run-table cache, not the user's ~/.cache.
    env = {**os.environ, "COLUMNS": "250", "LINEAGE_CACHE_DIR": CACHE_DIR}
    proc = subprocess.run(
        [sys.executable, "-m", "lineage.cli", *args], capture_output=True, text=True, env=env
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"lineage {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return proc
