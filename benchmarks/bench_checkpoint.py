"""Epochs lost to interruptions, with and without trial checkpoints, side by side in one run.

A campaign of ``--trials`` trials, each a ``--epochs``-epoch training (a plain Python script,
``--epoch-seconds`` of work per epoch, a deterministic loss). The first attempt of every trial
is killed once from outside, with SIGKILL, at a random time (seeded per trial, the same in
both arms) between 10% and 90% of its expected training time: mid-epoch, while it writes a
checkpoint, wherever the moment falls, as a preemption or an OOM kill would.
``trial.retries: 1, trial.retry_on: [SIGKILL]`` runs it again. Two arms, the same seed:

- **restart**: the script ignores the checkpoint it is handed, so every retry starts from
  epoch 0. This is what the tuner did before checkpoints, and what Optuna's own retry
  (``RetryFailedTrialCallback``) and W&B Sweeps do: a retried trial starts over.
- **resume**: the script checkpoints every epoch (``tuner.trial.checkpoint_dir`` /
  ``checkpointed``) and continues from ``tuner.trial.resume_from()``.

An epoch counts as executed once it has started (an epoch cut short by the kill was work
too). Reported per arm: epochs executed, the kills that landed (an attempt that had already
finished is not killed), extra epochs per interruption (executed minus trials x epochs, over
the interruptions), wall time, and the best value (the same in both arms: an interruption
must not change a result).

    python benchmarks/bench_checkpoint.py [--trials 12] [--epochs 10] [--epoch-seconds 0.05]

Writes ``benchmarks/results/checkpoint.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

SCRIPT = """
import os, sys, time
from tuner import trial
x, epochs, work = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
name = f"pid-{trial.number()}-{os.environ['TUNER_ATTEMPT']}"
with open(name + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.replace(name + ".tmp", name)
resume = trial.resume_from() if os.environ.get("ARM") == "resume" else None
start = resume[1] + 1 if resume is not None else 0
for epoch in range(start, epochs):
    with open("epochs", "a") as fh:
        fh.write("1\\n")
    time.sleep(work)
    trial.report(epoch, loss=(x - 0.3) ** 2 + 1.0 / (epoch + 1))
    if os.environ.get("ARM") == "resume":
        (trial.checkpoint_dir(epoch) / "state").write_text(str(epoch))
        trial.checkpointed(epoch)
open(name + ".done", "w").close()
"""


class _Killer:
    """Kills each trial's first attempt once, with SIGKILL, at a random time after it starts
    (seeded by the trial number); counts the kills that landed."""

    def __init__(self, work: Path, seconds: float) -> None:
        self._work, self._seconds = work, seconds
        self._stop = threading.Event()
        self._timers: list[threading.Timer] = []
        self.landed = 0
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        seen: set[str] = set()
        while not self._stop.is_set():
            for path in self._work.glob("pid-*-1"):
                if path.name in seen:
                    continue
                seen.add(path.name)
                number = int(path.name.split("-")[1])
                delay = random.Random(number).uniform(0.1, 0.9) * self._seconds
                timer = threading.Timer(delay, self._kill, (int(path.read_text()), path))
                self._timers.append(timer)
                timer.start()
            self._stop.wait(0.005)

    def _kill(self, pid: int, path: Path) -> None:
        if path.with_name(path.name + ".done").exists():
            return  # it finished first: nothing to interrupt
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self.landed += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for timer in self._timers:
            timer.cancel()


def _arm(arm: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-ckpt-{arm}-") as tmp:
        work = Path(tmp)
        (work / "train.py").write_text(textwrap.dedent(SCRIPT))
        config = {
            "name": f"ckpt-{arm}",
            "command": [
                sys.executable,
                "train.py",
                "{x}",
                str(args.epochs),
                str(args.epoch_seconds),
            ],
            "target": {"metric": "loss", "goal": "minimize"},
            "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
            "budget": {"trials": args.trials, "max_failures": args.trials + 1},
            "trial": {"retries": 1, "retry_on": ["SIGKILL"]},
            "sampler": {"name": "random", "seed": 5},
            "pruner": {"name": "none"},
            "resources": {"kind": "cpu", "parallel": 2},
            "env": {"ARM": arm},
            "lineage": {"tracking_uri": f"sqlite:///{work / 'mlflow.db'}"},
            "diagnosis": {"early_stop": False},
            "analysis": {"method": "forest"},
        }
        (work / "c.yaml").write_text(yaml.safe_dump(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
        tuner = str(Path(sys.executable).with_name("tuner"))
        killer = _Killer(work, args.epochs * args.epoch_seconds)
        t0 = time.perf_counter()
        try:
            done = subprocess.run(
                [tuner, "run", "c.yaml", "--quiet"],
                cwd=work, env=env, capture_output=True, text=True,
            )  # fmt: skip
        finally:
            killer.close()
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"{arm}: tuner run failed: {done.stderr[-2000:]}")
        executed = len((work / "epochs").read_text().split())
        interruptions = killer.landed
        import optuna

        study = optuna.load_study(
            study_name=f"ckpt-{arm}", storage=f"sqlite:///{work / 'optuna.db'}"
        )
        best = min(t.value for t in study.trials if t.value is not None)
    extra = executed - args.trials * args.epochs
    return {
        "epochs_executed": executed,
        "interruptions": interruptions,
        "extra_epochs_per_interruption": round(extra / max(1, interruptions), 2),
        "wall_s": round(wall, 1),
        "best": round(best, 6),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--epoch-seconds", type=float, default=0.05)
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    figures = {arm: _arm(arm, args) for arm in ("restart", "resume")}
    print(f"{'arm':8} {'epochs':>7} {'interrupted':>11} {'extra/interr.':>13} {'wall s':>7} best")
    for arm, f in figures.items():
        print(
            f"{arm:8} {f['epochs_executed']:7d} {f['interruptions']:11d} "
            f"{f['extra_epochs_per_interruption']:13.2f} {f['wall_s']:7.1f} {f['best']}"
        )
    restart, resume = figures["restart"], figures["resume"]
    ratio = resume["epochs_executed"] / restart["epochs_executed"]
    print(f"resume / restart, epochs executed: {ratio:.2f}")
    figures["epochs_ratio"] = round(ratio, 3)
    path = write_result(
        "checkpoint",
        figures,
        store="sqlite",
        params=vars(args) | {"results_dir": None},
        results_dir=args.results_dir,
    )
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
