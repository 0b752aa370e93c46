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
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

Spec = tuple[Any, ...]
Case = tuple[dict[str, Spec], Callable[[dict[str, Any]], float], list[float]]


def _u(lo: float, hi: float) -> Spec:
    return ("float", lo, hi, False)


def _log(lo: float, hi: float) -> Spec:
    return ("float", lo, hi, True)


def _cat(*choices: str) -> Spec:
    return ("cat", choices)


def _int(lo: int, hi: int) -> Spec:
    return ("int", lo, hi)


_OPTIMIZER_COST = {"sgd": 3.0, "momentum": 1.5, "adam": 0.0}

# name -> (space, function, truth): a score per parameter, higher is more important, 0 no effect.
CASES: dict[str, Case] = {
    # y = 4 x0 + 2 x1 + x2: variance shares 16 : 4 : 1; x3..x5 have no effect.
    "linear": (
        {f"x{i}": _u(0, 1) for i in range(6)},
        lambda p: 4 * p["x0"] + 2 * p["x1"] + p["x2"],
        [16, 4, 1, 0, 0, 0],
    ),
    # A learning-rate bowl on a log scale dominates (about 81% of the variance), the optimizer
    # next (17%), epochs barely (2%); seed, dropout and activation have no effect.
    "lr_bowl": (
        {
            "lr": _log(1e-6, 1.0),
            "optimizer": _cat("sgd", "momentum", "adam"),
            "epochs": _int(1, 50),
            "seed": _int(0, 10_000),
            "dropout": _u(0.0, 0.5),
            "activation": _cat("relu", "gelu", "tanh", "silu"),
        },
        lambda p: (
            (math.log10(p["lr"]) + 3) ** 2 + _OPTIMIZER_COST[p["optimizer"]] + 0.03 * p["epochs"]
        ),
        [3, 2, 1, 0, 0, 0],
    ),
}


def _sample(space: dict[str, Spec], rng: np.random.Generator) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in space.items():
        if spec[0] == "cat":
            out[name] = spec[1][rng.integers(len(spec[1]))]
        elif spec[0] == "int":
            out[name] = int(rng.integers(spec[1], spec[2] + 1))
        elif spec[3]:
            out[name] = float(math.exp(rng.uniform(math.log(spec[1]), math.log(spec[2]))))
        else:
            out[name] = float(rng.uniform(spec[1], spec[2]))
    return out


def _log_runs(uri: str, experiment: str, case: Case, n: int, seed: int) -> None:
    import mlflow

    space, fn, _ = case
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        p = _sample(space, rng)
        with mlflow.start_run():
            mlflow.log_params(p)
            mlflow.log_metric("y", float(fn(p)))


def _score(ranked: list[dict[str, Any]], names: list[str], truth: list[float]) -> tuple[bool, bool]:
    imp = {r["name"]: float(r["importance"]) for r in ranked}
    est = [imp.get(n, 0.0) for n in names]
    relevant = sorted(((t, e) for t, e in zip(truth, est, strict=True) if t > 0), reverse=True)
    dummies = [e for t, e in zip(truth, est, strict=True) if t == 0]
    order_ok = all(a[1] > b[1] for a, b in pairwise(relevant))
    dummies_last = not dummies or min(e for _, e in relevant) > max(dummies)
    return order_ok, dummies_last


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
