"""The executor contract suite's trial: run as a process (local, Ray) or planned in-process.

argv: ``[--steps N] [--sleep S] [--exit CODE] [--out TEXT] [--err TEXT] [--dump PATH]``.
Reports ``loss = 1 / (step + 1)`` at steps 0..N-1 through `tuner.trial`, returns early (exit 0)
once asked to prune, prints TEXT to stdout / stderr, writes the variables it sees to PATH
(JSON; also on SIGTERM, with whether the prune flag was up), then exits with CODE.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES",
    "DEVICE_ID",
    "TUNER_TRIAL_NUMBER",
    "TUNER_ATTEMPT",
    "MLFLOW_RUN_ID",
)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--err", default=None)
    ap.add_argument("--dump", default=None)
    return ap.parse_args(list(argv))


def plan(argv: Sequence[str]) -> tuple[list[tuple[int, dict[str, float]]], int]:
    """What the in-process executor makes of the same argv: the reports and the exit code."""
    args = _parse(argv)
    return [(step, {"loss": 1.0 / (step + 1)}) for step in range(args.steps)], args.exit


def _dump(path: str | None, **extra: Any) -> None:
    if path:
        seen: dict[str, Any] = {k: os.environ.get(k) for k in KEYS}
        seen.update(extra)
        with open(path, "w") as f:
            json.dump(seen, f)


def main() -> None:
    from tuner import trial

    args = _parse(sys.argv[1:])

    def on_term(_signum: int, _frame: Any) -> None:
        _dump(args.dump, terminated=True, prune_flag=trial.should_prune())
        os._exit(143)

    signal.signal(signal.SIGTERM, on_term)
    if args.out:
        print(args.out, flush=True)
    if args.err:
        print(args.err, file=sys.stderr, flush=True)
    for step in range(args.steps):
        trial.report(step, loss=1.0 / (step + 1))
        if trial.should_prune():
            _dump(args.dump, pruned_at=step)
            sys.exit(0)
        time.sleep(args.sleep)
    _dump(args.dump)
    sys.exit(args.exit)


if __name__ == "__main__":
    main()
