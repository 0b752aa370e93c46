"""The tuner's arms of ``bench_schedulers.py``: one ``tuner run`` campaign per arm and seed.

Each campaign runs its task's training (``_schedulers_train.py`` for ``digits``,
``_schedulers_nqm.py`` for ``nqm``) on two CPU slots (PBT: one per member) and is stopped
(SIGTERM, as Ctrl-C) once the counter holds the epoch budget; the analysis reads only the
first ``budget`` epochs, so an epoch still in flight at the stop does not count.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _schedulers_nqm
from _schedulers_counter import read_counter

HERE = Path(__file__).resolve().parent

#: The search space, in the config's words (Ray Tune's arms sample the same ranges).
SPACE: dict[str, Any] = {
    "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
    "momentum": {"type": "float", "low": 0.0, "high": 0.99},
    "weight_decay": {"type": "float", "low": 1e-6, "high": 0.1, "log": True},
    "hidden": {"type": "int", "low": 8, "high": 256, "log": True},
}

#: Per task: its training script, the metric it reports (maximised), its search space and
#: the parameters PBT perturbs.
TASKS: dict[str, dict[str, Any]] = {
    "digits": {
        "script": "_schedulers_train.py",
        "metric": "val_accuracy",
        "space": SPACE,
        "perturb": ("lr", "momentum", "weight_decay"),
    },
    "nqm": {
        "script": "_schedulers_nqm.py",
        "metric": "score",
        "space": _schedulers_nqm.SPACE,
        "perturb": ("lr", "momentum"),
    },
}


def _pruner(arm: str, opts: dict[str, Any]) -> dict[str, Any]:
    if arm == "tpe-median":
        return {"name": "median"}
    if arm == "tpe-sha":
        return {
            "name": "successive_halving",
            "options": {"min_resource": opts["min_resource"], "reduction_factor": 3},
        }
    return {"name": "none"}


def _scheduler(arm: str, opts: dict[str, Any]) -> dict[str, Any] | None:
    if arm in ("tuner-asha", "tuner-hyperband", "tuner-bohb"):
        return {
            "name": "asha",
            "mode": "promote",
            "reduction_factor": 3,
            "min_resource": opts["min_resource"],
            "max_resource": opts["max_epochs"],
            "brackets": 1 if arm == "tuner-asha" else 3,
            # tuner-bohb: the recommended scheduler, the sampler fitted at a rung.
            "model": "rung" if arm == "tuner-bohb" else "study",
        }
    if arm in ("tuner-pbt", "tuner-pbt-synch"):
        return {
            "name": "pbt",
            "population": opts["population"],
            "interval": opts["interval"],
            "quantile": 0.25,
            "synch": arm == "tuner-pbt-synch",
            # Ray Tune's default explore: multiply by 0.8 or 1.2; the width stays.
            "perturb": {
                k: {"factor": [0.8, 1.2]} for k in TASKS[opts.get("task", "digits")]["perturb"]
            },
        }
    return None


def config(arm: str, seed: int, work: Path, opts: dict[str, Any]) -> dict[str, Any]:
    """The campaign config of ``arm`` (``tpe-none``, ``tpe-median``, ``tpe-sha``,
    ``tuner-asha``, ``tuner-hyperband``, ``tuner-bohb``, ``tuner-pbt``,
    ``tuner-pbt-synch``) on ``opts["task"]`` (``digits`` when absent)."""
    task = TASKS[opts.get("task", "digits")]
    data: dict[str, Any] = {
        "name": f"{arm}-{seed}",
        "command": [sys.executable, str(HERE / task["script"])],
        "target": {"metric": task["metric"], "goal": "maximize"},
        "parameters": task["space"],
        "reads_tuner_params": True,
        # More trials than the epoch budget can hold: the harness stops the campaign (PBT's
        # members are its trials: population x max_epochs is its budget).
        "budget": {"trials": opts["budget"], "max_failures": opts["budget"]},
        "sampler": {"name": "tpe", "seed": seed},
        "pruner": _pruner(arm, opts),
        "resources": {"kind": "cpu", "parallel": 2},
        "env": {
            "BENCH_COUNTER": str(work / "counter.jsonl"),
            "BENCH_EPOCH_SECONDS": str(opts["epoch_seconds"]),
            "BENCH_MAX_EPOCHS": str(opts["max_epochs"]),
            "SEED": str(seed * 1000),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        "lineage": {"tracking_uri": f"sqlite:///{work / 'mlflow.db'}"},
        "diagnosis": {"early_stop": False},
        "analysis": {"method": "forest"},
    }
    scheduler = _scheduler(arm, opts)
    if scheduler is not None:
        data["scheduler"] = scheduler
        data["pruner"] = {"name": "none"}
        if scheduler["name"] == "pbt":
            # PBT exploits running members: the whole population runs at once (an epoch's
            # computation is milliseconds; the rest of it is slept), as Ray Tune's PBT arm.
            data["budget"]["trials"] = opts["population"]
            data["resources"]["parallel"] = opts["population"]
    return data


def run(arm: str, seed: int, opts: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    """Run one campaign; returns its counted epochs (in the order they ended) and wall time."""
    with tempfile.TemporaryDirectory(prefix=f"bench-sched-{arm}-") as tmp:
        work = Path(tmp)
        (work / "c.yaml").write_text(yaml.safe_dump(config(arm, seed, work, opts)))
        counter = work / "counter.jsonl"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
        tuner = str(Path(sys.executable).with_name("tuner"))
        log = (work / "tuner.log").open("w")
        started = time.perf_counter()
        proc = subprocess.Popen(
            [tuner, "run", "c.yaml", "--quiet"], cwd=work, env=env, stdout=log, stderr=log
        )
        try:
            while proc.poll() is None and len(read_counter(counter)) < opts["budget"]:
                time.sleep(0.5)
        finally:  # the budget is spent, or this harness is stopped: stop the campaign too
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            proc.wait()
        wall = time.perf_counter() - started
        log.close()
        rows = read_counter(counter)
        if not rows:
            tail = (work / "tuner.log").read_text()[-2000:]
            raise RuntimeError(f"{arm} seed {seed}: no epoch trained; tuner run said:\n{tail}")
        return rows, wall
