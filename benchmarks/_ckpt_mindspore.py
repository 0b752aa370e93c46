"""The MindSpore arm of ``bench_checkpoint.py``: the digits example under interruptions.

The trial is ``examples/mindspore_digits/train.py`` as it is (its only checkpoint code is
``LineageCallback``), run through a small wrapper that watches the lines it prints. The
wrapper counts an epoch when its training steps finished (the ``epoch: N step:`` line) and,
when the seeded plan picks this trial (by the order in which trials first start; a
re-queued trial, known by its parameters, keeps its place), interrupts it once, right after epoch N trained: a SIGKILL
of its own process, or a SIGTERM of the controller (the benchmark then runs ``tuner
resume``). An attempt counts as interrupted when it started and never finished, so the
other trial a stopped controller ends counts as well.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mindspore_digits" / "train.py"

WRAPPER = """
import hashlib, json, os, runpy, signal, sys, time
plan = json.load(open("plan.json"))
arm, number = os.environ["ARM"], os.environ["TUNER_TRIAL_NUMBER"]
me = f"{number}-{os.getpid()}"
# A trial is known by its parameters: a re-queued trial runs under a new number.
params = json.dumps(json.loads(os.environ["TUNER_PARAMS"]), sort_keys=True)
trial_key = hashlib.sha256(params.encode()).hexdigest()[:12]
# The i-th trial to start (re-queued ones keep their place) gets the plan's i-th entry.
with open("order", "a") as fh:
    pass
if trial_key not in open("order").read().split():
    with open("order", "a") as fh:
        fh.write(trial_key + "\\n")
step = plan.get(str(open("order").read().split().index(trial_key)))
open(f"start-{me}", "w").close()
if arm == "restart":  # the retry starts over: the checkpoint it is handed is ignored
    for key in ("TUNER_RESUME_FROM", "TUNER_RESUME_STEP", "TUNER_RESUME_CHANGED"):
        os.environ.pop(key, None)


class Tee:
    def __init__(self, out):
        self.out, self.line = out, ""

    def write(self, text):
        self.line += text
        while "\\n" in self.line:
            line, self.line = self.line.split("\\n", 1)
            self.seen(line)
        return self.out.write(text)

    def flush(self):
        self.out.flush()

    def seen(self, line):
        if not (line.startswith("epoch: ") and " step: " in line):
            return
        with open("epochs", "a") as fh:
            fh.write("1\\n")
        epoch = int(line.split()[1])
        if step is None or epoch != step[1] or os.path.exists(f"hit-{trial_key}"):
            return
        open(f"hit-{trial_key}", "w").close()
        with open("planned", "a") as fh:
            fh.write(step[0] + "\\n")
        if step[0] == "trial":
            os.kill(os.getpid(), signal.SIGKILL)
        open(f"controller-stopped-{trial_key}", "w").close()
        os.kill(int(open("controller.pid").read()), signal.SIGTERM)
        while True:  # the stopping controller ends this process
            time.sleep(0.1)


sys.stdout = Tee(sys.stdout)
sys.argv = [sys.argv[1]] + sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as stop:
    if stop.code not in (None, 0):
        raise
open(f"done-{me}", "w").close()
"""


KINDS = ("trial", "controller")


def plan(trials: int, epochs: int, share: float, seed: int) -> dict[str, list[Any]]:
    """Which trials (in the order they start) are interrupted, how, and after which epoch:
    seeded, the same in every arm; the kinds alternate over the chosen trials."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(trials), max(1, round(share * trials))))
    return {str(n): [KINDS[i % 2], rng.randint(1, epochs - 1)] for i, n in enumerate(chosen)}


def _config(arm: str, work: Path, args: Any) -> dict[str, Any]:
    return {
        "name": f"ckpt-ms-{arm}",
        "command": [sys.executable, "wrap.py", str(EXAMPLE), "--epochs", str(args.epochs),
                    "--train-size", str(args.train_size)],
        "target": {"metric": "val_accuracy", "goal": "maximize"},
        "parameters": {
            "lr": {"type": "float", "low": 0.005, "high": 0.2, "log": True},
            "batch_size": {"type": "categorical", "choices": [16, 32]},
        },
        "budget": {"trials": args.trials, "max_failures": 4 * args.trials},
        "trial": {"retries": 1, "retry_on": ["SIGKILL"]},
        "sampler": {"name": "random", "seed": args.seed},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 2},
        "env": {"ARM": arm},
        "lineage": {"tracking_uri": f"sqlite:///{work / 'mlflow.db'}"},
        "diagnosis": {"early_stop": False},
        "analysis": {"method": "forest"},
    }  # fmt: skip


def _campaign(work: Path, env: dict[str, str]) -> tuple[int, float]:
    """``tuner run``, then ``tuner resume`` after each controller the plan stopped; returns
    the number of controller restarts and the wall time."""
    tuner = str(Path(sys.executable).with_name("tuner"))
    command, restarts, t0 = "run", 0, time.perf_counter()
    while True:
        stopped_before = len(list(work.glob("controller-stopped-*")))
        proc = subprocess.Popen(
            [tuner, command, "c.yaml", "--quiet"], cwd=work, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        (work / "controller.pid").write_text(str(proc.pid))
        _, err = proc.communicate()
        if len(list(work.glob("controller-stopped-*"))) > stopped_before:
            command, restarts = "resume", restarts + 1
            continue
        if proc.returncode != 0:
            raise SystemExit(f"tuner {command} failed: {err[-2000:]}")
        return restarts, time.perf_counter() - t0


def arm(name: str, args: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-ckpt-ms-{name}-") as tmp:
        work = Path(tmp)
        (work / "wrap.py").write_text(WRAPPER)
        chosen = {}
        if name != "uninterrupted":
            chosen = plan(args.trials, args.epochs, args.share, args.seed)
        (work / "plan.json").write_text(json.dumps(chosen))
        (work / "c.yaml").write_text(yaml.safe_dump(_config(name, work, args)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
        env["ARM"] = "restart" if name == "restart" else "resume"
        restarts, wall = _campaign(work, env)
        trained = len((work / "epochs").read_text().split())
        started = {p.name[len("start-") :] for p in work.glob("start-*")}
        finished = {p.name[len("done-") :] for p in work.glob("done-*")}
        planned = work / "planned"
        kinds = planned.read_text().split() if planned.exists() else []
        import optuna

        study = optuna.load_study(
            study_name=f"ckpt-ms-{name}", storage=f"sqlite:///{work / 'optuna.db'}"
        )
        best = max(t.value for t in study.trials if t.value is not None)
    interrupted = len(started - finished)
    extra = trained - args.trials * args.epochs
    return {
        "epochs_trained": trained,
        "attempts": len(started),
        "interrupted_attempts": interrupted,
        "planned_trial_kills": kinds.count("trial"),
        "planned_controller_stops": kinds.count("controller"),
        "controller_restarts": restarts,
        "extra_epochs": extra,
        "extra_epochs_per_interruption": round(extra / interrupted, 2) if interrupted else 0.0,
        "wall_s": round(wall, 1),
        "best": round(best, 6),
    }
