"""Trials to reach a target: random, cold TPE, warm-started TPE and a ``tuner init`` campaign.

For each task and seed, side by side in one run:

(a) ``random``: Optuna's RandomSampler over the task's full space;
(b) ``tpe-cold``: Optuna's default TPESampler over the full space, from nothing;
(c) ``tpe-warm``: the same, with ``warm_start: {from: [{experiment: PRIOR}]}``: the prior
    campaign's runs enter the study through the tuner's own machinery
    (``tuner.history.load_history`` on the loaded config's ``HistoryContext``, then
    ``tuner.history.apply``); the default ``compare: auto`` (``tuner.search._transfer``: the
    prior weighs nothing before 10 own trials, then its weight follows its measured agreement
    with the campaign's own trials, weighted toward the best pairs, and fades; a parameter
    the prior shows no effect of is sampled without it; every fifth trial is proposed seeing
    neither the prior nor the trials it steered, as a cold campaign of its own,
    ``tuner.search._view.PriorFree``);
(c') ``tpe-warm-value``: the same with ``compare: value`` (the prior's values as recorded);
(c'') ``tpe-warm-rank``: the same with ``compare: rank`` (``tuner.search._ranked``: imported
    and new values compared by rank while an imported run is ahead of the campaign's best);
(d) ``tuner-init``: the campaign ``tuner init --from PRIOR`` derives
    (``tuner.history._derive.derive_campaign`` + ``render_campaign``, loaded back with
    ``load_config``): parameters tuned over the recorded ranges (widened where the prior's
    best runs sit at a bound), those the analysis is confident do not matter fixed at the
    prior's best values; warm-started from the prior the same way. It offers, commented out,
    a focus on the prior's best region and a re-run of its 3 best configurations first, and
    that is how it runs here (the re-run, set, cost trials wherever the optimum moved);
(d') ``tuner-init-focus``: the same campaign with the offered focus set (each parameter's
    commented line with ``focus:`` in place of its own), as a user who trusts the earlier
    runs sets it.

The prior is a TPE campaign (its own seed) on a *related variant* of the task: another
data subsample and a model one size smaller (fewer iterations / boosting rounds, a looser
solver tolerance), recorded into a real MLflow SQLite store as one finished run per trial
(params + the metric), the way a campaign or ``LineageCallback`` leaves them.

Four analytic tasks cost nothing to evaluate, so 20 and more seeds run in minutes:
``quad-carry`` (the prior's optimum sits a fifth of a decade away, its loss a full unit
lower: the order carries over, the level does not), ``quad-mislead`` (the prior's optimum
moved by 2.5 decades on the two parameters that matter, as after another data size or a
shifted regularisation: the prior leads away from the new optimum), ``quad-decoy`` (the
prior's best region is still good here but not the best: a deeper bowl lies two decades
away where the prior scored poorly) and ``quad-constant`` (the prior's loss does not depend
on the activation; the task's does, by 0.6). Two scikit-learn tasks
train an SVC on the digits over log ranges of ``C`` and ``gamma`` and the kernel:
``digits-svc`` (the prior trained on 40% of the data with another split: it carries over)
and ``digits-svc-moved`` (the prior also saw the raw pixel values, 0 to 16, where the task
scales them to [0, 1]: its best ``gamma`` sits 2.4 decades lower, so it misleads).

The goals (``_goals``, written into the result file): on every task the default warm start
and ``tuner init`` need at most cold TPE's median trials and leave no more seeds short of the
target than cold TPE does; where the prior carries over, at most half of cold TPE's median
trials. The 90% bootstrap interval of cold TPE's median over the seeds is written beside it,
as the noise a median of that many seeds carries, and for each warm-started arm a paired
test over the seeds (each seed's trials-to-target, arm against cold TPE; a one-sided
Wilcoxon signed-rank test of "the arm needs more"): its p-value says whether an arm above
cold's median is slower beyond noise (below 0.05) or within it. Beside it, the same for the
seeds short of the target (an exact McNemar test of "the arm leaves more seeds short", over
the seeds where one of the two reached it and the other did not), and the 90% bootstrap
interval of the arm's median trials over cold TPE's (seeds resampled as pairs): its upper end
is how much slower than cold the arm may be, given this many seeds.

The target of a task is the cold campaign's median best after ``--budget`` trials over the
seeds; every arm runs ``--horizon`` trials (twice the budget by default, so that cold TPE's
median sits well below the cap and an arm that needs more than cold can show it), and a
method's trials-to-target for a seed is the first new trial whose best-so-far reaches the
target (imported trials are not counted: they cost nothing now). Printed: the median over
seeds (``>N`` when most seeds never got there within the horizon), the ratio to cold TPE, and
how many seeds reached the target. Trials are evaluated in this process (scikit-learn on data that ships
with it); the search spaces, the warm start and the derivation are the tuner's.

    python benchmarks/bench_outcome.py                # 3 tasks x 10 seeds, 30 trials (minutes)
    python benchmarks/bench_outcome.py --quick        # 1 task x 2 seeds (seconds)
    python benchmarks/bench_outcome.py --json out.json
    python benchmarks/bench_outcome.py --jobs 2       # two (task, seed) pairs at a time
    python benchmarks/bench_outcome.py --tasks quad-carry quad-mislead --seeds 20
    python benchmarks/bench_outcome.py --tasks quad-carry quad-mislead quad-decoy \
        quad-constant digits-svc digits-svc-moved --seeds 200 --json seeds.json \
        --methods tpe-cold tpe-warm tpe-warm-rank tuner-init --jobs 2  # the result file
    python benchmarks/bench_outcome.py --from-json seeds.json  # its result file, again
    python benchmarks/bench_outcome.py --tasks ...the six above... --seeds 40 \
        --methods tpe-cold tuner-init-focus --jobs 2 --result-name outcome_focus
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")

METHODS = (
    "random",
    "tpe-cold",
    "tpe-warm",
    "tpe-warm-value",
    "tpe-warm-rank",
    "tuner-init",
    "tuner-init-focus",
)


@dataclass(frozen=True)
class Task:
    name: str
    metric: str
    goal: Literal["minimize", "maximize"]
    #: The campaign's ``parameters:`` section.
    space: dict[str, dict[str, Any]]
    #: ``evaluate(params, variant, seed) -> metric``; ``variant``: the prior's related task.
    evaluate: Callable[[dict[str, Any], bool], float]
    #: Whether the prior leads away from the new optimum (the goals differ: `_goals`).
    misleads: bool = False


def _split(loader: Any, train: float, seed: int, stratify: bool = True) -> tuple[Any, ...]:
    from sklearn.model_selection import train_test_split

    X, y = loader(return_X_y=True)
    return tuple(
        train_test_split(
            X, y, train_size=train, random_state=seed, stratify=y if stratify else None
        )
    )


_DATA: dict[tuple[str, bool], tuple[Any, ...]] = {}


def _data(name: str, variant: bool) -> tuple[Any, ...]:
    """The task's split; the variant's comes from another subsample of the same data."""
    key = (name, variant)
    if key not in _DATA:
        from sklearn import datasets
        from sklearn.preprocessing import StandardScaler

        seed = 1 if variant else 0
        if name == "digits-mlp":
            Xa, Xb, ya, yb = _split(datasets.load_digits, 500, seed)
            Xa, Xb = Xa / 16.0, Xb / 16.0
        elif name == "cancer-gbm":
            Xa, Xb, ya, yb = _split(datasets.load_breast_cancer, 350, seed)
        else:
            Xa, Xb, ya, yb = _split(datasets.load_diabetes, 300, seed, stratify=False)
            scaler = StandardScaler().fit(Xa)
            Xa, Xb = scaler.transform(Xa), scaler.transform(Xb)
        _DATA[key] = (Xa, Xb, ya, yb)
    return _DATA[key]


def _digits_mlp(p: dict[str, Any], variant: bool) -> float:
    from sklearn.neural_network import MLPClassifier

    Xa, Xb, ya, yb = _data("digits-mlp", variant)
    model = MLPClassifier(
        (int(p["hidden"]),),
        activation=p["activation"],
        learning_rate_init=p["lr"],
        alpha=p["alpha"],
        batch_size=int(p["batch_size"]),
        max_iter=5 if variant else 8,  # the prior's model trains for fewer epochs
        random_state=0,
    ).fit(Xa, ya)
    return float(model.score(Xb, yb))


def _cancer_gbm(p: dict[str, Any], variant: bool) -> float:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import log_loss

    Xa, Xb, ya, yb = _data("cancer-gbm", variant)
    model = HistGradientBoostingClassifier(
        learning_rate=p["learning_rate"],
        max_leaf_nodes=int(p["max_leaf_nodes"]),
        min_samples_leaf=int(p["min_samples_leaf"]),
        l2_regularization=p["l2_regularization"],
        max_iter=20 if variant else 30,  # the prior's model: fewer boosting rounds
        early_stopping=False,
        random_state=0,
    ).fit(Xa, ya)
    return float(log_loss(yb, model.predict_proba(Xb)))


def _diabetes_svr(p: dict[str, Any], variant: bool) -> float:
    from sklearn.metrics import mean_squared_error
    from sklearn.svm import SVR

    Xa, Xb, ya, yb = _data("diabetes-svr", variant)
    model = SVR(
        C=p["C"],
        gamma=p["gamma"],
        epsilon=p["epsilon"],
        shrinking=bool(p["shrinking"]),
        tol=1e-2 if variant else 1e-3,  # the prior's solver stops earlier
    ).fit(Xa, ya)
    return float(mean_squared_error(yb, model.predict(Xb)) ** 0.5)


_DIGITS: dict[tuple[bool, bool], tuple[Any, ...]] = {}


def _digits_svc(moved: bool) -> Callable[[dict[str, Any], bool], float]:
    """An SVC on scikit-learn's digits, pixels scaled to [0, 1], trained on half the data.
    The earlier runs trained on 40% of it with another split; with ``moved`` they also saw
    the raw pixel values (0 to 16), which moves the best ``gamma`` (it multiplies squared
    distances) by 2.4 decades."""

    def evaluate(p: dict[str, Any], variant: bool) -> float:
        from sklearn.svm import SVC

        key = (variant, moved and variant)
        if key not in _DIGITS:
            from sklearn import datasets

            scale = 1.0 if key[1] else 16.0
            X, y = datasets.load_digits(return_X_y=True)
            _DIGITS[key] = _split(
                lambda return_X_y: (X / scale, y), 0.4 if variant else 0.5, int(variant)
            )
        Xa, Xb, ya, yb = _DIGITS[key]
        model = SVC(C=p["C"], gamma=p["gamma"], kernel=p["kernel"], max_iter=20_000)
        return float(model.fit(Xa, ya).score(Xb, yb))

    return evaluate


_SVC_SPACE: dict[str, dict[str, Any]] = {
    "C": {"type": "float", "low": 1.0e-3, "high": 1.0e4, "log": True},
    "gamma": {"type": "float", "low": 1.0e-6, "high": 10.0, "log": True},
    "kernel": {"type": "categorical", "choices": ["rbf", "poly", "sigmoid"]},
}


def _quad(moved: float, level: float) -> Callable[[dict[str, Any], bool], float]:
    """A loss over log-scaled parameters; the variant's optimum moved by ``moved`` decades on
    ``lr`` and ``wd`` (opposite ways) and its loss ``level`` lower."""

    def evaluate(p: dict[str, Any], variant: bool) -> float:
        c_lr, c_wd = (-2.0 + moved, -4.0 - moved) if variant else (-2.0, -4.0)
        loss = (
            (math.log10(p["lr"]) - c_lr) ** 2
            + 0.5 * (math.log10(p["wd"]) - c_wd) ** 2
            + 0.05 * (math.log2(p["width"]) - 6.0) ** 2
            + (0.0 if p["act"] == "gelu" else 0.2)
        )
        return loss - level if variant else loss

    return evaluate


def _quad_decoy(p: dict[str, Any], variant: bool) -> float:
    """The prior's optimum is still good here but not best: the task keeps the prior's bowl,
    half a unit above its own best, and adds a second, deeper one 2 decades away on ``lr`` and
    2 on ``wd``, where the prior scored poorly (a loss of 6 and more)."""
    shared = 0.05 * (math.log2(p["width"]) - 6.0) ** 2 + (0.0 if p["act"] == "gelu" else 0.2)
    lr, wd = math.log10(p["lr"]), math.log10(p["wd"])
    old = (lr + 2.0) ** 2 + 0.5 * (wd + 4.0) ** 2
    if variant:
        return old + shared
    return min(old + 0.5, (lr + 4.0) ** 2 + 0.5 * (wd + 6.0) ** 2) + shared


def _quad_constant(p: dict[str, Any], variant: bool) -> float:
    """A parameter the prior found not to matter decides here: the prior's loss does not
    depend on ``act`` at all, the task's is 0.6 higher for any activation but ``tanh``; the
    rest (the optimum of ``lr``, ``wd`` and ``width``) carries over."""
    loss = (
        (math.log10(p["lr"]) + 2.0) ** 2
        + 0.5 * (math.log10(p["wd"]) + 4.0) ** 2
        + 0.05 * (math.log2(p["width"]) - 6.0) ** 2
    )
    return loss if variant else loss + (0.0 if p["act"] == "tanh" else 0.6)


_QUAD_SPACE: dict[str, dict[str, Any]] = {
    "lr": {"type": "float", "low": 1.0e-5, "high": 1.0, "log": True},
    "wd": {"type": "float", "low": 1.0e-8, "high": 1.0e-1, "log": True},
    "width": {"type": "int", "low": 8, "high": 512, "log": True},
    "act": {"type": "categorical", "choices": ["relu", "gelu", "tanh"]},
}

TASKS = {
    "quad-carry": Task("quad-carry", "loss", "minimize", _QUAD_SPACE, _quad(0.2, 1.0)),
    "quad-mislead": Task(
        "quad-mislead", "loss", "minimize", _QUAD_SPACE, _quad(2.5, 0.0), misleads=True
    ),
    "quad-decoy": Task("quad-decoy", "loss", "minimize", _QUAD_SPACE, _quad_decoy, misleads=True),
    "quad-constant": Task(
        "quad-constant", "loss", "minimize", _QUAD_SPACE, _quad_constant, misleads=True
    ),
    "digits-svc": Task(
        "digits-svc", "val_accuracy", "maximize", _SVC_SPACE, _digits_svc(moved=False)
    ),
    "digits-svc-moved": Task(
        "digits-svc-moved",
        "val_accuracy",
        "maximize",
        _SVC_SPACE,
        _digits_svc(moved=True),
        misleads=True,
    ),
    "diabetes-svr": Task(
        "diabetes-svr",
        "val_rmse",
        "minimize",
        {
            "C": {"type": "float", "low": 0.01, "high": 1.0e4, "log": True},
            "gamma": {"type": "float", "low": 1.0e-4, "high": 10.0, "log": True},
            "epsilon": {"type": "float", "low": 0.01, "high": 20.0, "log": True},
            "shrinking": {"type": "categorical", "choices": [True, False]},
        },
        _diabetes_svr,
    ),
    "cancer-gbm": Task(
        "cancer-gbm",
        "val_logloss",
        "minimize",
        {
            "learning_rate": {"type": "float", "low": 1.0e-3, "high": 1.0, "log": True},
            "max_leaf_nodes": {"type": "int", "low": 2, "high": 64, "log": True},
            "min_samples_leaf": {"type": "int", "low": 1, "high": 100, "log": True},
            "l2_regularization": {"type": "float", "low": 1.0e-6, "high": 10.0, "log": True},
        },
        _cancer_gbm,
    ),
    "digits-mlp": Task(
        "digits-mlp",
        "val_accuracy",
        "maximize",
        {
            "lr": {"type": "float", "low": 1.0e-4, "high": 1.0, "log": True},
            "alpha": {"type": "float", "low": 1.0e-6, "high": 1.0, "log": True},
            "hidden": {"type": "int", "low": 8, "high": 256, "log": True},
            "batch_size": {"type": "categorical", "choices": [16, 32, 64, 128, 256]},
            "activation": {"type": "categorical", "choices": ["relu", "tanh", "logistic"]},
        },
        _digits_mlp,
    ),
}


# ----- the tuner's machinery --------------------------------------------------------------------


def _config(task: Task, work: Path, name: str, extra: dict[str, Any]) -> Any:
    import yaml

    from tuner.config import load_config

    data = {
        "name": name,
        "command": [sys.executable, "-c", "pass"],
        "reads_tuner_params": True,
        "target": {"metric": task.metric, "goal": task.goal},
        "parameters": task.space,
        "budget": {"trials": 1},
        **extra,
    }
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_config(path)


_EMPTY: list[Path] = []


def _empty_store(folder: Path) -> Path:
    """An empty MLflow SQLite store in ``folder``, created once per process: every
    (task, seed) starts from a copy of it rather than running MLflow's schema migrations
    again."""
    if not _EMPTY:
        from mlflow.tracking import MlflowClient

        path = folder / f"empty-{os.getpid()}.db"
        MlflowClient(f"sqlite:///{path}").search_experiments()
        _EMPTY.append(path)
    return _EMPTY[0]


def _record_prior(task: Task, seed: int, trials: int, uri: str) -> str:
    """A TPE campaign on the variant task, recorded as one finished MLflow run per trial."""
    import optuna
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    experiment = f"{task.name}-prior-{seed}"
    client = MlflowClient(uri)
    exp_id = client.create_experiment(experiment)
    study = optuna.create_study(
        direction=task.goal, sampler=optuna.samplers.TPESampler(seed=10_000 + seed)
    )
    for _ in range(trials):
        trial = study.ask()
        params = {n: _suggest(trial, n, s) for n, s in task.space.items()}
        value = task.evaluate(params, True)
        study.tell(trial, value)
        run = client.create_run(exp_id).info.run_id
        now = int(time.time() * 1000)
        client.log_batch(
            run,
            metrics=[Metric(task.metric, value, now, 0)],
            params=[Param(k, str(v)) for k, v in params.items()],
        )
        client.set_terminated(run)
    return experiment


def _suggest(trial: Any, name: str, spec: dict[str, Any]) -> Any:
    if spec["type"] == "categorical":
        return trial.suggest_categorical(name, spec["choices"])
    if spec["type"] == "int":
        return trial.suggest_int(name, spec["low"], spec["high"], log=spec.get("log", False))
    return trial.suggest_float(name, spec["low"], spec["high"], log=spec.get("log", False))


def _campaign(
    task: Task, method: str, seed: int, budget: int, config: Any, fixed: dict[str, Any]
) -> list[float]:
    """Best-so-far after each new trial."""
    import optuna

    from tuner.history import HistoryContext, apply, load_history
    from tuner.search import sample_params
    from tuner.search._registry import wrap_sampler

    sampler: optuna.samplers.BaseSampler = (
        optuna.samplers.RandomSampler(seed=seed)
        if method == "random"
        else wrap_sampler(
            optuna.samplers.TPESampler(seed=seed),
            name=config.sampler.name,
            parameters=config.parameters,
            warm_start=config.warm_start,
        )
    )
    study = optuna.create_study(direction=task.goal, sampler=sampler)
    if config.warm_start is not None:
        apply(study, load_history(HistoryContext.of(config)))
    sign = 1.0 if task.goal == "minimize" else -1.0
    best, curve = math.inf, []
    for _ in range(budget):
        trial = study.ask()
        params = {**fixed, **sample_params(trial, config.parameters)}
        value = task.evaluate(params, False)
        study.tell(trial, value)
        best = min(best, sign * value)
        curve.append(sign * best)
    return curve


def _with_offered_focus(text: str, path: Path) -> Any:
    """The campaign ``tuner init`` wrote (``text``) with the focus it offers set, as a user
    who trusts the earlier runs sets it: each parameter's commented line with ``focus:`` in
    place of its own line, the parameters in the same order."""
    import re

    import yaml

    from tuner.config import load_config

    data = yaml.safe_load(text)
    for line in text.splitlines():
        offered = re.fullmatch(r"  # (\S+): (\{.*focus: .*\})", line)
        if offered and offered.group(1) in data["parameters"]:
            data["parameters"][offered.group(1)] = yaml.safe_load(offered.group(2))
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_config(path)


def run_seed(
    task: Task,
    seed: int,
    budget: int,
    prior_trials: int,
    work: Path,
    horizon: int | None = None,
    methods: tuple[str, ...] = METHODS,
) -> dict[str, Any]:
    """The arms of ``methods`` (default every one) on one seed: best-so-far curves over
    ``horizon`` trials (default ``budget``); the derived campaign is written for ``budget``
    trials (its ``enqueue_best``)."""
    from tuner.history import PLACEHOLDER_PROGRAM, derive_campaign, render_campaign

    db = work / "mlflow.db"
    shutil.copyfile(_empty_store(work.parent), db)
    uri = f"sqlite:///{db}"
    experiment = _record_prior(task, seed, prior_trials, uri)
    warm = {"warm_start": {"from": [{"experiment": experiment}]}, "lineage": {"tracking_uri": uri}}
    plain = _config(task, work, f"{task.name}-s{seed}", {"lineage": {"tracking_uri": uri}})
    warmed = _config(task, work, f"{task.name}-warm-s{seed}", warm)
    by_rank = {**warm, "warm_start": {**warm["warm_start"], "compare": "rank"}}
    by_value = {**warm, "warm_start": {**warm["warm_start"], "compare": "value"}}
    warmed_value = _config(task, work, f"{task.name}-warm-value-s{seed}", by_value)
    warmed_rank = _config(task, work, f"{task.name}-warm-rank-s{seed}", by_rank)
    derived = derive_campaign(experiment, target=task.metric, goal=task.goal, tracking_uri=uri)
    path = work / f"{task.name}-init-s{seed}.yaml"
    # The prior runs recorded no command: put one in place of tuner init's placeholder, as a
    # user does before running it (the campaign's trials are evaluated here, not launched).
    text = render_campaign(derived, trials=budget).replace(PLACEHOLDER_PROGRAM, sys.executable)
    path.write_text(text)
    from tuner.config import load_config

    init = load_config(path)
    focused = _with_offered_focus(text, work / f"{task.name}-init-focus-s{seed}.yaml")
    fixed = {p.name: p.best for p in derived.fixed if p.in_best}
    n = horizon or budget
    arms = {
        "random": (plain, {}),
        "tpe-cold": (plain, {}),
        "tpe-warm": (warmed, {}),
        "tpe-warm-value": (warmed_value, {}),
        "tpe-warm-rank": (warmed_rank, {}),
        "tuner-init": (init, fixed),
        "tuner-init-focus": (focused, fixed),
    }
    curves = {m: _campaign(task, m, seed, n, *arms[m]) for m in METHODS if m in methods}
    return {
        "curves": curves,
        "tuned": [p.name for p in derived.tuned],
        "fixed": fixed,
        "ranges": {p.name: p.spec for p in derived.tuned},
        "importance": {
            p.name: [round(p.importance.importance, 3), *(round(c, 3) for c in p.importance.ci)]
            for p in derived.parameters
            if p.importance is not None
        },
    }


def _reached(curve: list[float], target: float, goal: str) -> int | None:
    for i, best in enumerate(curve, start=1):
        if (best <= target) if goal == "minimize" else (best >= target):
            return i
    return None


def summarize(
    task: Task, seeds: list[dict[str, Any]], budget: int, horizon: int | None = None
) -> dict[str, Any]:
    """The target is cold TPE's median best after ``budget`` trials; every arm's trials to
    reach it are counted over ``horizon`` trials (a seed that never does counts as
    ``horizon + 1``), so cold TPE's median sits below the cap and an arm can need more."""
    horizon = horizon or budget
    finals = [s["curves"]["tpe-cold"][budget - 1] for s in seeds]
    target = statistics.median(finals)
    out: dict[str, Any] = {"task": task.name, "metric": task.metric, "goal": task.goal}
    out["target"] = target
    out["methods"] = {}
    for method in (m for m in METHODS if m in seeds[0]["curves"]):
        hits = [_reached(s["curves"][method], target, task.goal) for s in seeds]
        counted = [h if h is not None else horizon + 1 for h in hits]
        out["methods"][method] = {
            "trials_to_target": hits,
            "counted": counted,
            "median": statistics.median(counted),
            "p90": sorted(counted)[max(0, math.ceil(0.9 * len(counted)) - 1)],
            "reached": sum(h is not None for h in hits),
            "never_reached": sum(h is None for h in hits),
            "median_final_best": statistics.median(s["curves"][method][-1] for s in seeds),
        }
    cold = out["methods"]["tpe-cold"]["median"]
    cold_counts = [
        h if h is not None else horizon + 1 for h in out["methods"]["tpe-cold"]["trials_to_target"]
    ]
    out["cold_median_interval"] = _median_interval(cold_counts)
    for m in out["methods"].values():
        m["ratio_to_cold"] = m["median"] / cold
    out["tuned"] = [s["tuned"] for s in seeds]
    out["fixed"] = [sorted(s["fixed"]) for s in seeds]
    out["ranges"] = seeds[0]["ranges"]
    out["importance"] = [s["importance"] for s in seeds]  # [importance, ci low, ci high]
    out["seeds"] = len(seeds)
    return out


