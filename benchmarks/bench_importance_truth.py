"""Score `lineage importance` against functions whose true parameter importance is known.

Each case logs ``--runs`` plain MLflow runs (params as strings, as any MLflow user logs them)
into a fresh SQLite store, then runs the CLI as a user would::

    lineage importance --tracking-uri URI --experiment CASE --target y --goal minimize --format json

and checks the ranking against the truth: the relevant parameters in the right order, and the
parameters without effect ranked below every relevant one. This is the floor the importance
analysis must keep; ``bench_importance.py`` measures finer cases (weak effects, interactions)
and the speed against Optuna's evaluators.

    python benchmarks/bench_importance_truth.py [--runs 200] [--seeds 5] [--method auto]

Prints one row per case and writes ``benchmarks/results/importance_truth.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result
from bench_importance import CASES as ALL_CASES
from bench_importance import _sample, _score

#: The floor: the first two cases of ``bench_importance.py`` (the same spaces and truths).
CASES = {name: ALL_CASES[name] for name in ("linear", "lr_bowl")}


def _log_runs(uri: str, experiment: str, case: Any, n: int, seed: int) -> None:
    """``n`` plain MLflow runs of ``case``: params as strings, as any MLflow user logs them."""
    import mlflow

    space, fn, _ = case
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        p = _sample(space, rng)
        with mlflow.start_run():
            mlflow.log_params(p)
            mlflow.log_metric("y", float(fn(p, rng)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--method", choices=["auto", "forest", "gp"], default="auto")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    lineage_cli = str(Path(sys.executable).with_name("lineage"))
    figures: dict[str, Any] = {}
    failed = False
    for cname, case in CASES.items():
        space, _, truth = case
        ok_order = ok_dummies = 0
        secs: list[float] = []
        models: list[str] = []
        for seed in range(args.seeds):
            with tempfile.TemporaryDirectory() as d:
                uri = f"sqlite:///{d}/mlflow.db"
                _log_runs(uri, cname, case, args.runs, seed)
                argv = [lineage_cli, "importance", "--tracking-uri", uri, "--experiment", cname,
                        "--target", "y", "--goal", "minimize", "--method", args.method,
                        "--format", "json"]  # fmt: skip
                t0 = time.perf_counter()
                res = subprocess.run(argv, capture_output=True, text=True)
                secs.append(time.perf_counter() - t0)
                if res.returncode != 0:
                    print(f"{cname}: lineage importance failed: {res.stderr.strip()[-300:]}")
                    failed = True
                    break
                answer = json.loads(res.stdout)
                models.append(str(answer.get("model", "?")))
                o, d_ = _score(answer["params"], list(space), truth)
                ok_order += o
                ok_dummies += d_
        median = float(np.median(secs)) if secs else float("nan")
        figures[cname] = {
            "order_right": ok_order,
            "dummies_last": ok_dummies,
            "seeds": args.seeds,
            "median_seconds": round(median, 2),
            "models": sorted(set(models)),
        }
        print(
            f"{cname:10s} runs={args.runs} order_right={ok_order}/{args.seeds} "
            f"dummies_last={ok_dummies}/{args.seeds} median_seconds={median:.2f}"
        )
    path = write_result(
        "importance_truth",
        figures,
        store="sqlite",
        params={"runs": args.runs, "seeds": args.seeds, "method": args.method},
        results_dir=args.results_dir,
    )
    print(f"result: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
