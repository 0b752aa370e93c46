"""Query speed: ``lineage runs`` against stock ``mlflow.search_runs`` on the same store.

Builds (once, cached under ``.bench/``) a genuine MLflow SQLite store of 10,000 finished runs
with 12 params and 4 metrics each, as plain ``mlflow`` logs them (schema made by MLflow's own
migrations, rows written in bulk with SQL in the exact shape ``log_batch`` leaves; checked by
reading runs back with ``MlflowClient``). Then times, in one process run:

- ``mlflow.search_runs``: the full table, and a filtered, sorted query, in this process with
  MLflow imported and its engine warm (the long-lived notebook case), and in a fresh
  interpreter (``python -c "import mlflow; mlflow.search_runs(...)"``, what a shell user waits
  for);
- ``lineage runs --format json`` as a subprocess (interpreter start-up included), same two,
  right after a write (cold: no run-table cache) and with the cache valid (warm);
- the library call ``lineage.query.search_runs(open_store(uri), ...)``, in this process;
- the filtered query once more, on a copy of the store after ``lineage index`` (covering
  indexes inside the database, which SQLite keeps current on every write): MLflow and this
  project each read that same indexed store.

The CLI is the ``lineage`` console script beside this interpreter, as a user runs it.

``lineage`` is byte-compiled first, as ``pip install`` does: this machine sets
PYTHONDONTWRITEBYTECODE, under which an editable install recompiles every module on every
call (+25 ms a call).

``--store postgresql`` builds the same runs in a PostgreSQL database (COPY, after MLflow's
migrations) and ``--store http`` puts a real ``mlflow server`` (4 workers) in front of it;
the table is the same for each store, with the targets for it below.

Usage: ``python benchmarks/bench_query.py [--store sqlite|postgresql|http] [--runs 10000]
[--repeat 3] [--rebuild]``
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _mlflow_bulk import bulk_insert
from _results import write_result

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


def make_rows(n_runs: int, art_root: str, seed: int = 0) -> dict[str, list[tuple]]:  # type: ignore[type-arg]
    """The rows of ``n_runs`` plain-mlflow-shaped runs (see ``_mlflow_bulk.bulk_insert``);
    the experiment id column of ``runs`` is 0, set by the caller."""
    rng = random.Random(seed)
    now = int(time.time() * 1000) - n_runs * 1000
    runs, params, metrics, latest, tags = [], [], [], [], []
    for i in range(n_runs):
        run_id = uuid.UUID(int=rng.getrandbits(128)).hex
        start = now + i * 1000
        end = start + rng.randint(1000, 100000)
        name = f"run-{i}"
        art = f"{art_root}/{run_id}/artifacts"
        runs.append(
            (run_id, name, "LOCAL", "train.py", "", "bench", "FINISHED", start, end, "",
             "active", art, 0)
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
    return {"runs": runs, "params": params, "metrics": metrics, "latest": latest, "tags": tags}


def _check_genuine(uri: str, rows: dict[str, list[tuple]]) -> None:  # type: ignore[type-arg]
    # MLflow must read the bulk rows back exactly as if it had written them.
    from mlflow.tracking import MlflowClient

    last = rows["runs"][-1][0]
    check = MlflowClient(tracking_uri=uri).get_run(last)
    assert check.data.params == {k: v for k, v, r in rows["params"] if r == last}
    assert set(check.data.metrics) == set(METRICS), check.data.metrics


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
    rows = make_rows(n_runs, (path.parent / "mlruns").as_uri(), seed)
    rows["runs"] = [(*r[:12], int(exp_id)) for r in rows["runs"]]
    bulk_insert(tmp, **rows)
    _check_genuine(uri, rows)
    shutil.move(tmp, path)


def build_pg_store(name: str, n_runs: int, art_root: Path, seed: int = 0) -> str:
    """The same runs in a fresh PostgreSQL database ``name``; its URI."""
    from _bench_stores import pg_bulk_insert, pg_create

    uri = pg_create(name)
    rows = make_rows(n_runs, art_root.as_uri(), seed)
    pg_bulk_insert(uri, experiment="bench", artifact_root=art_root.as_uri(), **rows)
    _check_genuine(uri, rows)
    return uri


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(fn, repeat: int, before=None) -> tuple[float, float, object]:  # type: ignore[no-untyped-def]
    """Median wall seconds, median CPU seconds (this process and its children), result."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        if before is not None:
            before()
        c0, t0 = _cpu(), time.perf_counter()
        result = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return statistics.median(walls), statistics.median(cpus), result