def _show(n: float, budget: int) -> str:
    return f">{budget}" if n > budget else f"{n:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 task, 2 seeds, 12 trials")
    parser.add_argument("--tasks", nargs="*", choices=sorted(TASKS), default=None)
    parser.add_argument("--seeds", type=int, default=None, help="default 10 (quick: 2)")
    parser.add_argument(
        "--budget", type=int, default=None, help="trials that set the target: cold TPE's (30)"
    )
    parser.add_argument(
        "--horizon",
        type=int,
        default=None,
        help="trials every arm runs, to count trials to the target (default 2 x budget)",
    )
    parser.add_argument("--prior", type=int, default=None, help="prior campaign trials (24)")
    parser.add_argument(
        "--jobs", type=int, default=1, help="processes, one (task, seed) each (default 1)"
    )
    parser.add_argument(
        "--methods",
        nargs="*",
        choices=METHODS,
        default=None,
        help="the arms to run (default every one; tpe-cold is always run: it sets the target)",
    )
    parser.add_argument("--notes", default=None, help="a note for the result file")
    parser.add_argument(
        "--result-name", default="outcome", help="the result file's name (default outcome)"
    )
    parser.add_argument(
        "--json", default=None, help="also write the results here (rewritten after each seed)"
    )
    parser.add_argument(
        "--from-json",
        default=None,
        metavar="PATH",
        help="run nothing: write the result file from the per-seed results an earlier run "
        "saved with --json (give that run's --budget, --horizon and --prior if not the defaults)",
    )
    args = parser.parse_args(argv)
    if args.from_json:
        return _from_json(args)
    warnings.filterwarnings("ignore")
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    tasks = args.tasks or (
        ["diabetes-svr"] if args.quick else ["diabetes-svr", "cancer-gbm", "digits-mlp"]
    )
    n_seeds = args.seeds or (2 if args.quick else 10)
    budget = args.budget or (12 if args.quick else 30)
    horizon = args.horizon or 2 * budget
    prior = args.prior or (16 if args.quick else 24)
    methods = tuple(m for m in METHODS if m in (args.methods or METHODS) or m == "tpe-cold")
    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    pairs = [(name, s) for name in tasks for s in range(n_seeds)]
    done: dict[tuple[str, int], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-outcome-") as tmp:
        jobs = [
            (name, s, budget, prior, str(Path(tmp) / f"{name}-{s}"), horizon, methods)
            for name, s in pairs
        ]
        if args.jobs > 1:  # one process per (task, seed): each has its own MLflow store
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
                futures = {pool.submit(_run_job, *job): job[:2] for job in jobs}
                for future in as_completed(futures):
                    done[futures[future]] = future.result()
                    _progress(*futures[future], done, tasks, n_seeds, budget, horizon, args.json)
        else:
            for job in jobs:
                done[job[:2]] = _run_job(*job)
                _progress(*job[:2], done, tasks, n_seeds, budget, horizon, args.json)
    for name in tasks:
        summary = summarize(TASKS[name], [done[name, s] for s in range(n_seeds)], budget, horizon)
        results.append(summary)
        _print(summary, budget, horizon, n_seeds)
    took = time.perf_counter() - started
    print(
        f"{len(tasks)} task(s) x {n_seeds} seeds, budget {budget}, horizon {horizon}, "
        f"prior {prior}: {took:.0f}s"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    if not args.quick:
        _write(args.result_name, results, budget, horizon, prior, args.notes)
    return 0


def _write(
    name: str,
    summaries: list[dict[str, Any]],
    budget: int,
    horizon: int,
    prior: int,
    notes: str | None,
) -> None:
    """The result file: per task its figures (`_figures`), and the run's arguments."""
    from _results import write_result

    write_result(
        name,
        {s["task"]: _figures(s) for s in summaries},
        store="sqlite",
        params={
            "tasks": [s["task"] for s in summaries],
            "seeds": summaries[0]["seeds"],
            "budget": budget,
            "horizon": horizon,
            "prior": prior,
            "methods": list(summaries[0]["methods"]),
        },
        notes=notes,
    )


#: The goals: on every task a warm start needs at most cold TPE's median trials, and leaves
#: no more seeds short of the target than cold TPE; where the prior carries over, it needs
#: at most this share of cold TPE's median trials.
CARRY_GOAL = 0.5
MISLEAD_GOAL = 1.0


def _goals(summary: dict[str, Any], misleads: bool) -> dict[str, Any]:
    """Per warm-started arm (``tpe-warm``: the default ``compare: auto``; ``tuner-init``):
    the goal, whether it is met, by how much it is missed, and whether the median stays
    within cold TPE's noise (the upper end of the bootstrap interval of its median)."""
    methods = summary["methods"]
    cold_never = methods["tpe-cold"]["never_reached"]
    noise_high = summary["cold_median_interval"][1]
    out: dict[str, Any] = {}
    for arm in (a for a in ("tpe-warm", "tuner-init") if a in methods):
        m = methods[arm]
        limit = MISLEAD_GOAL if misleads else CARRY_GOAL
        ratio_over = max(0.0, m["ratio_to_cold"] - limit)
        never_over = max(0, m["never_reached"] - cold_never)
        out[arm] = {
            "goal": f"ratio <= {limit:g} and never <= cold's",
            "met": ratio_over == 0 and never_over == 0,
            "ratio_over_goal": round(ratio_over, 3),
            "more_never_than_cold": never_over,
            "median_within_cold_noise": m["median"] <= noise_high,
            "paired_p_slower": _paired_p_slower(m["counted"], methods["tpe-cold"]["counted"]),
            "paired_p_more_short": _paired_p_more_short(
                m["trials_to_target"], methods["tpe-cold"]["trials_to_target"]
            ),
            "ratio_interval": _ratio_interval(m["counted"], methods["tpe-cold"]["counted"]),
        }
    return out


def _ratio_interval(arm: list[int], cold: list[int]) -> list[float]:
    """The 90% bootstrap interval of the arm's median trials over cold TPE's, resampling
    seeds as pairs (a seed's two campaigns share its prior and its random state): how much
    slower, or faster, than cold the arm may be, given this many seeds."""
    low, high = _bootstrap_90(
        list(zip(arm, cold, strict=True)),
        lambda pairs: (
            statistics.median(a for a, _ in pairs) / statistics.median(c for _, c in pairs)
        ),
    )
    return [round(low, 3), round(high, 3)]


def _paired_p_more_short(arm: list[int | None], cold: list[int | None]) -> float:
    """The one-sided p-value that ``arm`` leaves more seeds short of the target than cold
    TPE, seed by seed: an exact McNemar test, i.e. a binomial test over the seeds where one
    of the two reached the target and the other did not (seeds both reached, or both
    missed, carry no evidence either way). 1.0 when no seed differs."""
    from scipy.stats import binomtest

    only_arm_short = sum(a is None and c is not None for a, c in zip(arm, cold, strict=True))
    only_cold_short = sum(c is None and a is not None for a, c in zip(arm, cold, strict=True))
    if only_arm_short + only_cold_short == 0:
        return 1.0
    test = binomtest(only_arm_short, only_arm_short + only_cold_short, 0.5, alternative="greater")
    return round(float(test.pvalue), 4)


def _paired_p_slower(arm: list[int], cold: list[int]) -> float:
    """The one-sided p-value that ``arm`` needs more trials than cold TPE, seed by seed (a
    Wilcoxon signed-rank test of the differences; seeds where both need the same number
    carry no evidence either way, as the test's default drops them). 1.0 when every seed
    ties."""
    from scipy.stats import wilcoxon

    if all(a == c for a, c in zip(arm, cold, strict=True)):
        return 1.0
    return round(float(wilcoxon(arm, cold, alternative="greater").pvalue), 4)


def _median_interval(counts: list[int]) -> list[float]:
    """The 90% bootstrap interval of the median of ``counts`` (resampled seeds)."""
    return _bootstrap_90(counts, statistics.median)


def _bootstrap_90(items: list[Any], statistic: Callable[[list[Any]], float]) -> list[float]:
    """The 90% bootstrap interval of ``statistic`` over ``items`` resampled (2000 rounds,
    a fixed random state, so a result file is the same from the same seeds)."""
    rounds = 2000
    rng = random.Random(0)
    values = sorted(statistic(rng.choices(items, k=len(items))) for _ in range(rounds))
    return [values[int(0.05 * rounds)], values[int(0.95 * rounds) - 1]]


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    """One task's figures for the result file: the target, per arm the median, the 90th
    percentile, the ratio to cold TPE and the seeds that never reached the target, and the
    goals (`_goals`, with the paired test's p-value)."""
    keys = ("median", "p90", "ratio_to_cold", "never_reached")
    misleads = TASKS[summary["task"]].misleads
    return {
        "target": summary["target"],
        "seeds": summary["seeds"],
        "prior": "misleads" if misleads else "carries over",
        "cold_median_interval": summary["cold_median_interval"],
        **{m: {k: v[k] for k in keys} for m, v in summary["methods"].items()},
        "goals": _goals(summary, misleads),
    }


def _from_json(args: argparse.Namespace) -> int:
    """Writes the result file from an earlier run's ``--json`` file (the per-seed trials to
    target of every task and arm), with the goals and tests as this script computes them now;
    the result's ``notes`` say where the figures came from."""
    summaries = json.loads(Path(args.from_json).read_text())
    n_seeds = {s["seeds"] for s in summaries}
    if len(n_seeds) != 1:
        print(f"{args.from_json}: the tasks ran different numbers of seeds: {n_seeds}")
        return 2
    budget = args.budget or 30
    horizon = args.horizon or 2 * budget
    for summary in summaries:
        _print(summary, budget, horizon, summary["seeds"])
    source = f"summarised from {Path(args.from_json).name}, the --json file of the run"
    notes = f"{source}; {args.notes}" if args.notes else source
    _write(args.result_name, summaries, budget, horizon, args.prior or 24, notes)
    return 0


def _run_job(
    name: str,
    seed: int,
    budget: int,
    prior: int,
    work: str,
    horizon: int,
    methods: tuple[str, ...] = METHODS,
) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    Path(work).mkdir(parents=True)
    return run_seed(TASKS[name], seed, budget, prior, Path(work), horizon, methods)


def _progress(
    name: str,
    seed: int,
    done: dict[tuple[str, int], dict[str, Any]],
    tasks: list[str],
    n_seeds: int,
    budget: int,
    horizon: int,
    out: str | None,
) -> None:
    finals = {m: f"{c[-1]:.4g}" for m, c in done[name, seed]["curves"].items()}
    print(f"{name} seed {seed}: final best {finals}", file=sys.stderr, flush=True)
    if out:  # partial results survive an interrupted run
        partial = []
        for task in tasks:
            seeds = [done[task, s] for s in range(n_seeds) if (task, s) in done]
            if seeds:
                partial.append(summarize(TASKS[task], seeds, budget, horizon))
        Path(out).write_text(json.dumps(partial, indent=2, default=str))


def _print(summary: dict[str, Any], budget: int, horizon: int, n_seeds: int) -> None:
    goal = summary["goal"]
    print(
        f"\n{summary['task']}: target {summary['metric']} {'<=' if goal == 'minimize' else '>='} "
        f"{summary['target']:.4g} (cold TPE's median final best after {budget} trials)"
    )
    print(f"  {'method':<14} {'median trials':>13} {'p90':>5} {'ratio to cold':>13} {'reached':>8}")
    for method, m in summary["methods"].items():
        print(
            f"  {method:<14} {_show(m['median'], horizon):>13} {_show(m['p90'], horizon):>5} "
            f"{m['ratio_to_cold']:>13.2f} {m['reached']:>5}/{n_seeds}"
        )
    tuned = {", ".join(t) for t in summary["tuned"]}
    print(f"  tuner init tuned: {' | '.join(sorted(tuned))}")
    fixed = Counter(n for names in summary["fixed"] for n in names)
    shown = ", ".join(f"{n} ({k}/{n_seeds})" for n, k in fixed.most_common())
    print(f"  tuner init fixed: {shown or 'nothing'}")


if __name__ == "__main__":
    sys.exit(main())
