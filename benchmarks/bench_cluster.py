"""Cluster benchmarks, side by side in one run.

1. The 40-trial workload (each trial sleeps 0.5 s, 2 at a time; ideal 10 s) through
   ``tuner run`` with ``executor: ray`` vs Ray Tune with OptunaSearch, on one local Ray
   instance (2 CPUs), with ``executor: local`` as the baseline. Efficiency = ideal / actual
   wall time. Both tuner runs record every trial in MLflow (SQLite) and Optuna (SQLite).
2. 4 workers x 250 trials on one study (no trial processes: the storage path alone), the
   tuner way (study lock + heartbeats, `tuner.coordination`) on PostgreSQL and on SQLite
   (WAL), and plain ``study.optimize`` from 4 processes on a default SQLite file (what
   users report as "database is locked"). Throughput and errors.

    python benchmarks/bench_cluster.py [--skip-ray] [--skip-storage] [--json out.json]

Needs PostgreSQL at 127.0.0.1:5432 (user postgres, trust) for part 2.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

TRIALS, SLEEP, PARALLEL = 40, 0.5, 2
IDEAL = TRIALS * SLEEP / PARALLEL
PG = "postgresql://postgres@127.0.0.1:5432"

TRIAL_SCRIPT = """
import sys, time
from tuner import trial

x = float(sys.argv[1])
time.sleep(0.5)
trial.report(0, loss=(x - 0.3) ** 2)
"""


def bench_ray(tmp: Path) -> dict[str, Any]:
    import optuna
    import ray

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ray.init(
        num_cpus=PARALLEL, include_dashboard=False, log_to_driver=False, configure_logging=False
    )
    out: dict[str, Any] = {"ideal_s": IDEAL}

    # --- tuner run, executor: ray -----------------------------------------------------------
    from tuner.campaign import Controller
    from tuner.config import load_config

    (tmp / "trial.py").write_text(TRIAL_SCRIPT)
    cfg = {
        "name": "bench-ray",
        "command": [sys.executable, str(tmp / "trial.py"), "{x}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": TRIALS},
        "sampler": {"name": "tpe", "seed": 1},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "per_trial": 1, "parallel": PARALLEL},
        "executor": {"name": "ray"},
        "diagnosis": {"early_stop": False},
        "storage": f"sqlite:///{tmp / 'optuna.db'}",
        "lineage": {"tracking_uri": f"sqlite:///{tmp / 'mlflow.db'}"},
    }
    for executor in ("local", "ray"):
        cfg["name"] = f"bench-{executor}"
        cfg["executor"] = {"name": executor}
        (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
        config = load_config(tmp / "c.yaml")
        t0 = time.perf_counter()
        result = Controller(config, importance=False, handle_signals=False).run()
        wall = time.perf_counter() - t0
        out[f"tuner_{executor}"] = {
            "wall_s": round(wall, 2),
            "efficiency": round(IDEAL / wall, 3),
            "finished": result.finished,
            "counts": result.counts,
        }
        print(
            f"tuner run (executor: {executor}): {wall:.1f} s, efficiency {IDEAL / wall:.2f}",
            flush=True,
        )

    # --- Ray Tune + OptunaSearch ------------------------------------------------------------
    from ray import tune
    from ray.tune.search.optuna import OptunaSearch

    def trainable(config: dict[str, Any]) -> None:
        time.sleep(SLEEP)
        tune.report({"loss": (config["x"] - 0.3) ** 2})

    tuner = tune.Tuner(
        trainable,
        param_space={"x": tune.uniform(0.0, 1.0)},
        tune_config=tune.TuneConfig(
            search_alg=OptunaSearch(seed=1),
            metric="loss",
            mode="min",
            num_samples=TRIALS,
            max_concurrent_trials=PARALLEL,
        ),
        run_config=tune.RunConfig(storage_path=str(tmp / "ray_results"), verbose=0),
    )
    t0 = time.perf_counter()
    grid = tuner.fit()
    wall = time.perf_counter() - t0
    out["ray_tune_optuna"] = {
        "wall_s": round(wall, 2),
        "efficiency": round(IDEAL / wall, 3),
        "finished": len(grid),
        "errors": grid.num_errors,
    }
    print(f"Ray Tune + OptunaSearch:   {wall:.1f} s, efficiency {IDEAL / wall:.2f}", flush=True)
    ray.shutdown()
    return out


# ----- part 2: storage ---------------------------------------------------------------------


def storage_worker(url: str, mode: str, n: int, total: int) -> None:
    """One benchmark worker process; prints a JSON line."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    errors: collections.Counter[str] = collections.Counter()
    done = 0
    t0 = time.perf_counter()
    for _ in range(50):
        try:
            study = optuna.create_study(
                study_name="bench", storage=url, load_if_exists=True, sampler=_sampler()
            )
            break
        except Exception as exc:
            errors[_kind(exc)] += 1
            time.sleep(0.2)
    if mode == "optuna":
        for _ in range(n):
            try:
                study.optimize(lambda t: (t.suggest_float("x", 0, 1) - 0.3) ** 2, n_trials=1)
                done += 1
            except Exception as exc:
                errors[_kind(exc)] += 1
    else:
        from tuner.coordination import Heartbeat, StudyLock, ask_within_budget, heartbeat_storage

        storage = heartbeat_storage(url, interval=5, grace=30)
        study = optuna.load_study(
            study_name="bench", storage=optuna.storages.get_storage(storage), sampler=_sampler()
        )
        lock = StudyLock(url, "bench")
        heartbeat = Heartbeat(storage).start()
        while True:
            try:
                trial = ask_within_budget(study, total, lock, heartbeat)
                if trial is None:
                    break
                x = trial.suggest_float("x", 0, 1)
                study.tell(trial, (x - 0.3) ** 2)
                heartbeat.remove(trial._trial_id)
                done += 1
            except Exception as exc:
                errors[_kind(exc)] += 1
                if sum(errors.values()) > 100:
                    break
        heartbeat.stop()
    print(json.dumps({"done": done, "errors": dict(errors), "s": time.perf_counter() - t0}))


