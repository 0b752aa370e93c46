"""A real ``mlflow server`` stopped for 60 s in the middle of a tuning campaign.

The script creates a PostgreSQL database, starts ``mlflow server`` on it, and runs
``tuner run`` with that server as the lineage store: ``--trials`` trials, two at a time, each
recording ``--points`` points per key (``loss``, ``acc``) through ``lineage`` (attached to its
trial run through ``MLFLOW_RUN_ID``) and reporting its target through the trial API (which
the controller writes to MLflow). ``--after`` seconds into the campaign the server is stopped
(SIGTERM to its process group) for ``--outage`` seconds, then started again on the same port
and the same database.

Then it counts, against what was sent: every trial run holds each key's points once, in step
order; no run of the campaign is RUNNING; the campaign exited 0; the controller printed one
"unreachable" and one "is back" line. Usage:
``python benchmarks/bench_outage.py [--outage 60] [--trials 6] [--points 300]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _results import write_result

TRIAL = """
import os, sys, time
import lineage
from tuner import trial

points, pause = int(sys.argv[1]), float(sys.argv[2])
x = float(trial.params()["x"])
with lineage.start_run(record_identity=False) as run:
    for i in range(points):
        run.log_metrics({"loss": (x - 0.3) ** 2 + 1.0 / (i + 1), "acc": i / points}, step=i)
        if i % 50 == 0:
            trial.report(i, target=(x - 0.3) ** 2 + 1.0 / (i + 1))
        time.sleep(pause)
print(f"target: {(x - 0.3) ** 2}", flush=True)
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outage", type=float, default=60.0)
    ap.add_argument("--after", type=float, default=15.0, help="seconds into the campaign")
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--points", type=int, default=300, help="per key and trial")
    ap.add_argument("--pause", type=float, default=0.1, help="seconds between steps")
    args = ap.parse_args(argv)

    import psycopg
    import requests
    import yaml
    from _bench_stores import PG_BASE, Server, pg_create

    name = f"bench_outage_{uuid.uuid4().hex[:8]}"
    backend = pg_create(name)
    with tempfile.TemporaryDirectory(prefix="bench-outage-") as tmp_:
        tmp = Path(tmp_)
        server = Server(backend, tmp / "server", workers=1).wait_ready(600)
        url = server.url
        port = url.rsplit(":", 1)[1]
        (tmp / "trial.py").write_text(TRIAL)
        config = {
            "name": "outage",
            "command": [sys.executable, str(tmp / "trial.py"), str(args.points), str(args.pause)],
            "reads_tuner_params": True,
            "target": {"metric": "target", "goal": "minimize"},
            "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
            "budget": {"trials": args.trials},
            "resources": {"kind": "cpu", "parallel": 2},
            "storage": f"sqlite:///{tmp / 'optuna.db'}",
            "lineage": {"tracking_uri": url, "experiment": "outage"},
        }
        (tmp / "c.yaml").write_text(yaml.safe_dump(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        env["LINEAGE_SPOOL_DIR"] = str(tmp / "spool")
        env["LINEAGE_SPOOL_WAIT"] = "300"
        t0 = time.monotonic()
        campaign = subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "run", str(tmp / "c.yaml"), "--quiet"],
            env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(args.after)
        server.stop()
        down_at = time.monotonic()
        print(f"server stopped {down_at - t0:.0f} s into the campaign", flush=True)
        time.sleep(args.outage)
        server = _restart(backend, tmp, port)  # the same address, the same database
        print(f"server back after {time.monotonic() - down_at:.0f} s", flush=True)
        _out, err = campaign.communicate(timeout=1800)
        elapsed = time.monotonic() - t0

        def api(path: str, body: dict[str, object]) -> dict:  # type: ignore[type-arg]
            resp = requests.post(f"{url}/api/2.0/mlflow/{path}", json=body, timeout=120)
            resp.raise_for_status()
            return dict(resp.json())

        exp = requests.get(
            f"{url}/api/2.0/mlflow/experiments/get-by-name",
            params={"experiment_name": "outage"}, timeout=60,
        ).json()["experiment"]["experiment_id"]  # fmt: skip
        runs = api("runs/search", {"experiment_ids": [exp], "max_results": 1000}).get("runs", [])
        trials = [r for r in runs if _tag(r, "lineage.run_type") == "trial"]
        running = [r["info"]["run_id"] for r in runs if r["info"]["status"] == "RUNNING"]
        sent = arrived = 0
        bad = []
        for r in trials:
            for key in ("loss", "acc"):
                hist = requests.get(
                    f"{url}/api/2.0/mlflow/metrics/get-history",
                    params={"run_id": r["info"]["run_id"], "metric_key": key, "max_results": 100000},
                    timeout=120,
                ).json().get("metrics", [])  # fmt: skip
                steps = [int(m["step"]) for m in hist]
                sent += args.points
                arrived += len(steps)
                if steps != list(range(args.points)):
                    bad.append((r["info"]["run_id"], key, len(steps)))
        server.stop()
    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]

    down_lines = [line for line in err.splitlines() if "unreachable (" in line]
    back_lines = [line for line in err.splitlines() if "is back;" in line]
    print(f"campaign exit {campaign.returncode} after {elapsed:.0f} s; {len(trials)} trial runs")
    print(f"metric points: sent {sent:,}, arrived {arrived:,}, runs not exact: {len(bad)}")
    print(f"runs left RUNNING: {len(running)}")
    print(f"controller lines: {len(down_lines)} 'unreachable', {len(back_lines)} 'is back'")
    for line in down_lines + back_lines:
        print(f"  {line[:200]}")
    ok = (
        campaign.returncode == 0
        and len(trials) == args.trials
        and sent == arrived
        and not bad
        and not running
    )
    write_result(
        "outage",
        {
            "campaign_exit": campaign.returncode,
            "elapsed_s": round(elapsed, 1),
            "trial_runs": len(trials),
            "points_sent": sent,
            "points_arrived": arrived,
            "runs_not_exact": len(bad),
            "runs_left_running": len(running),
            "unreachable_lines": len(down_lines),
            "back_lines": len(back_lines),
            "ok": ok,
        },
        store="http",
        params={"outage_s": args.outage, "trials": args.trials, "points": args.points},
    )
    if not ok:
        print(err[-3000:], file=sys.stderr)
    print(
        "every point arrived once, nothing RUNNING, campaign did not fail:", "yes" if ok else "NO"
    )
    return 0 if ok else 1


def _tag(run: dict, key: str) -> str | None:  # type: ignore[type-arg]
    for tag in run.get("data", {}).get("tags", []):
        if tag["key"] == key:
            return str(tag["value"])
    return None


def _restart(backend: str, tmp: Path, port: str):  # type: ignore[no-untyped-def]
    """``mlflow server`` again on ``port`` (the address the campaign was given)."""
    import _bench_stores

    real_free_port = _bench_stores.free_port
    _bench_stores.free_port = lambda: int(port)  # type: ignore[assignment]
    try:
        return _bench_stores.Server(backend, tmp / "server-again", workers=1).wait_ready(600)
    finally:
        _bench_stores.free_port = real_free_port  # type: ignore[assignment]


if __name__ == "__main__":
    raise SystemExit(main())