def _interleaved(sides, repeat: int):  # type: ignore[no-untyped-def]
    """``{name: (fn, before)}`` timed in ``repeat`` rounds of one call each, in turn:
    ``{name: (median wall, median CPU, last result)}``."""
    walls: dict[str, list[float]] = {name: [] for name in sides}
    cpus: dict[str, list[float]] = {name: [] for name in sides}
    results: dict[str, object] = {}
    for _ in range(repeat):
        for name, (fn, before) in sides.items():
            if before is not None:
                before()
            c0, t0 = _cpu(), time.perf_counter()
            results[name] = fn()
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(_cpu() - c0)
    return {
        name: (statistics.median(walls[name]), statistics.median(cpus[name]), results[name])
        for name in sides
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds: lineage timings, and mlflow's filtered query in a warm process, are "
        "medians of N interleaved calls",
    )
    ap.add_argument(
        "--mlflow-repeat",
        type=int,
        default=3,
        help="mlflow from a fresh interpreter: median of N (its full table in a warm process: "
        "once, ~8 s)",
    )
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--cache", default=str(ROOT / ".bench"))
    ap.add_argument(
        "--store",
        choices=["sqlite", "postgresql", "http"],
        default="sqlite",
        help="sqlite: a file; postgresql: a database on $BENCH_PG (default "
        "postgresql://postgres@127.0.0.1:5432); http: a real `mlflow server` (4 workers) "
        "this script starts on that PostgreSQL database",
    )
    args = ap.parse_args()

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    compileall.compile_dir(ROOT / "lineage", quiet=1)
    if args.store == "sqlite":
        db = cache / f"query_{args.runs}.db"
        if args.rebuild or not db.exists():
            t0 = time.perf_counter()
            build_store(db, args.runs)
            print(f"built {db} ({args.runs} runs) in {time.perf_counter() - t0:.1f} s")
        indexed = cache / f"query_{args.runs}_indexed.db"
        if args.rebuild or not indexed.exists() or indexed.stat().st_mtime < db.stat().st_mtime:
            shutil.copyfile(db, indexed)
            t0 = time.perf_counter()
            _lineage_cli("index", "--tracking-uri", f"sqlite:///{indexed}")
            print(f"lineage index on a copy: {time.perf_counter() - t0:.2f} s")
        where = str(db)
        results = [
            *_measure(f"sqlite:///{db}", args, cache),
            *_measure_filtered_indexed(indexed, args, cache),
        ]
    else:
        from _bench_stores import PG_BASE, Server, pg_exists

        name = f"lt_bench_query_{args.runs}"
        if args.rebuild or not pg_exists(name):
            t0 = time.perf_counter()
            build_pg_store(name, args.runs, cache / "pg-mlruns")
            print(f"built {name} ({args.runs} runs) in {time.perf_counter() - t0:.1f} s")
        uri = f"{PG_BASE}/{name}"
        where = uri
        server = None
        if args.store == "http":
            t0 = time.perf_counter()
            server = Server(uri, cache / "http-server").wait_ready()
            print(f"mlflow server up in {time.perf_counter() - t0:.1f} s at {server.url}")
            where, uri = f"{server.url} (mlflow server on {uri})", server.url
        try:
            results = _measure(uri, args, cache)
        finally:
            if server is not None:
                server.stop()

    load = os.getloadavg()
    print(f"\nstore: {args.runs} runs x {len(PARAMS)} params x {len(METRICS)} metrics, {where}")
    print(f'filtered query: --where "{WHERE}" --sort=-metrics.accuracy')
    print(f"CLI: {' '.join(_cli_prefix())} (the console script pip installs)")
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} (wall clock suffers")
    print("under load; CPU seconds, this process plus children, are shown beside it)\n")
    head = f"{'query':<30} {'runs':>5}  {'what':<41} {'wall s':>8} {'cpu s':>7}"
    print(f"{head} {'vs warm':>8} {'vs fresh':>8}")
    for label, n, ml, fresh, cold, warm, lib_t in results:
        rows = [
            ("mlflow.search_runs, warm process", ml),
            ("mlflow.search_runs, fresh interpreter", fresh),
            ("lineage runs --format json (cold)", cold),
            ("lineage runs --format json (warm)", warm),
            ("search_runs(open_store(uri)), in process", lib_t),
        ]
        for i, (what, (wall, cpu, _)) in enumerate(rows):
            vs_warm = "" if i < 2 else f"{ml[0] / wall:.1f}x"
            vs_fresh = "" if i < 2 else f"{fresh[0] / wall:.1f}x"
            print(
                f"{label if i == 0 else '':<30} {n if i == 0 else '':>5}  {what:<41} "
                f"{wall:>8.3f} {cpu:>7.3f} {vs_warm:>8} {vs_fresh:>8}"
            )
    figures = {}
    for label, n, ml, fresh, cold, warm, lib_t in results:
        figures[label] = {
            "runs": n,
            "mlflow_warm_s": round(ml[0], 3),
            "mlflow_fresh_s": round(fresh[0], 3),
            "lineage_cold_s": round(cold[0], 3),
            "lineage_warm_s": round(warm[0], 3),
            "library_s": round(lib_t[0], 3),
            "speedup_warm_vs_mlflow_fresh": round(fresh[0] / warm[0], 2),
            "speedup_warm_vs_mlflow_warm": round(ml[0] / warm[0], 2),
        }
    write_result(
        f"query_{args.store}",
        figures,
        store=args.store,
        params={"runs": args.runs, "repeat": args.repeat, "where": WHERE},
    )
    if args.store == "sqlite":
        print("\ncold: no run-table cache (first query after a write); warm: cache valid.")
        print("indexed: the same store after `lineage index` (SQLite keeps the indexes current).")
        _targets_sqlite(results)
    else:
        print("\ncold and warm: the same call twice (the run-table cache is for SQLite files).")
        _targets(args.store, results)
    return 0


def _targets_sqlite(results) -> None:  # type: ignore[no-untyped-def]
    for name, pick, base in (
        ("CLI (cold and warm) vs mlflow in a fresh interpreter", (4, 5), 3),
        ("CLI (cold and warm) vs mlflow in a warm process", (4, 5), 2),
        ("library call vs mlflow in a warm process", (6,), 2),
    ):
        for scope, chosen in (
            ("plain store", [r for r in results if "indexed" not in r[0]]),
            ("indexed store", [r for r in results if "filtered" not in r[0] or "indexed" in r[0]]),
        ):
            ok = all(r[i][0] <= r[base][0] / 10 and r[i][0] < 0.5 for r in chosen for i in pick)
            print(f"target <= 1/10 and < 0.5 s, {name}, {scope}: {'met' if ok else 'NOT met'}")


def _targets(store: str, results) -> None:  # type: ignore[no-untyped-def]
    """The targets: ``(what, row, index of the value, mlflow column, fraction, cap)``."""
    by = {r[0]: r for r in results}
    full, query = by["full table"], by["filtered + sorted"]
    if store == "postgresql":
        checks = [
            ("full table, CLI <= 1/10 of mlflow warm and < 0.5 s", full, (4, 5), 2, 10, 0.5),
            ("full table, library <= 1/10 of mlflow warm and < 0.5 s", full, (6,), 2, 10, 0.5),
            ("filtered, CLI <= 1/2 of mlflow warm", query, (4, 5), 2, 2, None),
            ("filtered, CLI <= 1/10 of mlflow fresh interpreter", query, (4, 5), 3, 10, None),
        ]
    else:
        checks = [
            ("full table, CLI <= 1/3 of mlflow warm", full, (4, 5), 2, 3, None),
            ("full table, library <= 1/3 of mlflow warm", full, (6,), 2, 3, None),
            ("filtered, CLI faster than mlflow fresh interpreter", query, (4, 5), 3, 1, None),
            ("filtered, library faster than mlflow warm", query, (6,), 2, 1, None),
        ]
    for text, row, pick, base, fraction, cap in checks:
        ok = all(
            row[i][0] <= row[base][0] / fraction and (cap is None or row[i][0] < cap) for i in pick
        )
        print(f"target {text}: {'met' if ok else 'NOT met'}")


def _cli_prefix() -> list[str]:
    script = Path(sys.executable).with_name("lineage")
    return [str(script)] if script.exists() else [sys.executable, "-m", "lineage.cli"]


def _lineage_cli(*args: str) -> bytes:
    return subprocess.run([*_cli_prefix(), *args], capture_output=True, check=True).stdout


def _measure(uri: str, args: argparse.Namespace, cache: Path, only_filtered: bool = False):  # type: ignore[no-untyped-def]
    """Each query against mlflow (warm process, fresh interpreter), the CLI and the library."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    exp_ids = [mlflow.get_experiment_by_name("bench").experiment_id]

    def ml_full():  # type: ignore[no-untyped-def]
        return mlflow.search_runs(experiment_ids=exp_ids, max_results=100_000)

    def ml_query():  # type: ignore[no-untyped-def]
        return mlflow.search_runs(
            experiment_ids=exp_ids, filter_string=WHERE, order_by=[ORDER], max_results=100_000
        )

    cli = [*_cli_prefix(), "runs", "--tracking-uri", uri, "--format", "json"]
    cli_q = [*cli, "--where", WHERE, "--sort=-metrics.accuracy"]
    cache_dir = cache / "run-cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LINEAGE_CACHE_DIR": str(cache_dir)}

    def run_cli(cmd: list[str]):  # type: ignore[no-untyped-def]
        def go():  # type: ignore[no-untyped-def]
            # Only the process is timed; the caller parses what it printed.
            return subprocess.run(cmd, capture_output=True, env=env, check=True).stdout

        return go

    def drop_cache() -> None:
        shutil.rmtree(cache_dir, ignore_errors=True)

    from lineage.query import search_runs
    from lineage.store import open_store

    def lib(**kw):  # type: ignore[no-untyped-def]
        def go():  # type: ignore[no-untyped-def]
            with open_store(uri) as store:
                return search_runs(store, **kw)

        return go

    def ml_fresh(call: str):  # type: ignore[no-untyped-def]
        code = (
            f"import mlflow; mlflow.set_tracking_uri({uri!r}); "
            f"print(len(mlflow.search_runs(experiment_ids={exp_ids!r}, {call})))"
        )

        def go():  # type: ignore[no-untyped-def]
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            return int(out.stdout.strip().splitlines()[-1])

        return go

    fresh_calls = {
        "full table": "max_results=100_000",
        "filtered + sorted": f"filter_string={WHERE!r}, order_by=[{ORDER!r}], max_results=100_000",
    }

    # Warm MLflow's engine and imports once, as a long-lived process would have.
    (ml_query if only_filtered else ml_full)()
    results = []
    queries = [
        ("full table", ml_full, cli, {}),
        ("filtered + sorted", ml_query, cli_q, {"where": WHERE, "sort": ["-metrics.accuracy"]}),
    ]
    for label, ml_fn, cmd, kw in queries[1:] if only_filtered else queries:
        full = label == "full table"
        fresh = _timed(ml_fresh(fresh_calls[label]), args.mlflow_repeat)
        # Interleaved rounds (mlflow, CLI cold, CLI warm, library), so that the machine's
        # drift in speed, up to 2x over minutes here, falls on every column alike.
        ml = _timed(ml_fn, 1) if full else None
        sides = {
            "cold": (run_cli(cmd), drop_cache),
            "warm": (run_cli(cmd), None),
            "lib": (lib(**kw), None),
        }
        if not full:
            sides = {"ml": (ml_fn, None), **sides}
        run_cli(cmd)()  # one untimed call: the files in the page cache, as for the others
        timed = _interleaved(sides, args.repeat)
        ml = ml if full else timed["ml"]
        cold, warm, lib_t = timed["cold"], timed["warm"], timed["lib"]
        cold = (cold[0], cold[1], json.loads(cold[2]))  # type: ignore[arg-type]
        warm = (warm[0], warm[1], json.loads(warm[2]))  # type: ignore[arg-type]
        df, js, recs = ml[2], warm[2], lib_t[2]
        n = len(df)  # type: ignore[arg-type]
        assert n == len(js) == len(cold[2]) == len(recs) == fresh[2], label  # type: ignore[arg-type]
        if label != "full table":
            assert list(df["run_id"]) == [r["run_id"] for r in js], "order differs from mlflow"  # type: ignore[index]
        results.append((label, n, ml, fresh, cold, warm, lib_t))
    return results


def _measure_filtered_indexed(indexed: Path, args: argparse.Namespace, cache: Path):  # type: ignore[no-untyped-def]
    """The filtered query again, on the copy that ``lineage index`` indexed (MLflow too)."""
    results = _measure(f"sqlite:///{indexed}", args, cache, only_filtered=True)
    return [(f"{label}, indexed", *rest) for label, *rest in results]


if __name__ == "__main__":
    sys.exit(main())