def _sampler() -> Any:
    # The storage path is measured, not the sampler: random sampling costs ~nothing.
    import optuna

    return optuna.samplers.RandomSampler()


def _kind(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    if "database is locked" in text:
        return "database is locked"
    return f"{type(exc).__name__}: {text[:80]}"


def _storage_run(url: str, mode: str, workers: int, per_worker: int) -> dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    optuna.create_study(study_name="bench", storage=url)  # schema made once, before the race
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "_storage-worker",
                url,
                mode,
                str(per_worker),
                str(workers * per_worker),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    results = [json.loads(p.communicate()[0].decode().strip().splitlines()[-1]) for p in procs]
    wall = time.perf_counter() - t0
    errors: collections.Counter[str] = collections.Counter()
    for r in results:
        errors.update(r["errors"])
    trials = optuna.load_study(study_name="bench", storage=url).get_trials()
    complete = sum(1 for t in trials if t.state.name == "COMPLETE")
    stuck = sum(1 for t in trials if t.state.name == "RUNNING")
    return {
        "trials_per_s": round(complete / wall, 1),
        "wall_s": round(wall, 1),
        "complete": complete,
        "study_trials": len(trials),
        "left_running": stuck,
        "errors": dict(errors),
    }


def bench_storage(tmp: Path, workers: int = 4, per_worker: int = 250) -> dict[str, Any]:
    import psycopg

    out: dict[str, Any] = {}
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    try:
        cases = [
            ("postgresql, tuner workers", f"{PG}/{name}", "tuner"),
            ("sqlite (WAL), tuner workers", f"sqlite:///{tmp / 'tuner.db'}", "tuner"),
            ("sqlite (default), plain study.optimize", f"sqlite:///{tmp / 'plain.db'}", "optuna"),
        ]
        for label, url, mode in cases:
            out[label] = _storage_run(url, mode, workers, per_worker)
            print(f"{label}: {out[label]}", flush=True)
    finally:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_storage-worker":
        storage_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--skip-storage", action="store_true")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    results: dict[str, Any] = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_ray:
            results["ray"] = bench_ray(Path(tmp))
        if not args.skip_storage:
            results["storage"] = bench_storage(Path(tmp))
    print(json.dumps(results, indent=2))
    write_result(
        "cluster",
        results,
        store="postgresql",
        params={"ray": not args.skip_ray, "storage": not args.skip_storage},
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
