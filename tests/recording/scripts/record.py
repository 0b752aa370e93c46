"""A training script driven by the recording tests: ``record.py MODE STORE PROGRESS [STEPS]``.

Prints its run id, then logs one point per step and writes the last step whose log call
returned to PROGRESS, so a test that kills it knows which points must be in the store.
MODE: ``with-*`` uses the context manager, ``plain-*`` a plain call (atexit, excepthook and
the signal handlers end the run); ``-handler-`` installs the script's own SIGTERM handler first; the suffix is ``exit``, ``raise`` or ``slow`` (sleeps 2 ms
a step, for tests that send a signal).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import lineage

mode, store, progress = sys.argv[1], sys.argv[2], Path(sys.argv[3])
tmp = progress.with_suffix(".tmp")
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000


def train() -> None:
    for step in range(steps):
        lineage.log_metric("loss", 1.0 / (step + 1), step=step)
        tmp.write_text(str(step))
        os.replace(tmp, progress)  # atomic: a reader never sees a half-written number
        if mode.endswith("raise") and step == 120:
            raise RuntimeError("loss diverged")
        if mode.endswith("slow"):
            time.sleep(0.002)


if "handler" in mode:
    # The program's own SIGTERM handler, installed before lineage's: it must still run.
    def on_term(signum: int, frame: object) -> None:
        progress.with_suffix(".sig").write_text("handled")
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)

if mode.startswith("plain"):
    run = lineage.start_run(experiment="scripts", params={"mode": mode}, tracking_uri=store)
    print(run.run_id, flush=True)
    train()
else:
    with lineage.start_run(experiment="scripts", params={"mode": mode}, tracking_uri=store) as run:
        print(run.run_id, flush=True)
        train()
