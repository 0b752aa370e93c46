"""Importance accuracy and speed: ``lineage importance`` against Optuna's fANOVA and PED-ANOVA.

For each known-truth case and seed, N runs are written into a fresh, genuine MLflow SQLite
store (schema made by MLflow's migrations, rows in the shape plain ``mlflow.log_params`` /
``log_metric`` leave, params as strings; one run read back with ``MlflowClient`` as a check).
Then each method is called the way a user would call it, as a separate process, start-up
included:

- ``lineage``: ``python -m lineage.cli importance --target y --goal minimize --format json``;
- ``fanova`` / ``ped_anova``: a process that reads the same runs with ``mlflow.search_runs``,
  turns them into an Optuna study (the same type inference: log-scale floats, ints,
  categoricals) and calls ``optuna.importance.get_param_importances`` with
  ``FanovaImportanceEvaluator`` or ``PedAnovaImportanceEvaluator``.

Scored like ``importance_truth.py``: ``order`` = relevant parameters in the true order,
``dummies`` = every no-effect parameter below every relevant one. Times are the median wall
seconds of one call and its CPU seconds (user + system, children included). The method
``in_process`` calls ``get_param_importances`` with the default evaluator on the runs as
generated (no store, no start-up; the order of the runs, hence the folds, differs from the
CLI's) and prints which model it kept and its held-out R².

Usage: ``python benchmarks/bench_importance.py [--runs 200] [--seeds 5] [--cases a,b]
[--random K] [--methods lineage,in_process,fanova,ped_anova] [--large]`` (``--large``: also
time ``lineage`` on 10,000 runs x 20 params). The power and false-positive rate of the
``significant`` flag are measured by ``bench_importance_power.py``.

Cases with published truth: ``ishigami`` and ``g_function`` (total Sobol' indices in closed
form), ``geometric`` (smooth effects halving down to about 1% of the variance, with
interactions, three dummies: weak effects), and of that kind with total
indices in closed form: ``levitan`` (Sobol' and Levitan 1999, geometric b), ``bratley``
(Bratley, Fox and Niederreiter 1992, d = 6, down to 0.6%) and ``geometric2`` (exactly
standardized smooth components and pairwise products, down to 1.15%). ``--random K`` adds
the first K cases of a random family of that kind with exact totals (``_random_case``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _mlflow_bulk import bulk_insert
from _results import write_result

ROOT = Path(__file__).resolve().parents[1]

Spec = tuple[Any, ...]


def _u(lo: float, hi: float) -> Spec:
    return ("float", lo, hi, False)


def _log(lo: float, hi: float) -> Spec:
    return ("float", lo, hi, True)


def _cat(*choices: str) -> Spec:
    return ("cat", choices)


def _int(lo: int, hi: int) -> Spec:
    return ("int", lo, hi)


Case = tuple[dict[str, Spec], Callable[[dict[str, Any], np.random.Generator], float], list[float]]

LR_BOWL_SPACE = {
    "lr": _log(1e-6, 1.0),
    "optimizer": _cat("sgd", "momentum", "adam"),
    "epochs": _int(1, 50),
    "seed": _int(0, 10_000),
    "dropout": _u(0.0, 0.5),
    "activation": _cat("relu", "gelu", "tanh", "silu"),
}


def _lr_bowl(p: dict[str, Any], rng: np.random.Generator) -> float:
    opt = {"sgd": 3.0, "momentum": 1.5, "adam": 0.0}[p["optimizer"]]
    return (math.log10(p["lr"]) + 3) ** 2 + opt + 0.03 * p["epochs"]


def _conditional(p: dict[str, Any], rng: np.random.Generator) -> float:
    y = {"sgd": 2.0, "momentum": 0.0, "adam": 1.0}[p["optimizer"]]
    if p["optimizer"] == "momentum":
        y += 6.0 * (p["momentum"] - 0.5) ** 2
    return y + 1.0 * p["wd"]


def _z(v: float, mean: float, sd: float) -> float:
    return (v - mean) / sd


def _ishigami(p: dict[str, Any], rng: np.random.Generator) -> float:
    # Ishigami and Homma (1990), a = 7, b = 0.1 on [-pi, pi]^3. Total Sobol' indices
    # (Sobol' and Levitan 1999): S_T1 = 0.5576, S_T2 = 0.4424, S_T3 = 0.2437 (x3 acts only
    # through its interaction with x1: first-order index 0).
    return math.sin(p["x1"]) + 7.0 * math.sin(p["x2"]) ** 2 + 0.1 * p["x3"] ** 4 * math.sin(p["x1"])


G_A = (0.0, 1.0, 4.5, 9.0)


def _g_function(p: dict[str, Any], rng: np.random.Generator) -> float:
    # Sobol's g-function, a = (0, 1, 4.5, 9): V_i = 1/(3 (1 + a_i)^2), total index
    # S_Ti = V_i prod_{j != i}(1 + V_j) / (prod(1 + V_j) - 1) = 0.787, 0.242, 0.034, 0.010.
    return math.prod((abs(4.0 * p[f"x{i}"] - 2.0) + a) / (1.0 + a) for i, a in enumerate(G_A))


def _g_total() -> list[float]:
    v = [1.0 / (3.0 * (1.0 + a) ** 2) for a in G_A]
    whole = math.prod(1.0 + x for x in v) - 1.0
    return [x * math.prod(1.0 + w for w in v) / (1.0 + x) / whole for x in v]


def _geometric(p: dict[str, Any], rng: np.random.Generator) -> float:
    # Smooth effects falling off by half, with two interactions; variance shares (total
    # indices, Monte Carlo, 200,000 points): 0.57, 0.35, 0.14, 0.090, 0.026, 0.013.
    x = [p[f"x{i}"] for i in range(6)]
    t = [
        _z(math.sin(2 * math.pi * x[0]), 0.0, 0.7071),
        _z(12 * (x[1] - 0.5) ** 2 - 1.0, 0.0, 0.8944),
        _z(math.cos(math.pi * x[2]), 0.0, 0.7071),
        _z(math.exp(x[3]) - 1.7, 0.01828, 0.4921),
        _z(math.tanh(3 * (x[4] - 0.5)), 0.0, 0.6298),
        _z(x[5], 0.5, 0.2887),
    ]
    weights = [0.5**k for k in range(6)]
    y = sum(math.sqrt(w) * v for w, v in zip(weights, t, strict=True))
    return y + 0.6 * t[0] * t[1] + 0.3 * t[2] * t[3]


LEVITAN_B = (1.5, 1.0, 0.7, 0.45, 0.3, 0.2)


def _levitan(p: dict[str, Any], rng: np.random.Generator) -> float:
    # Sobol' and Levitan (1999): f = exp(sum b_i x_i) - I_d on [0, 1]^d, here with b falling
    # off geometrically. A product of independent factors, so the total indices have a closed
    # form (see _levitan_total): every parameter interacts with every other.
    return math.exp(sum(b * p[f"x{i}"] for i, b in enumerate(LEVITAN_B))) - math.prod(
        (math.exp(b) - 1.0) / b for b in LEVITAN_B
    )


def _levitan_total() -> list[float]:
    # E[g_i] = (e^b - 1)/b, E[g_i^2] = (e^2b - 1)/2b; S_Ti = (1 - m_i^2/s_i) prod s / V with
    # V = prod s - prod m^2: 0.571, 0.283, 0.145, 0.062, 0.028, 0.012.
    m = [(math.exp(b) - 1.0) / b for b in LEVITAN_B]
    s = [(math.exp(2 * b) - 1.0) / (2 * b) for b in LEVITAN_B]
    whole = math.prod(s) - math.prod(v * v for v in m)
    return [(1.0 - mi * mi / si) * math.prod(s) / whole for mi, si in zip(m, s, strict=True)]


BRATLEY_D = 6


def _bratley(p: dict[str, Any], rng: np.random.Generator) -> float:
    # Bratley, Fox and Niederreiter (1992), the "K function" of the sensitivity-analysis test
    # suites: f = sum_i (-1)^i prod_{j<=i} x_j on [0, 1]^6; effects fall off geometrically,
    # all through products (interactions).
    return sum((-1) ** i * math.prod(p[f"x{j}"] for j in range(i)) for i in range(1, BRATLEY_D + 1))


def _bratley_total() -> list[float]:
    # f is linear in each x_k: S_Tk = E[(df/dx_k)^2] / 12 / Var f, exact from the moments
    # E[x] = 1/2, E[x^2] = 1/3: 0.740, 0.266, 0.076, 0.034, 0.0062, 0.0062.
    def moment(a: int, b: int, skip: int = 0) -> float:
        return math.prod(
            (1.0, 0.5, 1.0 / 3.0)[(j <= a) + (j <= b)] for j in range(1, max(a, b) + 1) if j != skip
        )

    idx = range(1, BRATLEY_D + 1)
    mean = sum((-1) ** i * 0.5**i for i in idx)
    var = sum((-1) ** (i + k) * moment(i, k) for i in idx for k in idx) - mean**2
    return [
        sum((-1) ** (i + k) * moment(i, k, j) for i in idx for k in idx if min(i, k) >= j)
        / 12
        / var
        for j in idx
    ]


GEO2_W = [0.55**k for k in range(7)]
GEO2_PAIRS = {(0, 1): 0.4, (2, 3): 0.2, (4, 5): 0.1}
_SQ = (math.sqrt(7.0), math.sqrt(2.0), math.sqrt(5.0), math.sqrt(12.0), math.sqrt(2.0))


def _geometric2(p: dict[str, Any], rng: np.random.Generator) -> float:
    # Weak effects with an exact truth: seven smooth components with mean 0 and variance
    # 1 exactly (Legendre polynomials, a cosine, a sine), weights falling off by 0.55, three
    # pairwise products; total index of k = (w_k + sum of its products' c^2) / V.
    x = [p[f"x{i}"] for i in range(7)]
    z = [2.0 * v - 1.0 for v in x]
    t = [
        _SQ[0] * (5 * z[0] ** 3 - 3 * z[0]) / 2,
        _SQ[1] * math.cos(math.pi * x[1]),
        _SQ[2] * (3 * z[2] ** 2 - 1) / 2,
        _SQ[3] * (x[3] - 0.5),
        _SQ[4] * math.sin(2 * math.pi * x[4]),
        math.sqrt(3.0) * z[5],
        _SQ[2] * (3 * z[6] ** 2 - 1) / 2,
    ]
    y = sum(math.sqrt(w) * v for w, v in zip(GEO2_W, t, strict=True))
    return y + sum(c * t[a] * t[b] for (a, b), c in GEO2_PAIRS.items())


def _geometric2_total() -> list[float]:
    # 0.484, 0.296, 0.143, 0.086, 0.042, 0.025, 0.0115
    whole = sum(GEO2_W) + sum(c * c for c in GEO2_PAIRS.values())
    return [
        (w + sum(c * c for pair, c in GEO2_PAIRS.items() if k in pair)) / whole
        for k, w in enumerate(GEO2_W)
    ]


# name -> (space, function, truth: higher = more important, 0 = no effect)
CASES: dict[str, Case] = {
    # the two cases of importance_truth.py, unchanged
    "linear": (
        {f"x{i}": _u(0, 1) for i in range(6)},
        lambda p, r: 4 * p["x0"] + 2 * p["x1"] + p["x2"],
        [16, 4, 1, 0, 0, 0],
    ),
    "lr_bowl": (LR_BOWL_SPACE, _lr_bowl, [3, 2, 1, 0, 0, 0]),
    # pure interaction: no main effect at all
    "interaction": (
        {f"x{i}": _u(-1, 1) for i in range(5)},
        lambda p, r: 3 * p["x0"] * p["x1"] + 0.5 * p["x2"],
        [2, 2, 1, 0, 0],
    ),
    # momentum exists only when optimizer=momentum (a conditional parameter)
    "conditional": (
        {
            "optimizer": _cat("sgd", "momentum", "adam"),
            "momentum": _u(0.0, 1.0),
            "wd": _u(0.0, 1.0),
            "seed": _int(0, 10_000),
            "dropout": _u(0.0, 0.5),
        },
        _conditional,
        [3, 1, 2, 0, 0],
    ),
    # a quarter of the variance is noise; a 24-level label has no effect
    "noisy": (
        {
            "lr": _log(1e-5, 1e-1),
            "width": _int(16, 512),
            "label": _cat(*(f"l{i}" for i in range(24))),
            "seed": _int(0, 10_000),
            "dropout": _u(0.0, 0.5),
        },
        lambda p, r: (math.log10(p["lr"]) + 3) ** 2 + p["width"] / 256 + 0.8 * float(r.normal()),
        [2, 1, 0, 0, 0],
    ),
    # From the sensitivity-analysis literature, truth = published total Sobol' indices
    # (what permutation importance estimates), plus two no-effect parameters each.
    "ishigami": (
        {
            **{f"x{i}": _u(-math.pi, math.pi) for i in (1, 2, 3)},
            "d1": _u(-math.pi, math.pi),
            "d2": _u(-math.pi, math.pi),
        },
        _ishigami,
        [0.5576, 0.4424, 0.2437, 0, 0],
    ),
    "g_function": (
        {**{f"x{i}": _u(0, 1) for i in range(4)}, "d1": _u(0, 1), "d2": _u(0, 1)},
        _g_function,
        [*_g_total(), 0, 0],
    ),
    # Weak effects: geometric fall-off down to about 1% of the variance, three dummies.
    "geometric": (
        {f"x{i}": _u(0, 1) for i in range(9)},
        _geometric,
        [0.57, 0.35, 0.14, 0.090, 0.026, 0.013, 0, 0, 0],
    ),
    "levitan": (
        {**{f"x{i}": _u(0, 1) for i in range(6)}, **{f"d{i}": _u(0, 1) for i in (1, 2, 3)}},
        _levitan,
        [*_levitan_total(), 0, 0, 0],
    ),
    "bratley": (
        {**{f"x{i}": _u(0, 1) for i in range(BRATLEY_D)}, "d1": _u(0, 1), "d2": _u(0, 1)},
        _bratley,
        [*_bratley_total(), 0, 0],
    ),
    "geometric2": (
        {**{f"x{i}": _u(0, 1) for i in range(7)}, **{f"d{i}": _u(0, 1) for i in (1, 2, 3)}},
        _geometric2,
        [*_geometric2_total(), 0, 0, 0],
    ),
}


# ---- a random family of weak-effect cases -------------------------------------------------

_GRID = (np.arange(200_000) + 0.5) / 200_000  # midpoints: moments of a component on [0, 1]
_SHAPES = ("quadratic", "cubic", "linear", "cosine", "sine", "exp", "tanh", "log", "bump")


def _shape(kind: str, rng: np.random.Generator) -> Callable[[float], float]:
    """A smooth function of [0, 1], shifted and scaled to mean 0 and variance 1."""
    a, b = rng.uniform(0.5, 1.5), rng.uniform(0.0, math.pi)
    f: Callable[[Any], Any] = {
        "quadratic": lambda x: 3 * (2 * x - 1) ** 2 - 1,
        "cubic": lambda x: 5 * (2 * x - 1) ** 3 - 3 * (2 * x - 1),
        "linear": lambda x: x,
        "cosine": lambda x: np.cos(math.pi * a * x + b),
        "sine": lambda x: np.sin(2 * math.pi * x),
        "exp": lambda x: np.exp((1 + a) * x),
        "tanh": lambda x: np.tanh((2 + 2 * a) * (x - 0.3 - b / 8)),
        "log": lambda x: np.log(x + 0.05),
        "bump": lambda x: np.exp(-(((x - 0.3 - b / 8) / 0.2) ** 2)),
    }[kind]
    values = f(_GRID)
    mean, sd = float(values.mean()), float(values.std())
    return lambda x: (float(f(x)) - mean) / sd


def _random_case(k: int) -> Case | None:
    """Case ``random<k>``: 5-8 standardized smooth components (drawn from ``_SHAPES``) with
    weights falling off by a ratio of 0.45-0.7, one to three pairwise products and sometimes a
    triple one, two or three no-effect parameters. The terms are products of independent
    mean-0 factors, hence orthogonal, so the total indices are exact: (w_i + the squared
    coefficients of the products holding i) / the sum of all. Drawn until the weakest total
    is 0.7-1.5% and each total is at least 1.25 times the next (None when none is found)."""
    rng = np.random.default_rng(1000 + k)
    d, dummies = int(rng.integers(5, 9)), int(rng.integers(2, 4))
    shapes = [_shape(_SHAPES[int(rng.integers(len(_SHAPES)))], rng) for _ in range(d)]
    products: list[tuple[int, ...]] = []
    for _ in range(int(rng.integers(1, 4))):
        pair = tuple(sorted(rng.choice(d, 2, replace=False).tolist()))
        if pair not in products:
            products.append(pair)
    if rng.random() < 0.5:
        products.append(tuple(sorted(rng.choice(d, 3, replace=False).tolist())))
    for _ in range(200):
        ratio = rng.uniform(0.45, 0.7)
        w = [ratio**i for i in range(d)]
        c = [rng.uniform(0.2, 0.6) * math.sqrt(w[min(t)] * w[max(t)]) ** 0.5 for t in products]
        whole = sum(w) + sum(v * v for v in c)
        total = [
            (w[i] + sum(v * v for t, v in zip(products, c, strict=True) if i in t)) / whole
            for i in range(d)
        ]
        ranked = sorted(total, reverse=True)
        if 0.007 <= ranked[-1] <= 0.015 and all(
            a >= 1.25 * b for a, b in itertools.pairwise(ranked)
        ):
            break
    else:
        return None

    def fn(p: dict[str, Any], _: np.random.Generator) -> float:
        t = [shape(p[f"x{i}"]) for i, shape in enumerate(shapes)]
        y = sum(math.sqrt(wi) * ti for wi, ti in zip(w, t, strict=True))
        return y + sum(v * math.prod(t[i] for i in tp) for tp, v in zip(products, c, strict=True))

    space = {f"x{i}": _u(0, 1) for i in range(d)} | {f"d{i}": _u(0, 1) for i in range(dummies)}
    return space, fn, [*total, *[0.0] * dummies]


def _case(name: str) -> Case:
    if name.startswith("random") and name not in CASES:
        made = _random_case(int(name[len("random") :]))
        if made is None:
            raise SystemExit(f"{name}: no case of the family for that seed")
        CASES[name] = made
    return CASES[name]


def _random_names(count: int) -> list[str]:
    names: list[str] = []
    k = 0
    while len(names) < count:
        if _random_case(k) is not None:
            names.append(f"random{k}")
        k += 1
    return names


def _drop(case: str, p: dict[str, Any]) -> list[str]:
    if case == "conditional" and p["optimizer"] != "momentum":
        return ["momentum"]
    return []


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


def build_store(path: Path, experiment: str, rows: list[tuple[dict[str, str], float]]) -> str:
    """A migrated MLflow SQLite store with one finished run per ``(params, y)`` row."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{path}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment(
        experiment, artifact_location=(path.parent / "mlruns").as_uri()
    )
    now = int(time.time() * 1000) - len(rows) * 1000
    runs, params, metrics, latest, tags = [], [], [], [], []
    for i, (p, y) in enumerate(rows):
        run_id = uuid.uuid4().hex
        start, end = now + i * 1000, now + i * 1000 + 500
        art = f"{(path.parent / 'mlruns').as_uri()}/{run_id}/artifacts"
        runs.append(
            (run_id, f"run-{i}", "LOCAL", "train.py", "", "bench", "FINISHED", start, end, "",
             "active", art, int(exp_id))
        )  # fmt: skip
        params.extend((k, v, run_id) for k, v in p.items())
        metrics.append(("y", y, end, run_id, 0, 0))
        latest.append(("y", y, end, 0, 0, run_id))
        tags.append(("mlflow.runName", f"run-{i}", run_id))
    bulk_insert(path, runs=runs, params=params, metrics=metrics, latest=latest, tags=tags)
    check = client.get_run(runs[-1][0])
    assert check.data.params == rows[-1][0] and check.data.metrics == {"y": rows[-1][1]}
    return uri


