"""Recording metric points into one MLflow run: stock MLflow against ``lineage``, per store.

``--store sqlite|postgresql|http`` (repeat the option, or give a comma list, for several):
a fresh SQLite file; a fresh PostgreSQL database (``BENCH_PG``, default
``postgresql://postgres@127.0.0.1:5432``); a real ``mlflow server`` the script starts on a
PostgreSQL database it creates (4 workers, as ``bench_query.py``). For each store, in the same
process and on the same store, each way in a run of its own:

1. stock ``MlflowClient.log_metric``, one call per point, timed on a sample of ``--sample``
   calls and extrapolated (the output says so);
2. stock ``MlflowClient.log_batch`` with 1,000 points per call (all points);
3. ``lineage``: ``run.log_metric`` per point on the training thread, sustained points/s from
   the first call until the final flush has put every point in the store (SQL stores: one
   transaction per batch into MLflow's tables; http: requests of 1,000 points across keys, up
   to ``LINEAGE_HTTP_IN_FLIGHT`` = 4 in flight).

Points cycle over ``--keys`` metric keys; ``--in-flight 4,8`` runs lineage once per value
on the http store (the best is the one compared). Every run is read back through
``MlflowClient.get_metric_history``: every key must hold exactly its points, once each, in
step order, or the script fails. Then one table per store and the ratio
``lineage / log_batch``.

Usage: ``python benchmarks/bench_recording.py --store sqlite --store http [--points N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

STORES = ("sqlite", "postgresql", "http")


def _key(i: int, keys: int) -> str:
    return f"m{i % keys}"


def _new_run(uri: str, name: str) -> tuple[Any, str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment(f"bench-{name}-{uuid.uuid4().hex[:6]}")
    return client, client.create_run(exp).info.run_id


def _check(uri: str, run_id: str, points: int, keys: int, what: str) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    for k in range(keys):
        steps = [m.step for m in client.get_metric_history(run_id, f"m{k}")]
        expected = list(range(k, points, keys))
        assert steps == expected, (
            f"{what}: key m{k} holds {len(steps)} points, expected {len(expected)} once each in order"
        )


def bench_log_metric(uri: str, sample: int, points: int, keys: int) -> dict[str, float]:
    client, run_id = _new_run(uri, "log_metric")
    t0 = time.perf_counter()
    for i in range(sample):
        client.log_metric(run_id, _key(i, keys), 1.0 / (i + 1), step=i)
    dt = time.perf_counter() - t0
    rate = sample / dt
    return {"sampled_calls": sample, "seconds_sampled": dt, "points_per_s": rate}


def bench_log_batch(uri: str, points: int, keys: int, batch: int = 1000) -> dict[str, float]:
    from mlflow.entities import Metric

    client, run_id = _new_run(uri, "log_batch")
    now = int(time.time() * 1000)
    t0 = time.perf_counter()
    for start in range(0, points, batch):
        metrics = [
            Metric(_key(i, keys), 1.0 / (i + 1), now + i, i)
            for i in range(start, min(points, start + batch))
        ]
        client.log_batch(run_id, metrics=metrics)
    dt = time.perf_counter() - t0
    _check(uri, run_id, points, keys, "log_batch")
    return {"seconds": dt, "points_per_s": points / dt}


def bench_lineage(uri: str, points: int, keys: int, in_flight: int) -> dict[str, Any]:
    import os

    import lineage

    os.environ["LINEAGE_HTTP_IN_FLIGHT"] = str(in_flight)

    run = lineage.start_run(experiment="bench-lineage", tracking_uri=uri, record_identity=False)
    names = [_key(i, keys) for i in range(keys)]
    costs = [0] * points
    clock = time.perf_counter_ns
    log = run.log_metric
    t0 = time.perf_counter()
    for i in range(points):
        a = clock()
        log(names[i % keys], 1.0 / (i + 1), step=i)
        costs[i] = clock() - a
    t_logged = time.perf_counter() - t0
    run.flush()
    t_total = time.perf_counter() - t0
    writer = run._recorder.writer.kind
    run.end()
    _check(uri, run.run_id, points, keys, "lineage")
    costs.sort()
    return {
        "median_us": statistics.median(costs) / 1000,
        "p99_us": costs[int(0.99 * (points - 1))] / 1000,
        "logging_s": t_logged,
        "seconds": t_total,
        "points_per_s": points / t_total,
        "writer": f"{writer}, {in_flight} in flight" if "http" in writer else writer,
    }


@contextmanager
def _store(kind: str, tmp: Path) -> Iterator[str]:
    from _bench_stores import PG_BASE, Server, migrate, pg_create

    if kind == "sqlite":
        uri = f"sqlite:///{tmp / 'mlflow.db'}"
        migrate(uri)
        yield uri
        return
    import psycopg

    name = f"bench_rec_{uuid.uuid4().hex[:8]}"
    uri = pg_create(name)
    server = None
    try:
        if kind == "http":
            server = Server(uri, tmp / "server").wait_ready(600)
            yield server.url
        else:
            yield uri
    finally:
        if server is not None:
            server.stop()
        with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


def run_store(
    kind: str, points: int, sample: int, keys: int, in_flight: list[int]
) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="bench-recording-") as tmp,
        _store(kind, Path(tmp)) as uri,
    ):
        stock = bench_log_metric(uri, sample, points, keys)
        batch = bench_log_batch(uri, points, keys)
        flights = in_flight if kind == "http" else in_flight[:1]
        ours = [bench_lineage(uri, points, keys, n) for n in flights]
    best = max(ours, key=lambda r: r["points_per_s"])
    return {"log_metric": stock, "log_batch_1000": batch, "lineage": best, "lineage_all": ours}


def _table(kind: str, points: int, keys: int, r: dict[str, Any]) -> list[str]:
    stock, batch, ours = r["log_metric"], r["log_batch_1000"], r["lineage"]
    ratio = ours["points_per_s"] / batch["points_per_s"]
    return [
        f"store {kind}: {points:,} points over {keys} keys into one run",
        f"| way | points/s | seconds for {points:,} |",
        "|---|---|---|",
        f"| `MlflowClient.log_metric` (timed {stock['sampled_calls']:,} calls) | "
        f"{stock['points_per_s']:,.0f} | {points / stock['points_per_s']:,.0f} (extrapolated) |",
        f"| `MlflowClient.log_batch`, 1,000 per call | {batch['points_per_s']:,.0f} | "
        f"{batch['seconds']:.2f} |",
        *(
            f"| `lineage` `run.log_metric` ({o['writer']}) | {o['points_per_s']:,.0f} | "
            f"{o['seconds']:.2f} incl. final flush |"
            for o in r["lineage_all"]
        ),
        f"ratio lineage / log_batch: {ratio:.1f}x; per call on the training thread: median "
        f"{ours['median_us']:.2f} us, p99 {ours['p99_us']:.2f} us; every point read back once, "
        "in order, per key",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--store", action="append", default=None, help="sqlite, postgresql, http (repeatable)"
    )
    ap.add_argument("--points", type=int, default=20_000)
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--sample", type=int, default=300, help="log_metric calls timed")
    ap.add_argument(
        "--in-flight", default="4", help="http requests in flight for lineage, e.g. 4,8 (http only)"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    stores = [s for opt in (args.store or ["sqlite"]) for s in opt.split(",") if s]
    bad = [s for s in stores if s not in STORES]
    if bad:
        print(
            f"bench_recording.py: --store must be one of {', '.join(STORES)}, got {bad[0]!r}",
            file=sys.stderr,
        )
        return 2

    import logging

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    flights = [int(n) for n in args.in_flight.split(",") if n]
    results = {
        kind: run_store(kind, args.points, args.sample, args.keys, flights) for kind in stores
    }
    for kind, r in results.items():
        ratio = r["lineage"]["points_per_s"] / r["log_batch_1000"]["points_per_s"]
        write_result(
            f"recording_{kind}",
            {**r, "lineage_over_log_batch": round(ratio, 2)},
            store=kind,
            params={"points": args.points, "keys": args.keys, "sample": args.sample},
        )
    if args.json:
        print(json.dumps({"points": args.points, "keys": args.keys, "stores": results}, indent=2))
        return 0
    print(f"python {sys.version.split()[0]}; each way in its own run, same store, one process")
    for kind, r in results.items():
        print()
        print("\n".join(_table(kind, args.points, args.keys, r)))
    if len(results) > 1:
        print()
        print("| store | log_batch points/s | lineage points/s | ratio |")
        print("|---|---|---|---|")
        for kind, r in results.items():
            b, o = r["log_batch_1000"]["points_per_s"], r["lineage"]["points_per_s"]
            print(f"| {kind} | {b:,.0f} | {o:,.0f} | {o / b:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
