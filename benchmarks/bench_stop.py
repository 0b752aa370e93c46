"""How long `tuner run` takes to end after one SIGTERM, under each scheduler.

Each round starts a fresh campaign (MLflow and Optuna on SQLite, two trials at a time) as a
real `tuner run` process and sends it SIGTERM once the trials are under way: under PBT once
members have been copied over and restarted (interval 1, a loss that rises every step, so
the copies keep coming), under ASHA once trials have been paused at a rung, and with the
default (no scheduler) once two trials have reported. It times the signal to the process's
exit and checks the exit code (130) and that the campaign's MLflow run was closed (KILLED).
Prints the median and the worst per scheduler. Run:
``python benchmarks/bench_stop.py [--rounds 5] [--schedulers pbt asha none]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

#: Steps of 0.1 s with a checkpoint each; the loss rises with the step (PBT copies often).
SCRIPT = """
import argparse, json, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--lr", type=float); lr = ap.parse_args().lr
resume = trial.resume_from()
start = 0 if resume is None else resume[1] + 1
for step in range(start, 60):
    if trial.should_prune():
        break
    time.sleep(0.1)
    trial.report(step, loss=1 + step + lr)
    (trial.checkpoint_dir(step) / "s.json").write_text(json.dumps({"step": step}))
    trial.checkpointed(step)
"""

SCHEDULERS: dict[str, dict[str, Any] | None] = {
    "pbt": {
        "name": "pbt",
        "population": 2,
        "interval": 1,
        "quantile": 0.5,
        "perturb": {"lr": {"factor": [0.8, 1.2]}},
    },
    "asha": {"name": "asha", "min_resource": 1, "max_resource": 60, "reduction_factor": 3},
    "none": None,
}


def _config(folder: Path, scheduler: str) -> None:
    import yaml

    data: dict[str, Any] = {
        "name": "stop",
        "command": [sys.executable, "trial.py", "--lr", "{lr}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"lr": {"type": "float", "low": 0.01, "high": 1.0, "log": True}},
        "budget": {"trials": 2 if scheduler == "pbt" else 50},
        "trial": {"grace_period": 5},
        "diagnosis": {"early_stop": False},  # the loss rises on purpose
        "resources": {"kind": "cpu", "parallel": 2},
        "sampler": {"name": "random", "seed": 1},
        "lineage": {"tracking_uri": f"sqlite:///{folder / 'mlflow.db'}"},
    }
    if SCHEDULERS[scheduler] is not None:
        data["scheduler"] = SCHEDULERS[scheduler]
    (folder / "trial.py").write_text(SCRIPT)
    (folder / "campaign.yaml").write_text(yaml.safe_dump(data))


def _under_way(folder: Path, scheduler: str) -> bool:
    import optuna

    try:
        study = optuna.load_study(study_name="stop", storage=f"sqlite:///{folder / 'optuna.db'}")
        trials = study.get_trials(deepcopy=False)
    except Exception:  # not created yet
        return False
    if scheduler == "pbt":
        return sum(1 for t in trials if "tuner.exploit" in t.user_attrs) >= 3
    if scheduler == "asha":  # trials paused at a rung, others running
        return sum(1 for t in trials if t.state.name == "PRUNED") >= 2
    return sum(1 for t in trials if t.intermediate_values) >= 2


def _parent_status(folder: Path) -> str | None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    exp = client.get_experiment_by_name("stop")
    if exp is None:
        return None
    for run in client.search_runs([exp.experiment_id]):
        if run.data.tags.get("lineage.run_type") == "campaign":
            return str(run.info.status)
    return None


def one_round(workdir: Path, scheduler: str, index: int) -> dict[str, Any]:
    folder = workdir / f"{scheduler}-{index}"
    folder.mkdir(parents=True)
    _config(folder, scheduler)
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "run", "campaign.yaml", "--quiet"],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not _under_way(folder, scheduler):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"{scheduler} round {index}: the campaign did not get under way")
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
    took = time.monotonic() - sent
    err = proc.stderr.read() if proc.stderr else ""
    return {
        "seconds": took,
        "exit_code": proc.returncode,
        "campaign_run": _parent_status(folder),
        "error": err[-300:] if proc.returncode != 130 else "",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--schedulers", nargs="+", default=list(SCHEDULERS), choices=SCHEDULERS)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-stop-"))
    figures: dict[str, Any] = {}
    try:
        for scheduler in args.schedulers:
            rounds = [one_round(workdir, scheduler, i) for i in range(args.rounds)]
            seconds = [r["seconds"] for r in rounds]
            figures[scheduler] = {
                "rounds": len(rounds),
                "median_s": round(statistics.median(seconds), 2),
                "worst_s": round(max(seconds), 2),
                "exits_130": sum(1 for r in rounds if r["exit_code"] == 130),
                "campaign_run_killed": sum(1 for r in rounds if r["campaign_run"] == "KILLED"),
            }
            for r in rounds:
                if r["error"]:
                    print(f"{scheduler}: exit {r['exit_code']}: {r['error']}", file=sys.stderr)
            f = figures[scheduler]
            print(
                f"{scheduler}: SIGTERM to exit median {f['median_s']} s, worst {f['worst_s']} s "
                f"over {f['rounds']} rounds; exit 130 in {f['exits_130']}, campaign run KILLED "
                f"in {f['campaign_run_killed']}"
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    path = write_result("stop", figures, store="sqlite", params=vars(args))
    if args.json:
        print(json.dumps(figures, indent=2))
    print(f"results: {path}")


if __name__ == "__main__":
    main()