def _case_rows(case: str, n: int, seed: int) -> list[tuple[dict[str, str], float]]:
    space, fn, _ = _case(case)
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        p = _sample(space, rng)
        y = float(fn(p, rng))
        for name in _drop(case, p):
            p.pop(name)
        rows.append(({k: str(v) for k, v in p.items()}, y))
    return rows


# ---- the Optuna side, run in its own process --------------------------------------------


def _optuna_worker(method: str, uri: str, experiment: str) -> int:
    import mlflow
    import optuna
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )
    from optuna.importance import FanovaImportanceEvaluator, PedAnovaImportanceEvaluator

    from lineage.importance import infer_spec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    mlflow.set_tracking_uri(uri)
    frame = mlflow.search_runs(experiment_names=[experiment])
    names = [c[7:] for c in frame.columns if c.startswith("params.")]
    dists: dict[str, Any] = {}
    for name in names:
        col = frame[f"params.{name}"]
        spec = infer_spec(name, col.tolist())
        present = col.dropna()
        if spec.kind == "categorical":
            dists[name] = CategoricalDistribution(sorted(set(present)))
        elif all(float(v).is_integer() for v in present):
            v = [int(float(x)) for x in present]
            dists[name] = IntDistribution(min(v), max(v), log=spec.log)
        else:
            v = [float(x) for x in present]
            dists[name] = FloatDistribution(min(v), max(v), log=spec.log)
    study = optuna.create_study(direction="minimize")
    for _, row in frame.iterrows():
        params, used = {}, {}
        for name, dist in dists.items():
            raw = row[f"params.{name}"]
            if raw is None or (isinstance(raw, float) and math.isnan(raw)):
                continue
            if isinstance(dist, CategoricalDistribution):
                params[name] = raw
            elif isinstance(dist, IntDistribution):
                params[name] = int(float(raw))
            else:
                params[name] = float(raw)
            used[name] = dist
        study.add_trial(
            optuna.trial.create_trial(params=params, distributions=used, value=row["metrics.y"])
        )
    evaluator = (
        FanovaImportanceEvaluator(seed=0) if method == "fanova" else PedAnovaImportanceEvaluator()
    )
    imp = optuna.importance.get_param_importances(study, evaluator=evaluator)
    print(json.dumps({"params": [{"name": k, "importance": v} for k, v in imp.items()]}))
    return 0


