"""Recording 100,000 metric points into one MLflow run on a fresh SQLite store.

Three ways, each on its own fresh copy of one migrated SQLite store, in the same process:

1. stock ``MlflowClient.log_metric``, one call per point. At ~150 points/s the full 100,000
   would take ~11 minutes, so a sample of ``--sample`` calls is timed and extrapolated (the
   output says so);
2. stock ``MlflowClient.log_batch`` with 1,000 points per call (all 100,000 points);
3. ``lineage``: ``run.log_metric`` per point on the training thread; the cost of each call is
   timed (median, p99), and sustained points/s counts from the first call until the final
   flush has put every point in the store.

Every store is then read back through ``MlflowClient.get_metric_history`` to check that all
points arrived. Usage: ``python benchmarks/bench_recording.py [--points N] [--sample N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _fresh(template: Path, name: str) -> str:
    dest = template.parent / f"{name}.db"
    shutil.copyfile(template, dest)
    return f"sqlite:///{dest}"


def _new_run(uri: str) -> tuple[object, str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("bench")
    return client, client.create_run(exp).info.run_id


def bench_log_metric(uri: str, sample: int, points: int) -> dict[str, float]:
    client, run_id = _new_run(uri)
    t0 = time.perf_counter()
    for i in range(sample):
        client.log_metric(run_id, "loss", 1.0 / (i + 1), step=i)  # type: ignore[attr-defined]
    dt = time.perf_counter() - t0
    rate = sample / dt
    return {
        "sampled_calls": sample,
        "seconds_sampled": dt,
        "points_per_s": rate,
        "extrapolated_s": points / rate,
    }


def bench_log_batch(uri: str, points: int, batch: int = 1000) -> dict[str, float]:
    from mlflow.entities import Metric

    client, run_id = _new_run(uri)
    now = int(time.time() * 1000)
    t0 = time.perf_counter()
    for start in range(0, points, batch):
        metrics = [
            Metric("loss", 1.0 / (i + 1), now + i, i)
            for i in range(start, min(points, start + batch))
        ]
        client.log_batch(run_id, metrics=metrics)  # type: ignore[attr-defined]
    dt = time.perf_counter() - t0
    n = len(client.get_metric_history(run_id, "loss"))  # type: ignore[attr-defined]
    assert n == points, f"log_batch stored {n} of {points} points"
    return {"seconds": dt, "points_per_s": points / dt}


def bench_lineage(uri: str, points: int) -> dict[str, float]:
    from mlflow.tracking import MlflowClient

    import lineage

    run = lineage.start_run(experiment="bench", tracking_uri=uri, record_identity=False)
    costs = [0] * points
    clock = time.perf_counter_ns
    log = run.log_metric
    t0 = time.perf_counter()
    for i in range(points):
        a = clock()
        log("loss", 1.0 / (i + 1), step=i)
        costs[i] = clock() - a
    t_logged = time.perf_counter() - t0
    run.flush()
    t_total = time.perf_counter() - t0
    run.end()
    n = len(MlflowClient(tracking_uri=uri).get_metric_history(run.run_id, "loss"))
    assert n == points, f"lineage stored {n} of {points} points"
    costs.sort()
    return {
        "median_us": statistics.median(costs) / 1000,
        "p99_us": costs[int(0.99 * (points - 1))] / 1000,
        "logging_s": t_logged,
        "seconds_incl_flush": t_total,
        "points_per_s": points / t_total,
        "writer": run._recorder.writer.kind,  # type: ignore[dict-item]
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument(
        "--sample", type=int, default=2_000, help="log_metric calls timed, then extrapolated"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)

    import logging

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    from mlflow.tracking import MlflowClient

    with tempfile.TemporaryDirectory(prefix="bench-recording-") as tmp:
        template = Path(tmp) / "template.db"
        MlflowClient(tracking_uri=f"sqlite:///{template}").search_experiments()  # migrate once
        stock = bench_log_metric(_fresh(template, "log_metric"), args.sample, args.points)
        batch = bench_log_batch(_fresh(template, "log_batch"), args.points)
        ours = bench_lineage(_fresh(template, "lineage"), args.points)

    result = {"points": args.points, "log_metric": stock, "log_batch_1000": batch, "lineage": ours}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    p = args.points
    print(
        f"Recording {p:,} metric points into one run, fresh SQLite store each (python {sys.version.split()[0]})"
    )
    print(
        f"  MlflowClient.log_metric   {stock['points_per_s']:>10,.0f} points/s  "
        f"(timed {args.sample:,} calls, {stock['seconds_sampled']:.1f} s; {p:,} extrapolated: {stock['extrapolated_s']:,.0f} s)"
    )
    print(
        f"  MlflowClient.log_batch    {batch['points_per_s']:>10,.0f} points/s  ({p:,} points in {batch['seconds']:.1f} s, 1,000 per call)"
    )
    print(
        f"  lineage run.log_metric    {ours['points_per_s']:>10,.0f} points/s  ({p:,} points in {ours['seconds_incl_flush']:.2f} s incl. final flush; "
        f"writer {ours['writer']})"
    )
    print(
        f"    per call on the training thread: median {ours['median_us']:.2f} us, p99 {ours['p99_us']:.2f} us"
    )
    print(
        f"  ratios: lineage / log_metric = {ours['points_per_s'] / stock['points_per_s']:,.0f}x, "
        f"lineage / log_batch = {ours['points_per_s'] / batch['points_per_s']:.1f}x"
    )
    ok = ours["points_per_s"] >= 20_000 and ours["median_us"] <= 20
    print(
        f"  targets (>= 20,000 points/s sustained, <= 20 us median per call): {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
