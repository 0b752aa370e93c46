"""The epoch counter ``bench_schedulers.py``'s trainings append to and its harness reads.

Every epoch a training trains appends one JSON line to the file named by ``BENCH_COUNTER``:
its process, the epoch, the epoch's score under ``acc`` (maximised), the CPU-seconds it took
and when it ended. Kept apart from the trainings so that one without PyTorch starts fast.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


def count(epoch: int, accuracy: float, cpu: float) -> None:
    """Append one epoch to the counter (nothing when ``BENCH_COUNTER`` is unset)."""
    path = os.environ.get("BENCH_COUNTER")
    if not path:
        return
    line = json.dumps(
        {"pid": os.getpid(), "epoch": epoch, "acc": accuracy, "cpu": cpu, "t": time.time()}
    )
    # One short O_APPEND write per line: trials in parallel never interleave within a line.
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def end_epoch(epoch: int, score: float, started: float, cpu_started: float) -> None:
    """Close an epoch that began at ``started`` (``time.time()``) and ``cpu_started``
    (``time.process_time()``): sleep out the rest of ``BENCH_EPOCH_SECONDS`` (costing no CPU,
    so a scheduler's decision reaches a trial within an epoch) and append it to the counter."""
    cpu = time.process_time() - cpu_started
    rest = float(os.environ.get("BENCH_EPOCH_SECONDS", "0")) - (time.time() - started)
    if rest > 0:
        time.sleep(rest)
    count(epoch, score, cpu)


def read_counter(path: Path) -> list[dict[str, Any]]:
    """The counter's epochs in the order they ended."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["t"])
