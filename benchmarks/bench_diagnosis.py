"""Count the good trials diagnosis would stop: the false stops of ``diagnosis.early_stop``.

Each trial's whole curve is known in advance; the benchmark replays it report by report
through ``lineage.diagnose.online_check`` (every prefix: stricter than a campaign, which checks
at most once a second) and records the first report after which the check would have stopped
the trial. A *false stop* is a stopped trial whose final value, had it run on, is in the top
quarter of its task's trials. The goal is zero. True stops are counted on provoked failures
(a NaN, an Inf, exponential growth after an improving start), which must all be stopped.

Tasks:

- ``mfh3_*`` / ``mfh6_*``: mf-prior-bench's multi-fidelity Hartmann functions (all four
  correlation variants), fidelity ``z`` 1..100 as epochs, the error as ``loss`` (minimized; it
  starts positive and ends negative), and the same curves negated as a maximized ``score``.
  mf-prior-bench pins numpy<2, so it runs in its own environment: ``--mfpbench-python`` names
  that interpreter (``python -m venv V && V/bin/pip install mf-prior-bench==1.10.0``); the
  curves come back as JSON.
- ``negative_objective``: synthetic curves that start just above zero and improve below it
  (levels -0.5 .. -3.3, noisy), as a negative log-likelihood or an ELBO does.
- ``digits_mlp``: the project's own training (``_schedulers_train.py``: an MLP on scikit-
  learn's digits, SGD, ``lr`` over four decades), 27 epochs, reporting ``val_loss`` and
  ``val_accuracy`` (the target, maximized); a trial is stopped when either curve is.

Each task is also replayed through the magnitude rule the goal-direction rule replaces
(``|value|`` against 100 x the initial level, divergence read as a minimized loss), for
comparison.

    python benchmarks/bench_diagnosis.py [--configs 48] [--mlp-configs 24] [--mfpbench-python PY]

Prints one row per task and writes ``benchmarks/results/diagnosis.json``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mfpbench import sample_curves
from _results import write_result

from lineage.diagnose import online_check

#: (metric, goal, values) for each curve a trial reports; the trial's final target value.
Trial = tuple[list[tuple[str, str | None, list[float]]], float]


def _hartmann_trials(curves: list[list[float]], maximize: bool) -> list[Trial]:
    if maximize:  # the same curves as a score to maximize
        return [([("score", "maximize", [-v for v in c])], -c[-1]) for c in curves]
    return [([("loss", "minimize", c)], c[-1]) for c in curves]


def _negative_objective(n: int, seed: int) -> list[Trial]:
    rng = np.random.default_rng(seed)
    trials: list[Trial] = []
    k = np.arange(100)
    for _ in range(n):
        start, end = rng.uniform(0.0, 0.05), rng.uniform(-3.3, -0.5)
        tau = rng.uniform(5, 40)
        clean = end + (start - end) * np.exp(-k / tau)
        noisy = clean + rng.uniform(0.0, 0.1) * abs(end) * rng.standard_normal(100)
        noisy[0] = start
        trials.append(([("loss", "minimize", [float(v) for v in noisy])], float(clean[-1])))
    return trials


def _digits_mlp(n: int, seed: int, epochs: int) -> list[Trial]:
    import torch
    from _schedulers_train import Training, _data

    rng = np.random.default_rng(seed)
    trials: list[Trial] = []
    for i in range(n):
        params = {
            "lr": float(10 ** rng.uniform(-4, 0)),
            "momentum": float(rng.uniform(0.0, 0.99)),
            "weight_decay": float(10 ** rng.uniform(-6, -1)),
            "hidden": round(float(2 ** rng.uniform(3, 8))),
        }
        training = Training(params, seed=seed + i)
        losses, accs = [], []
        for _ in range(epochs):
            accs.append(training.train_epoch())
            _, _, xv, yv = _data()
            with torch.no_grad():
                out = training.model(xv)
                losses.append(float(torch.nn.functional.cross_entropy(out, yv)))
        curves = [("val_loss", None, losses), ("val_accuracy", None, accs)]
        trials.append((curves, accs[-1]))
    return trials


def _first_stop(check: Callable[..., Any], trial: Trial) -> int | None:
    """The first number of reports after which ``check`` stops one of the trial's curves."""
    curves = trial[0]
    length = max(len(values) for _, _, values in curves)
    steps = list(range(length))
    for n in range(1, length + 1):
        for metric, goal, values in curves:
            if check(metric, steps[:n], values[:n], goal) is not None:
                return n
    return None


def _goal_rule(metric: str, steps: list[int], values: list[float], goal: str | None) -> Any:
    return online_check(metric, steps, values, goal=goal)


