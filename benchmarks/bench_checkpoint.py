"""Epochs lost to interruptions, with and without trial checkpoints, side by side in one run.

Default mode: a real MindSpore training, ``examples/mindspore_digits/train.py`` unchanged (its
only checkpoint code is ``LineageCallback``, checkpointing every epoch), ``--epochs`` 20 per
trial, ``--trials`` 8 at parallel 2, ``--train-size`` 400 digits images so that the three
campaigns fit in minutes on two cores. A seeded plan picks ``--share`` of the trials (0.5:
4 of 8, by the order in which they first start; a re-queued trial, known by its parameters,
keeps its place, and the seeded sampler draws the same parameters in every arm) and
interrupts each once, right after the training steps of an epoch drawn from 1..epochs-1,
the kinds alternating:

- **trial**: SIGKILL of the trial process; ``trial.retries: 1, retry_on: [SIGKILL]`` runs it
  again;
- **controller**: SIGTERM of the controller (it stops the running trials, both of them, and
  re-queues them), then ``tuner resume``.

A ``tuner worker`` killed with its trial re-queued by a survivor is not one of the kinds: it
needs a shared store and a second worker, and the heartbeat grace period it waits out would
dominate the wall time; it is not measured here. Every attempt that started and did not
finish counts as an interruption, so a stopped controller counts the other running trial
too (the printed attempts and interrupted attempts give the share; the measure asks for
40%). Three campaigns, the same seed and plan:

- **uninterrupted**: no interruption; the work every other arm is measured against;
- **restart**: a retried or re-queued trial starts from epoch 0 (the wrapper drops the
  checkpoint the tuner hands it). This is what the tuner did before checkpoints, and what
  Optuna's ``RetryFailedTrialCallback`` and W&B Sweeps do;
- **resume**: the trial continues from its last checkpoint.

An epoch counts as trained when its training steps finished (one cut short mid-epoch does
not count, in any arm). A planned interruption lands right after that, before the epoch's
evaluation and checkpoint, so a resumed trial trains that epoch once more: the goal is at most one extra epoch per interruption. Printed per arm:
epochs trained, attempts, interrupted attempts, controller restarts, extra epochs (trained
minus trials x epochs) and per interruption, wall time, the best ``val_accuracy`` and
whether it equals the uninterrupted campaign's (MindSpore on CPU is deterministic here, and
a resumed epoch gets the batches an uninterrupted one would).

``--plain``: the earlier mode, a plain Python script (``--epoch-seconds`` of work per epoch,
a deterministic loss, ``--trials`` 12 x ``--epochs`` 10) whose every first attempt is
SIGKILLed at a random moment, mid-epoch or while it writes a checkpoint; writes
``checkpoint_plain.json``.

    python benchmarks/bench_checkpoint.py [--trials 8] [--epochs 20] [--share 0.5]
    python benchmarks/bench_checkpoint.py --plain [--trials 12] [--epochs 10]

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


def _plain(args: argparse.Namespace) -> int:
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
    params = {k: v for k, v in vars(args).items() if k in ("trials", "epochs", "epoch_seconds")}
    path = write_result(
        "checkpoint_plain", figures, store="sqlite", params=params, results_dir=args.results_dir
    )
    print(f"result: {path}")
    return 0


def _mindspore(args: argparse.Namespace) -> int:
    from _ckpt_mindspore import arm, plan

    print(
        f"plan {{start order: [kind, after epoch]}}: {plan(args.trials, args.epochs, args.share, args.seed)}"
    )

    figures: dict[str, Any] = {
        name: arm(name, args) for name in ("uninterrupted", "restart", "resume")
    }
    reference = figures["uninterrupted"]["best"]
    print(
        f"{'arm':13} {'epochs':>6} {'attempts':>8} {'interrupted':>11} {'extra':>5} "
        f"{'extra/interr.':>13} {'wall s':>7} {'best':>8} same best"
    )
    for name in ("uninterrupted", "restart", "resume"):
        f = figures[name]
        f["best_equals_uninterrupted"] = f["best"] == reference
        print(
            f"{name:13} {f['epochs_trained']:6d} {f['attempts']:8d} {f['interrupted_attempts']:11d} "
            f"{f['extra_epochs']:5d} {f['extra_epochs_per_interruption']:13.2f} {f['wall_s']:7.1f} "
            f"{f['best']:8.4f} {f['best_equals_uninterrupted']}"
        )
        print(
            f"{'':13} planned: {f['planned_trial_kills']} trial SIGKILL(s), "
            f"{f['planned_controller_stops']} controller SIGTERM(s), "
            f"{f['controller_restarts']} tuner resume(s)"
        )
    params = {
        k: v
        for k, v in vars(args).items()
        if k in ("trials", "epochs", "share", "seed", "train_size")
    }
    path = write_result(
        "checkpoint", figures, store="sqlite", params=params | {"parallel": 2},
        results_dir=args.results_dir,
    )  # fmt: skip
    print(f"result: {path}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plain", action="store_true", help="the plain-script mode")
    ap.add_argument("--trials", type=int, default=None, help="8 (MindSpore), 12 (--plain)")
    ap.add_argument("--epochs", type=int, default=None, help="20 (MindSpore), 10 (--plain)")
    ap.add_argument("--epoch-seconds", type=float, default=0.05, help="--plain only")
    ap.add_argument("--share", type=float, default=0.5, help="share of trials interrupted")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--train-size", type=int, default=400, help="digits training images")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    args.trials = args.trials or (12 if args.plain else 8)
    args.epochs = args.epochs or (10 if args.plain else 20)
    return _plain(args) if args.plain else _mindspore(args)


if __name__ == "__main__":
    sys.exit(main())
