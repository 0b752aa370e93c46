"""Query speed: ``lineage runs`` against stock ``mlflow.search_runs`` on the same store.

Builds (once, cached under ``.bench/``) a genuine MLflow SQLite store of 10,000 finished runs
with 12 params and 4 metrics each, as plain ``mlflow`` logs them (schema made by MLflow's own
migrations, rows written in bulk with SQL in the exact shape ``log_batch`` leaves; checked by
reading runs back with ``MlflowClient``). Then times, in one process run:

- ``mlflow.search_runs``: the full table, and a filtered, sorted query;
- ``lineage runs --format json`` as a subprocess (interpreter start-up included), same two;
- the library call ``lineage.query.search_runs(open_store(uri), ...)``.

Usage: ``python benchmarks/bench_query.py [--runs 10000] [--repeat 3] [--rebuild]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHERE = "params.optimizer = 'adam' and metrics.val_loss < 0.5"
ORDER = "metrics.accuracy DESC"
PARAMS = [
    "lr", "batch_size", "epochs", "optimizer", "momentum", "weight_decay",
    "dropout", "hidden", "layers", "warmup", "seed", "scheduler",
]  # fmt: skip
METRICS = ["loss", "val_loss", "accuracy", "val_accuracy"]


def _param_values(rng: random.Random) -> dict[str, str]:
    return {
        "lr": repr(10 ** rng.uniform(-5, -1)),
        "batch_size": str(rng.choice([16, 32, 64, 128, 256])),
        "epochs": str(rng.randint(1, 100)),
        "optimizer": rng.choice(["sgd", "adam", "adamw", "momentum"]),
        "momentum": repr(round(rng.uniform(0.5, 0.99), 3)),
        "weight_decay": repr(10 ** rng.uniform(-6, -2)),
        "dropout": repr(round(rng.uniform(0, 0.5), 2)),
        "hidden": str(rng.choice([64, 128, 256, 512, 1024])),
        "layers": str(rng.randint(1, 12)),
        "warmup": str(rng.randint(0, 1000)),
        "seed": str(rng.randint(0, 2**31)),
        "scheduler": rng.choice(["cosine", "step", "none"]),
    }


def build_store(path: Path, n_runs: int, seed: int = 0) -> None:
    """A migrated MLflow SQLite store holding ``n_runs`` plain-mlflow-shaped runs."""
    from mlflow.tracking import MlflowClient

    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    uri = f"sqlite:///{tmp}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment("bench", artifact_location=(path.parent / "mlruns").as_uri())
    # One run through MLflow itself, the template the bulk rows copy.
    probe = client.create_run(exp_id, run_name="probe")
    client.delete_run(probe.info.run_id)
    rng = random.Random(seed)
    now = int(time.time() * 1000) - n_runs * 1000
    runs, params, metrics, latest, tags = [], [], [], [], []
    for i in range(n_runs):
        run_id = uuid.UUID(int=rng.getrandbits(128)).hex
        start = now + i * 1000
        end = start + rng.randint(1000, 100000)
        name = f"run-{i}"
        art = f"{(path.parent / 'mlruns').as_uri()}/{run_id}/artifacts"
        runs.append(
            (run_id, name, "LOCAL", "train.py", "", "bench", "FINISHED", start, end, "",
             "active", art, int(exp_id))
        )  # fmt: skip
        params.extend((k, v, run_id) for k, v in _param_values(rng).items())
        loss = rng.uniform(0.05, 2.0)
        values = {
            "loss": loss,
            "val_loss": loss * rng.uniform(1.0, 1.5),
            "accuracy": rng.uniform(0.1, 0.99),
            "val_accuracy": rng.uniform(0.1, 0.99),
        }
        for key, value in values.items():
            metrics.append((key, value, end, run_id, 99, 0))
            latest.append((key, value, end, 99, 0, run_id))
        tags.extend(
            [
                ("mlflow.runName", name, run_id),
                ("mlflow.user", "bench", run_id),
                ("mlflow.source.name", "train.py", run_id),
                ("mlflow.source.type", "LOCAL", run_id),
            ]
        )
    with sqlite3.connect(tmp) as db:
        db.executemany(
            "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, "
            "user_id, status, start_time, end_time, source_version, lifecycle_stage, "
            "artifact_uri, experiment_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            runs,
        )
        db.executemany("INSERT INTO params (key, value, run_uuid) VALUES (?,?,?)", params)
        db.executemany(
            "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
            "VALUES (?,?,?,?,?,?)",
            metrics,
        )
        db.executemany(
            "INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
            "VALUES (?,?,?,?,?,?)",
            latest,
        )
        db.executemany("INSERT INTO tags (key, value, run_uuid) VALUES (?,?,?)", tags)
    # MLflow must read the bulk rows back exactly as if it had written them.
    check = client.get_run(runs[-1][0])
    assert check.data.params == dict((k, v) for k, v, r in params if r == runs[-1][0])
    assert set(check.data.metrics) == set(METRICS), check.data.metrics
    shutil.move(tmp, path)


def _timed(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="lineage timings: median of N")
    ap.add_argument("--mlflow-repeat", type=int, default=1, help="mlflow timings: median of N")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--cache", default=str(ROOT / ".bench"))
    args = ap.parse_args()

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"query_{args.runs}.db"
    if args.rebuild or not db.exists():
        t0 = time.perf_counter()
        build_store(db, args.runs)
        print(f"built {db} ({args.runs} runs) in {time.perf_counter() - t0:.1f} s")
    uri = f"sqlite:///{db}"

    import mlflow

    mlflow.set_tracking_uri(uri)
    exp_ids = [mlflow.get_experiment_by_name("bench").experiment_id]

    def ml_full():  # type: ignore[no-untyped-def]
        return mlflow.search_runs(experiment_ids=exp_ids, max_results=100_000)

    def ml_query():  # type: ignore[no-untyped-def]
        return mlflow.search_runs(
            experiment_ids=exp_ids, filter_string=WHERE, order_by=[ORDER], max_results=100_000
        )

    cli = [sys.executable, "-m", "lineage.cli", "runs", "--tracking-uri", uri, "--format", "json"]
    cli_q = [*cli, "--where", WHERE, "--sort=-metrics.accuracy"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run_cli(cmd: list[str]):  # type: ignore[no-untyped-def]
        def go():  # type: ignore[no-untyped-def]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            return json.loads(out.stdout)

        return go

    from lineage.query import search_runs
    from lineage.store import open_store

    def lib_full():  # type: ignore[no-untyped-def]
        with open_store(uri) as store:
            return search_runs(store)

    def lib_query():  # type: ignore[no-untyped-def]
        with open_store(uri) as store:
            return search_runs(store, where=WHERE, sort=["-metrics.accuracy"])

    ml_full()  # warm MLflow's engine and imports once, as a long-lived process would have
    rows = []
    for label, ml_fn, cli_fn, lib_fn in (
        ("full table", ml_full, run_cli(cli), lib_full),
        ("filtered + sorted", ml_query, run_cli(cli_q), lib_query),
    ):
        t_ml, df = _timed(ml_fn, args.mlflow_repeat)
        t_cli, js = _timed(cli_fn, args.repeat)
        t_lib, recs = _timed(lib_fn, args.repeat)
        n_ml, n_cli, n_lib = len(df), len(js), len(recs)  # type: ignore[arg-type]
        assert n_ml == n_cli == n_lib, (label, n_ml, n_cli, n_lib)
        if label != "full table":
            ml_ids = list(df["run_id"])  # type: ignore[index]
            assert ml_ids == [r["run_id"] for r in js], "order differs from mlflow"
        rows.append((label, n_ml, t_ml, t_cli, t_lib))

    print(f"\nstore: {args.runs} runs x {len(PARAMS)} params x {len(METRICS)} metrics, {uri}")
    print(f'query: --where "{WHERE}" --sort=-metrics.accuracy')
    head = f"{'query':<18} {'runs':>6} {'mlflow.search_runs':>19} {'lineage runs (CLI)':>19}"
    head += f" {'ratio':>7} {'search_runs (lib)':>18} {'ratio':>7}"
    print(head)
    for label, n, t_ml, t_cli, t_lib in rows:
        print(
            f"{label:<18} {n:>6} {t_ml:>17.3f} s {t_cli:>17.3f} s {t_ml / t_cli:>6.1f}x"
            f" {t_lib:>16.3f} s {t_ml / t_lib:>6.1f}x"
        )
    ok = all(t_cli <= t_ml / 10 and t_cli < 0.5 for _, _, t_ml, t_cli, _ in rows)
    print(
        f"\ntargets (CLI <= 1/10 of mlflow.search_runs and < 0.5 s): {'met' if ok else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