def _magnitude_rule(metric: str, steps: list[int], values: list[float], goal: str | None) -> Any:
    """NaN/Inf on any metric; on a loss-like name, |value| >= 100 x max(|initial level|,
    1e-3) after the first window, or divergence read as a minimized loss."""
    del steps, goal
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        return "non-finite"
    if "loss" not in metric:
        return None
    w = max(3, math.ceil(0.1 * len(v)))
    if len(v) > w:
        ref = max(abs(float(np.median(v[:w]))), 1e-3)
        if np.any(np.abs(v[w:]) >= 100 * ref):
            return "runaway"
    if len(v) < 10:
        return None
    import pandas as pd

    smooth = pd.Series(v).rolling(w, center=True, min_periods=1).median().to_numpy()
    ibest = int(np.argmin(smooth))
    if ibest >= len(v) - w:
        return None
    best, initial, final = smooth[ibest], np.median(v[:w]), np.median(v[-w:])
    rise = final - best
    return (
        "divergence" if rise > 0 and rise >= max(0.5 * max(initial - best, 0), abs(best)) else None
    )


def _count(trials: list[Trial], maximize: bool) -> dict[str, Any]:
    finals = np.asarray([t[1] for t in trials])
    finite = np.isfinite(finals)
    cut = np.quantile(finals[finite], 0.75 if maximize else 0.25)
    top = finite & ((finals >= cut) if maximize else (finals <= cut))
    row: dict[str, Any] = {"trials": len(trials), "top_quarter": int(top.sum())}
    for name, rule in (("goal_rule", _goal_rule), ("magnitude_rule", _magnitude_rule)):
        stops = [_first_stop(rule, t) for t in trials]
        stopped = np.asarray([s is not None for s in stops])
        row[name] = {
            "stopped": int(stopped.sum()),
            "false_stops": int((stopped & top).sum()),
            "false_stop_finals": [round(float(f), 4) for f in finals[stopped & top]],
        }
    return row


def _failures(n: int, seed: int) -> dict[str, Any]:
    """Improving starts spoiled by a NaN, an Inf or exponential growth: all must stop."""
    rng = np.random.default_rng(seed + 1)
    kinds = {"nan": 0, "inf": 0, "exponential": 0}
    stopped = dict.fromkeys(kinds, 0)
    for i in range(n):
        start = _negative_objective(1, seed + 100 + i)[0][0][0][2][: int(rng.integers(10, 60))]
        for kind in kinds:
            if kind == "exponential":
                rate = rng.uniform(1.2, 2.0)
                tail = [start[-1] + 3.0 * (rate**j - 1) for j in range(1, 120)]
            else:
                tail = [float(kind)]
            trial: Trial = ([("loss", "minimize", [*start, *tail])], math.nan)
            kinds[kind] += 1
            stopped[kind] += _first_stop(_goal_rule, trial) is not None
    return {k: {"trials": kinds[k], "stopped": stopped[k]} for k in kinds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=48, help="configurations per Hartmann task")
    ap.add_argument("--mlp-configs", type=int, default=24, help="digits MLP configurations")
    ap.add_argument("--epochs", type=int, default=27, help="digits MLP epochs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mfpbench-python", help="interpreter with mf-prior-bench==1.10.0")
    ap.add_argument("--results-dir", type=Path)
    args = ap.parse_args(argv)
    started = time.process_time()
    tasks: dict[str, tuple[list[Trial], bool]] = {}
    version = None
    if args.mfpbench_python:
        version, curves = sample_curves(args.mfpbench_python, args.configs, args.seed)
        for name, task_curves in curves.items():
            tasks[f"{name}/loss"] = (_hartmann_trials(task_curves, False), False)
            tasks[f"{name}/score"] = (_hartmann_trials(task_curves, True), True)
    tasks["negative_objective"] = (_negative_objective(args.configs, args.seed), False)
    tasks["digits_mlp"] = (_digits_mlp(args.mlp_configs, args.seed, args.epochs), True)
    rows = {name: _count(trials, maximize) for name, (trials, maximize) in tasks.items()}
    failures = _failures(args.configs, args.seed)
    total = {
        rule: {
            "stopped": sum(r[rule]["stopped"] for r in rows.values()),
            "false_stops": sum(r[rule]["false_stops"] for r in rows.values()),
        }
        for rule in ("goal_rule", "magnitude_rule")
    }
    print(f"{'task':28} {'trials':>6} {'top25%':>6} {'stop':>5} {'false':>5} | magnitude rule")
    for name, r in rows.items():
        g, m = r["goal_rule"], r["magnitude_rule"]
        print(
            f"{name:28} {r['trials']:6} {r['top_quarter']:6} {g['stopped']:5} "
            f"{g['false_stops']:5} | stop {m['stopped']:3} false {m['false_stops']:3}"
        )
    print(f"all tasks: {total}")
    print(f"provoked failures stopped: {failures}")
    cpu = round(time.process_time() - started, 1)
    figures = {
        "tasks": rows,
        "total": total,
        "provoked_failures": failures,
        "goal_false_stops_zero": total["goal_rule"]["false_stops"] == 0,
        "cpu_seconds": cpu,
    }
    params = {
        "configs": args.configs,
        "mlp_configs": args.mlp_configs,
        "epochs": args.epochs,
        "seed": args.seed,
        "mf_prior_bench": version,
        "replay": "every prefix of every curve (a campaign checks at most once a second)",
    }
    notes = None if version else "mf-prior-bench not given (--mfpbench-python): synthetic only"
    path = write_result(
        "diagnosis", figures, store="none", params=params, notes=notes, results_dir=args.results_dir
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