# ---- scoring and timing ---------------------------------------------------------------


def _score(ranked: list[dict[str, Any]], names: list[str], truth: list[float]) -> tuple[bool, bool]:
    imp = {r["name"]: float(r["importance"]) for r in ranked}
    est = [imp.get(n, 0.0) for n in names]
    relevant = sorted([(t, e) for t, e in zip(truth, est, strict=True) if t > 0], reverse=True)
    dummies = [e for t, e in zip(truth, est, strict=True) if t == 0]
    order_ok = all(ea > eb for ta, ea in relevant for tb, eb in relevant if ta > tb)
    dummies_last = not dummies or min(e for _, e in relevant) > max(dummies)
    return order_ok, dummies_last


def _command(method: str, uri: str, experiment: str) -> list[str]:
    if method == "lineage":
        return [sys.executable, "-m", "lineage.cli", "importance", "--tracking-uri", uri,
                "--experiment", experiment, "--target", "y", "--goal", "minimize",
                "--format", "json"]  # fmt: skip
    return [sys.executable, __file__, "--optuna-worker", method, uri, experiment]


def _timed_call(cmd: list[str]) -> tuple[dict[str, Any], float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[2:4]} failed: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout), wall, cpu


def _in_process(
    rows: list[tuple[dict[str, str], float]], fits: list[tuple[str, float]]
) -> tuple[dict[str, Any], float, float]:
    """The default evaluator on the runs in the order they were generated (the CLI reads
    them back in MLflow's order, which changes the folds)."""
    from lineage.importance import AutoImportance, get_param_importances
    from lineage.store import RunRecord

    runs = [
        RunRecord(run_id=f"{i:032x}", experiment_id="0", experiment="bench", name=f"run-{i}",
                  status="FINISHED", start_time=i, end_time=i + 1, params=p, metrics={"y": y})
        for i, (p, y) in enumerate(rows)
    ]  # fmt: skip
    evaluator = AutoImportance()
    t0, c0 = time.perf_counter(), time.process_time()
    result = get_param_importances(runs, target="y", goal="minimize", evaluator=evaluator)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    fits.append((evaluator.model_, evaluator.cv_r2_))
    return result.to_dict(top_runs=0), wall, cpu


