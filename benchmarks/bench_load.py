"""Load: N `tuner worker` processes x M trials of 0.2 s on one PostgreSQL study.

Each worker is the real CLI (controller, study lock, heartbeats, MLflow lineage records on a
SQLite store shared by the workers); each trial is a real process (``python -S``, sleeps
0.2 s, prints its loss, read by a ``metrics:`` pattern). Reported: throughput, errors (worker
exit codes and error lines), duplicate trials (two COMPLETE trials with the same
parameters), trials left RUNNING/WAITING, the peak number of
database sessions on the study's database (``pg_stat_activity``, sampled every 0.1 s).

    python benchmarks/bench_load.py [--workers 8] [--trials 300] [--json out.json]

Needs PostgreSQL at 127.0.0.1:5432 (user postgres, trust). The existing "4 workers x 250
trials" figure of bench_cluster.py is the storage path alone (no trial processes).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

from lineage.trials import STALE_ATTR

PG = "postgresql://postgres@127.0.0.1:5432"
SLEEP = 0.2
TRIAL = (
    f"import sys, time; time.sleep({SLEEP}); print('loss: %r' % ((float(sys.argv[1]) - 0.3) ** 2))"
)


def _admin() -> Any:
    import psycopg

    return psycopg.connect(f"{PG}/postgres", autocommit=True)


def sessions(db: str) -> int:
    with _admin() as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (db,))
        return int(row.fetchone()[0])  # type: ignore[index]


def write_config(tmp: Path, storage: str, trials: int, name: str = "load") -> Path:
    data: dict[str, Any] = {
        "name": name,
        "command": [sys.executable, "-S", "-c", TRIAL, "{x}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "metrics": {"loss": {"pattern": "loss: ([0-9.eE+-]+)"}},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": trials, "max_failures": 3},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "storage": storage,
        "lineage": {"tracking_uri": f"sqlite:///{tmp / 'mlflow.db'}", "experiment": name},
    }
    path = tmp / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_load(
    tmp: Path, storage: str, *, workers: int, trials: int, name: str = "load"
) -> dict[str, Any]:
    """Run ``workers`` `tuner worker`s on ``trials`` trials; the invariants and figures."""
    import optuna

    db = storage.rsplit("/", 1)[1]
    config = write_config(tmp, storage, trials, name)
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            try:
                peak[0] = max(peak[0], sessions(db))
            except Exception:
                continue

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "worker", str(config), "--quiet"],
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(workers)
    ]
    outputs = [p.communicate() for p in procs]
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=name, storage=storage)
    all_trials = study.get_trials()
    counted = [t for t in all_trials if STALE_ATTR not in t.system_attrs]
    states = collections.Counter(t.state.name for t in counted)
    params = collections.Counter(json.dumps(t.params, sort_keys=True) for t in counted)
    error_lines = [
        line
        for _, err in outputs
        for line in err.decode(errors="replace").splitlines()
        if "error" in line.lower() or "Traceback" in line
    ]
    ends = sorted(t.datetime_complete for t in counted if t.datetime_complete)
    steady = (len(ends) - 1) / (ends[-1] - ends[0]).total_seconds() if len(ends) > 1 else 0.0
    return {
        "workers": workers,
        "trials": trials,
        "wall_s": round(wall, 1),
        "trials_per_s": round(states["COMPLETE"] / wall, 2),
        # Between the first and the last trial end: without the workers' start-up.
        "steady_trials_per_s": round(steady, 2),
        "exit_codes": [p.returncode for p in procs],
        "states": dict(states),
        "counted": len(counted),
        "superseded": len(all_trials) - len(counted),
        "duplicate_params": sum(n - 1 for n in params.values() if n > 1),
        "left_running_or_waiting": states["RUNNING"] + states["WAITING"],
        "peak_db_sessions": peak[0],
        "error_lines": error_lines[:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--trials", type=int, default=300, help="trials per worker")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    db = f"bench_load_{uuid.uuid4().hex[:8]}"
    with _admin() as conn:
        conn.execute(f'CREATE DATABASE "{db}"')  # type: ignore[arg-type]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_load(
                Path(tmp), f"{PG}/{db}", workers=args.workers, trials=args.workers * args.trials
            )
    finally:
        with _admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')  # type: ignore[arg-type]
    print(json.dumps(result, indent=2))
    write_result(
        "load", result, store="postgresql", params={"workers": args.workers, "trials": args.trials}
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
