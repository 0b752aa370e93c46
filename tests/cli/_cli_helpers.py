"""Helpers of the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class PlainStore:
    """A store logged by plain mlflow: its URI and the run ids by run name."""

    uri: str
    ids: dict[str, str]


def lineage(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``lineage ARGS`` in a subprocess, as a user runs it."""
    # A wide virtual terminal, so that tables are not folded into unreadable columns.
    env = {**os.environ, "COLUMNS": "250"}
    proc = subprocess.run(
        [sys.executable, "-m", "lineage.cli", *args], capture_output=True, text=True, env=env
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"lineage {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return proc