def _large(methods: list[str]) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(10_000):
        x = rng.uniform(0, 1, 20)
        y = 5 * x[0] + 3 * x[1] ** 2 + math.sin(6 * x[2]) + 0.3 * rng.normal()
        rows.append(({f"p{i:02d}": repr(float(v)) for i, v in enumerate(x)}, float(y)))
    with tempfile.TemporaryDirectory() as d:
        uri = build_store(Path(d) / "mlflow.db", "large", rows)
        for method in methods:
            out, wall, cpu = _timed_call(_command(method, uri, "large"))
            top = ", ".join(p["name"] for p in out["params"][:3])
            print(f"large      {method:10s} runs=10000 params=20 wall={wall:6.2f}s "
                  f"cpu={cpu:6.2f}s top3={top}")  # fmt: skip


def _print_load() -> None:
    one, five, fifteen = os.getloadavg()
    print(f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--skip-cases", default="", help="comma-separated cases to leave out")
    ap.add_argument(
        "--methods",
        default="lineage,fanova,ped_anova",
        help="lineage (the CLI, a process), in_process (get_param_importances on the runs as "
        "generated, no store, no start-up), fanova, ped_anova",
    )
    ap.add_argument(
        "--random",
        type=int,
        default=0,
        metavar="K",
        help="also the first K cases of the random family (random<k>, see _random_case)",
    )
    ap.add_argument("--large", action="store_true", help="also time 10,000 runs x 20 params")
    ap.add_argument("--large-methods", default="lineage")
    ap.add_argument("--optuna-worker", nargs=3, metavar=("METHOD", "URI", "EXPERIMENT"))
    args = ap.parse_args()
    if args.optuna_worker:
        return _optuna_worker(*args.optuna_worker)
    methods = args.methods.split(",")
    skipped = set(filter(None, args.skip_cases.split(",")))
    named = [c for c in filter(None, args.cases.split(",")) if c not in skipped]
    cases = [*named, *_random_names(args.random)]
    _print_load()
    print(f"{'case':10s} {'method':10s} {'order':>6s} {'dummies':>8s} {'wall s':>7s} {'cpu s':>6s}")
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for case in cases:
        space, _, truth = _case(case)
        tally = {m: [0, 0, [], []] for m in methods}
        fits: list[tuple[str, float]] = []
        for seed in range(args.seeds):
            rows = _case_rows(case, args.runs, seed)
            with tempfile.TemporaryDirectory() as d:
                if any(m != "in_process" for m in methods):
                    uri = build_store(Path(d) / "mlflow.db", case, rows)
                for method in methods:  # interleaved, so machine load hits all alike
                    if method == "in_process":
                        out, wall, cpu = _in_process(rows, fits)
                    else:
                        out, wall, cpu = _timed_call(_command(method, uri, case))
                    o, dl = _score(out["params"], list(space), truth)
                    t = tally[method]
                    t[0] += o
                    t[1] += dl
                    t[2].append(wall)  # type: ignore[union-attr]
                    t[3].append(cpu)  # type: ignore[union-attr]
        for method, (o, dl, walls, cpus) in tally.items():
            figures.setdefault(case, {})[method] = {
                "order_right": o,
                "dummies_last": dl,
                "seeds": args.seeds,
                "median_wall_s": round(statistics.median(walls), 2),  # type: ignore[arg-type]
                "median_cpu_s": round(statistics.median(cpus), 2),  # type: ignore[arg-type]
            }
            print(
                f"{case:10s} {method:10s} {o:>4d}/{args.seeds} {dl:>6d}/{args.seeds} "
                f"{statistics.median(walls):7.2f} {statistics.median(cpus):6.2f}"  # type: ignore[arg-type]
            )
        if fits:
            models = ", ".join(
                f"{m} x{sum(f[0] == m for f in fits)}" for m in sorted({f[0] for f in fits})
            )
            r2 = [f[1] for f in fits]
            print(f"{'':10s} in_process: {models}; held-out R2 {min(r2):.4f}-{max(r2):.4f}")
        sys.stdout.flush()
    if args.large:
        _large(args.large_methods.split(","))
    _print_load()
    write_result(
        "importance",
        figures,
        store="sqlite",
        params={"runs": args.runs, "seeds": args.seeds, "methods": methods},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
