"""The fault matrix, whole: every named point of `lineage.faults.POINTS`, killed (SIGKILL)
and failed (raise), on each store asked for, through ``tests/tuner/test_fault_points.py``
with ``LT_FAULT_MATRIX=all`` (one pytest per store, side by side). Writes the matrix's size and its pass count per store to
``benchmarks/results/faults.json``.

With ``--race-runs N`` it also runs the two-workers race
(``tests/cluster/test_storage_race.py``: two ``tuner worker``s on one campaign with a
PostgreSQL study and a new SQLite MLflow store, the study's sessions ended three times) N times,
one pytest each, beside the matrix, and writes how many passed.

    python benchmarks/bench_faults.py [--stores sqlite postgresql] [--race-runs 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/tuner/test_fault_points.py"


def run_store(store: str) -> dict[str, Any]:
    """One pytest run of the matrix's cases on ``store``: each case's outcome and seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        t0 = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", TEST,
             "-k", store, f"--junitxml={report}"],
            cwd=ROOT,
            env={**os.environ, "LT_FAULT_MATRIX": "all"},
            check=False,
        )  # fmt: skip
        seconds = time.monotonic() - t0
        cases: dict[str, dict[str, Any]] = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            name = case.get("name", "")
            case_id = name[name.index("[") + 1 : -1] if "[" in name else name
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None
            outcome = "failed" if failed else "skipped" if skipped else "passed"
            cases[case_id] = {"outcome": outcome, "seconds": round(float(case.get("time", 0)), 1)}
    return {"cases": cases, "seconds": round(seconds, 1)}


RACE_TEST = "tests/cluster/test_storage_race.py"
RACE_CASE = "test_two_workers_on_a_new_sqlite_lineage_store_both_finish"


def run_race(runs: int) -> dict[str, Any]:
    """The two-workers race ``runs`` times, one pytest each: how many passed, and each run's
    outcome and seconds."""
    outcomes: list[dict[str, Any]] = []
    for _ in range(runs):
        t0 = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
             f"{RACE_TEST}::{RACE_CASE}"],
            cwd=ROOT,
            env={**os.environ, "LT_RACE_WORKER_ROUNDS": "1"},
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        passed = done.returncode == 0
        outcomes.append(
            {
                "outcome": "passed" if passed else "failed",
                "seconds": round(time.monotonic() - t0, 1),
            }
        )
        if not passed:
            print(done.stdout[-3000:], file=sys.stderr)
    return {
        "test": f"{RACE_TEST}::{RACE_CASE}",
        "runs": runs,
        "passed": sum(o["outcome"] == "passed" for o in outcomes),
        "outcomes": outcomes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument(
        "--race-runs", type=int, default=0, help="runs of the two-workers race (0: none)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from lineage.faults import KINDS, POINTS

    figures: dict[str, Any] = {
        "points": len(POINTS),
        "kinds": len(KINDS),
        "stores": {},
        "point_names": list(POINTS),
    }
    # One pytest per store, at the same time: each case waits on its processes more than it
    # computes, and the stores share nothing.
    # The race runs beside them, one run after another.
    with ThreadPoolExecutor(len(args.stores) + 1) as pool:
        race = pool.submit(run_race, args.race_runs) if args.race_runs else None
        results = dict(zip(args.stores, pool.map(run_store, args.stores), strict=True))
        if race is not None:
            figures["two_workers_race"] = race.result()
    for store, result in results.items():
        outcomes = [c["outcome"] for c in result["cases"].values()]
        figures["stores"][store] = {
            "size": len(POINTS) * len(KINDS),
            "ran": len(outcomes),
            "passed": outcomes.count("passed"),
            "failed": sorted(k for k, c in result["cases"].items() if c["outcome"] == "failed"),
            "seconds": result["seconds"],
            "cases": result["cases"],
        }
        print(
            f"{store}: {outcomes.count('passed')} of {len(POINTS) * len(KINDS)} cases passed "
            f"in {result['seconds']:.0f} s"
        )
    if "two_workers_race" in figures:
        r = figures["two_workers_race"]
        print(f"two workers race: {r['passed']} of {r['runs']} runs passed")
    figures["size"] = len(POINTS) * len(KINDS) * len(args.stores)
    figures["passed"] = sum(s["passed"] for s in figures["stores"].values())
    path = write_result(
        "faults",
        figures,
        store="+".join(args.stores),
        params={"stores": args.stores, "race_runs": args.race_runs},
        notes="points x kinds (kill, raise) x stores; one small campaign per case, then resume",
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
