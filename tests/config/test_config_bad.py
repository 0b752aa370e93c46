"""Bad campaign configs: each gives one line naming the file, the key, the rule and the value,
and exit code 2 (``tuner validate``); nothing is created in either store."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _campaign_base import base_config

from tuner.cli import main

DEL = object()


def _apply(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        if value is DEL:
            del node[last]
        else:
            node[last] = value
    return data


# (id, changes to the base config, the message after "c.yaml: "). A message ending in "." must
# match exactly; otherwise it is the start of the message.
CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "log-low-zero",
        {"parameters.lr.low": 0},
        "parameters.lr.low must be > 0 when log: true, got 0.",
    ),
    (
        "high-below-low",
        {"parameters.layers.high": 0},
        "parameters.layers.high must be > low (1), got 0.",
    ),
    (
        "high-equals-low",
        {"parameters.lr.high": 1e-5},
        "parameters.lr.high must be > low (1e-05), got 1e-05.",
    ),
    (
        "top-typo",
        {"sampelr": {"name": "tpe"}},
        "unknown key 'sampelr' (did you mean 'sampler'?).",
    ),
    (
        "nested-typo",
        {"budget.trails": 3},
        "unknown key 'budget.trails'; known keys: trials, steps, device_hours, timeout, max_failures.",
    ),
    (
        "param-key-typo",
        {"parameters.lr.logg": True},
        "unknown key 'parameters.lr.logg'; known keys: type, low, high, log, step, choices, when, focus.",
    ),
    ("missing-name", {"name": DEL}, "name is required."),
    ("missing-budget", {"budget": DEL}, "budget is required."),
    ("missing-goal", {"target.goal": DEL}, "target.goal is required."),
    (
        "bad-goal",
        {"target.goal": "minimise"},
        "target.goal must be one of 'minimize' or 'maximize' (did you mean 'minimize'?), got 'minimise'.",
    ),
    ("target-not-mapping", {"target": "loss"}, "target must be a mapping, got 'loss'."),
    (
        "bad-type",
        {"parameters.lr.type": "double"},
        "parameters.lr.type must be one of 'float', 'int' or 'categorical', got 'double'.",
    ),
    (
        "log-and-step",
        {"parameters.lr.step": 0.01},
        "parameters.lr.step cannot be combined with log: true for type: float, got 0.01.",
    ),
    (
        "int-fractional",
        {"parameters.layers.low": 1.5},
        "parameters.layers.low must be an integer for type: int, got 1.5.",
    ),
    (
        "int-step-off-grid",
        {"parameters.layers.step": 2},
        "parameters.layers.high must be low + a whole number of steps (1 + k * 2), got 4.",
    ),
    (
        "step-negative",
        {"parameters.layers.step": -1},
        "parameters.layers.step must be > 0, got -1.",
    ),
    (
        "low-not-number",
        {"parameters.lr.low": "tiny"},
        "parameters.lr.low must be a number, got 'tiny'.",
    ),
    (
        "float-missing-high",
        {"parameters.lr.high": DEL},
        "parameters.lr.high is required for type: float.",
    ),
    (
        "choices-empty",
        {"parameters.optimizer.choices": []},
        "parameters.optimizer.choices must list at least one value, got [].",
    ),
    (
        "choices-not-scalar",
        {"parameters.optimizer.choices": ["sgd", {"name": "adam"}]},
        'parameters.optimizer.choices[1] must be a string, number, boolean or null, got {"name": "adam"}.',
    ),
    (
        "choices-repeat",
        {"parameters.optimizer.choices": ["sgd", "adam", "sgd"]},
        "parameters.optimizer.choices[2] repeats an earlier choice, got 'sgd'.",
    ),
    (
        "choices-missing",
        {"parameters.optimizer.choices": DEL},
        "parameters.optimizer.choices is required for type: categorical.",
    ),
    (
        "categorical-low",
        {"parameters.optimizer.low": 0},
        "parameters.optimizer.low is not allowed for type: categorical, got 0.",
    ),
    (
        "float-choices",
        {"parameters.lr.choices": [0.1, 0.01]},
        "parameters.lr.choices is only for type: categorical, not float, got [0.1, 0.01].",
    ),
    (
        "bad-param-name",
        {"parameters.learning rate": {"type": "int", "low": 1, "high": 2}},
        "parameters.learning rate is not a valid parameter name",
    ),
    (
        "parameters-empty",
        {"parameters": {}},
        "parameters must declare at least one parameter, got {}.",
    ),
    ("parameters-list", {"parameters": ["lr"]}, 'parameters must be a mapping, got ["lr"].'),
    (
        "when-undeclared",
        {"parameters.momentum.when": {"optimiser": "sgd"}},
        "parameters.momentum.when.optimiser must name a declared parameter (did you mean 'optimizer'?).",
    ),
    (
        "when-not-categorical",
        {"parameters.momentum.when": {"layers": 2}},
        "parameters.momentum.when.layers must name a categorical parameter (layers is int), got 'layers'.",
    ),
    (
        "when-bad-value",
        {"parameters.momentum.when": {"optimizer": "rmsprop"}},
        'parameters.momentum.when.optimizer must be one of optimizer\'s choices ["sgd", "adam"], got \'rmsprop\'.',
    ),
    (
        "when-bad-list-value",
        {"parameters.momentum.when": {"optimizer": ["sgd", "nadam"]}},
        'parameters.momentum.when.optimizer must be one of optimizer\'s choices ["sgd", "adam"], got \'nadam\'.',
    ),
    (
        "when-self",
        {"parameters.optimizer.when": {"optimizer": "sgd"}},
        "parameters.optimizer.when.optimizer cannot make a parameter depend on itself, got 'optimizer'.",
    ),
    (
        "when-cycle",
        {
            "parameters.a": {"type": "categorical", "choices": [1, 2], "when": {"b": "x"}},
            "parameters.b": {"type": "categorical", "choices": ["x", "y"], "when": {"a": 1}},
        },
        "parameters.a.when forms a cycle: a -> b -> a.",
    ),
    ("trials-zero", {"budget.trials": 0}, "budget.trials must be >= 1, got 0."),
    ("trials-text", {"budget.trials": "many"}, "budget.trials must be an integer, got 'many'."),
    ("max-failures-zero", {"budget.max_failures": 0}, "budget.max_failures must be >= 1, got 0."),
    (
        "budget-no-limit",
        {"budget": {"max_failures": 3}},
        "budget must set at least one of trials, steps, device_hours, timeout.",
    ),
    ("steps-zero", {"budget.steps": 0}, "budget.steps must be >= 1, got 0."),
    (
        "steps-several-objectives",
        {
            "budget.steps": 100,
            "objectives": [{"metric": "latency", "goal": "minimize"}],
            "pruner": {"name": "none"},
        },
        "budget.steps needs a single objective (steps are counted from the target's reports, "
        "which a campaign of several objectives does not pass to Optuna), got 100.",
    ),
    ("device-hours-zero", {"budget.device_hours": 0}, "budget.device_hours must be > 0.0, got 0."),
    (
        "bad-duration",
        {"budget.timeout": "2 hours"},
        "budget.timeout must be seconds or a duration like '90s', '30m', '2h', got '2 hours'.",
    ),
    ("negative-timeout", {"trial.timeout": -5}, "trial.timeout must be > 0 seconds, got -5."),
    ("retries-negative", {"trial.retries": -1}, "trial.retries must be >= 0, got -1."),
    (
        "sampler-name",
        {"sampler.name": "bayes"},
        "sampler.name must be one of 'tpe', 'gp', 'random', 'cmaes', 'grid', 'qmc' or 'nsga2', got 'bayes'.",
    ),
    ("sampler-seed-text", {"sampler.seed": "abc"}, "sampler.seed must be an integer, got 'abc'."),
    (
        "sampler-option-typo",
        {"sampler.options": {"n_startup_trial": 5}},
        "unknown key 'sampler.options.n_startup_trial' (TPESampler has no such option; did you mean 'sampler.options.n_startup_trials'?).",
    ),
    (
        "sampler-options-seed",
        {"sampler.options": {"seed": 1}},
        "sampler.options.seed belongs in sampler.seed, not sampler.options, got 1.",
    ),
    (
        "sampler-option-value",
        {"sampler": {"name": "qmc", "options": {"qmc_type": "bogus"}}},
        'sampler.options are invalid for QMCSampler (The `qmc_type=\'bogus\'` is invalid. Choose either `halton` or `sobol`), got {"qmc_type": "bogus"}.',
    ),
    (
        "nsga2-population",
        {"sampler": {"name": "nsga2", "options": {"population_size": 1}}},
        'sampler.options are invalid for NSGAIISampler (`population_size` must be greater than or equal to 2), got {"population_size": 1}.',
    ),
    (
        "grid-continuous",
        {"sampler.name": "grid", "parameters.momentum": DEL},
        "parameters.lr needs a step (or choices) for sampler grid, or list its values in sampler.options.search_space.",
    ),
    (
        "grid-conditional",
        {
            "sampler.name": "grid",
            "sampler.options": {"search_space": {"lr": [0.1], "momentum": [0.9]}},
        },
        "parameters.momentum.when cannot be used with sampler grid",
    ),
    (
        "grid-space-unknown",
        {"sampler.name": "grid", "sampler.options": {"search_space": {"lrr": [0.1]}}},
        "sampler.options.search_space.lrr must name a declared parameter (did you mean 'lr'?), got 'lrr'.",
    ),
    (
        "cmaes-categorical",
        {"sampler.name": "cmaes"},
        "sampler.name cmaes cannot sample categorical parameters (parameters.optimizer); use tpe or gp, got 'cmaes'.",
    ),
    (
        "multi-cmaes",
        {"objectives": [{"metric": "latency", "goal": "minimize"}], "sampler.name": "cmaes"},
        "sampler.name must be one of nsga2, tpe, gp, random, qmc, grid with objectives (cmaes optimizes one objective only), got 'cmaes'.",
    ),
    (
        "multi-pruner",
        {"objectives": [{"metric": "latency", "goal": "minimize"}], "pruner": {"name": "median"}},
        "pruner.name must be none with objectives (Optuna cannot prune multi-objective trials), got 'median'.",
    ),
    (
        "objective-repeats",
        {"objectives": [{"metric": "val_loss", "goal": "maximize"}]},
        "objectives[0].metric repeats a metric already optimized, got 'val_loss'.",
    ),
    (
        "pruner-name",
        {"pruner.name": "asha"},
        "pruner.name must be one of 'median', 'hyperband', 'successive_halving', 'percentile' or 'none', got 'asha'.",
    ),
    (
        "pruner-option-typo",
        {"pruner": {"name": "percentile", "options": {"percentil": 30}}},
        "unknown key 'pruner.options.percentil' (PercentilePruner has no such option; did you mean 'pruner.options.percentile'?).",
    ),
    (
        "pruner-option-value",
        {"pruner": {"name": "percentile", "options": {"percentile": 130}}},
        "pruner.options are invalid for PercentilePruner",
    ),
    (
        "too-many-slots",
        {"resources": {"devices": [0, 1], "parallel": 3}},
        "resources.parallel times per_trial (1) must be <= the 2 devices listed, got 3.",
    ),
    (
        "bad-kind",
        {"resources.kind": "tpu"},
        "resources.kind must be one of 'auto', 'cpu', 'gpu' or 'npu', got 'tpu'.",
    ),
    (
        "devices-repeat",
        {"resources.devices": [0, 0]},
        "resources.devices[1] repeats an earlier device id, got 0.",
    ),
    (
        "devices-word",
        {"resources.devices": "all"},
        "resources.devices must be auto or a list of device ids, got 'all'.",
    ),
    (
        "per-trial-zero",
        {"resources.per_trial": 0},
        "resources.per_trial must be a whole number of devices (1, 2, ...), a fraction 1/k of "
        "one device (0.5, 0.25, ...) or auto, got 0.",
    ),
    (
        "regex-invalid",
        {"metrics": {"loss": {"pattern": "loss is ([0-9.]+"}}},
        "metrics.loss.pattern is not a valid regular expression (missing ), unterminated subpattern at position 8), got 'loss is ([0-9.]+'.",
    ),
    (
        "regex-two-groups",
        {"metrics": {"loss": {"pattern": r"step: (\d+), loss is ([0-9.]+)"}}},
        "metrics.loss.pattern must have exactly one group, or a named group 'value' (it has 2 groups)",
    ),
    (
        "regex-no-group",
        {"metrics": {"loss": {"pattern": "loss is [0-9.]+"}}},
        "metrics.loss.pattern must have exactly one group, or a named group 'value' (it has 0 groups)",
    ),
    (
        "placeholder-unknown",
        {"command": ["python", "train.py", "--lr", "{lrr}"]},
        "command[3] has placeholder {lrr}, which names no parameter (did you mean 'lr'?)",
    ),
    (
        "placeholder-conditional",
        {"command": "python train.py --momentum={momentum}"},
        "command[2] has placeholder {momentum} for a conditional parameter absent from some trials; write {momentum?} to leave this argument out when it is inactive, got '--momentum={momentum}'.",
    ),
    ("command-empty", {"command": ""}, "command must name a program to run, got ''."),
    (
        "command-quote",
        {"command": "python 'train.py"},
        'command cannot be split into arguments (No closing quotation), got "python \'train.py".',
    ),
    (
        "reserved-param",
        {"parameters.trial": {"type": "int", "low": 1, "high": 3}},
        "parameters.trial is a reserved placeholder name",
    ),
    ("env-list", {"env": ["A=1"]}, 'env must be a mapping, got ["A=1"].'),
    ("env-bool", {"env": {"DEBUG": True}}, "env.DEBUG must be a string, got true."),
    (
        "address-local",
        {"executor": {"name": "local", "address": "ray://head:10001"}},
        "executor.address is only for name: ray, got 'ray://head:10001'.",
    ),
    (
        "storage-path",
        {"storage": "optuna.db"},
        "storage must be an Optuna storage URL such as sqlite:///optuna.db or postgresql://user@host/db, got 'optuna.db'.",
    ),
    ("workdir-missing", {"workdir": "no/such/dir"}, "workdir must be an existing directory, got '"),
    (
        "env-var-unset",
        {"name": "run-${TUNER_TEST_UNSET_VAR}"},
        "name uses ${TUNER_TEST_UNSET_VAR}, which is not set (write ${TUNER_TEST_UNSET_VAR:-default}), got 'run-${TUNER_TEST_UNSET_VAR}'.",
    ),
    ("name-empty", {"name": ""}, "name must not be empty, got ''."),
    (
        "analysis-method",
        {"analysis.method": "svm"},
        "analysis.method must be one of auto, forest, gp, got 'svm'.",
    ),
    (
        "early-stop-word",
        {"diagnosis.early_stop": "maybe"},
        "diagnosis.early_stop must be true or false, got 'maybe'.",
    ),
    (
        "param-name-number",
        {"parameters.layers": DEL, "parameters.7": {"type": "int", "low": 1, "high": 2}},
        "parameters.7 is not a valid parameter name (letters, digits, _ . -; not starting with a digit), got '7'.",
    ),
    ("trials-bool", {"budget.trials": True}, "budget.trials must be an integer, got true."),
    (
        "choices-equal-under-eq",
        {"parameters.optimizer.choices": [True, 1]},
        "parameters.optimizer.choices[1] repeats an earlier choice, got 1.",
    ),
    (
        "metrics-not-mapping",
        {"metrics": {"loss": "loss is ([0-9.]+)"}},
        "metrics.loss must be a mapping, got 'loss is ([0-9.]+)'.",
    ),
    (
        "objectives-mapping",
        {"objectives": {"metric": "x", "goal": "minimize"}},
        'objectives must be a list, got {"metric": "x", "goal": "minimize"}.',
    ),
    (
        "devices-float",
        {"resources.devices": [0, 1.5]},
        "resources.devices[1] must be a device id (an integer or a name), got 1.5.",
    ),
    (
        "nan-bound",
        {"parameters.lr.low": float("nan")},
        "parameters.lr.low must be a finite number, got nan.",
    ),
    (
        "diagnosis-check",
        {"diagnosis.checks": ["divergense"]},
        "diagnosis.checks[0] must be a check id (did you mean 'divergence'?)",
    ),
    (
        "cmaes-one-dim",
        {
            "sampler.name": "cmaes",
            "command": "python t.py",
            "parameters": {"x": {"type": "float", "low": 0, "high": 1}},
        },
        "sampler.name cmaes needs at least two unconditional numeric parameters; use tpe or gp, got 'cmaes'.",
    ),
    (
        "option-object",
        {"sampler.options": {"gamma": 0.25}},
        "sampler.options.gamma takes a Python object in TPESampler (Callable[[int], int] | None), which a config cannot give, got 0.25.",
    ),
    (
        "option-type",
        {"sampler.options": {"n_startup_trials": "ten"}},
        "sampler.options.n_startup_trials must be int for TPESampler, got 'ten'.",
    ),
    (
        "option-bool-not-int",
        {"pruner.options": {"n_warmup_steps": True}},
        "pruner.options.n_warmup_steps must be int for MedianPruner, got true.",
    ),
    (
        "option-named",
        {"sampler": {"name": "nsga2", "options": {"crossover": "onepoint"}}},
        "sampler.options.crossover must be one of uniform, blxalpha, sbx, vsbx, undx, spx, got 'onepoint'.",
    ),
    (
        "grid-value-outside",
        {
            "sampler.name": "grid",
            "parameters.momentum": DEL,
            "command": "python t.py",
            "sampler.options": {"search_space": {"lr": [0.01, 0.5]}},
        },
        "sampler.options.search_space.lr[1] must be within the parameter's [1e-05, 0.1], got 0.5.",
    ),
    (
        "sqlite-two-slashes",
        {"storage": "sqlite://optuna.db"},
        "storage must be sqlite:///relative/file.db or sqlite:////absolute/file.db (three slashes, then the path), got 'sqlite://optuna.db'.",
    ),
    (
        "tracking-bare-db",
        {"lineage": {"tracking_uri": "runs/mlflow.db"}},
        "lineage.tracking_uri is a bare path, which MLflow reads as a file-store directory; for a SQLite file write sqlite:///runs/mlflow.db, got 'runs/mlflow.db'.",
    ),
    # 14.8: a misspelled key is named with its did-you-mean before the "is required" it causes.
    (
        "top-typo-required",
        {"parameters": DEL, "paramters": {"lr": {"type": "float", "low": 0.1, "high": 1}}},
        "unknown key 'paramters' (did you mean 'parameters'?).",
    ),
    (
        "nested-typo-required",
        {"budget": {"trails": 3}},
        "unknown key 'budget.trails' (did you mean 'budget.trials'?).",
    ),
    (
        "objective-typo-required",
        {"target": {"metirc": "val_loss", "goal": "minimize"}},
        "unknown key 'target.metirc' (did you mean 'target.metric'?).",
    ),
    (
        "param-typo-required",
        {"parameters.lr": {"type": "float", "lw": 0.1, "high": 1}},
        "unknown key 'parameters.lr.lw' (did you mean 'parameters.lr.low'?).",
    ),
    (
        "scheduler-unknown-key",
        {"scheduler": {"name": "asha", "max_t": 9}},
        "unknown key 'scheduler.max_t'; known keys: name, mode, reduction_factor, min_resource, max_resource, brackets, model, model_points.",
    ),
    (
        "scheduler-nested-typo",
        {
            "scheduler": {
                "name": "pbt",
                "population": 2,
                "interval": 1,
                "perturb": {"lr": {"factr": [0.8]}},
            }
        },
        "unknown key 'scheduler.perturb.lr.factr' (did you mean 'scheduler.perturb.lr.factor'?).",
    ),
    (
        "metric-pattern-typo-required",
        {"metrics": {"loss": {"patern": "loss=(\\S+)"}}},
        "unknown key 'metrics.loss.patern' (did you mean 'metrics.loss.pattern'?).",
    ),
    (
        "objectives-typo-required",
        {"objectives": [{"metric": "latency", "gaol": "minimize"}], "pruner": {"name": "none"}},
        "unknown key 'objectives[0].gaol' (did you mean 'objectives[0].goal'?).",
    ),
    (
        "typo-beside-the-right-key",
        {"budget": {"trials": 3, "trails": 4}},
        "unknown key 'budget.trails'; known keys: trials, steps, device_hours, timeout, max_failures.",
    ),
    (
        "several-unknown-keys",
        {"budget": {"trails": 3}, "resources.gpus": 2},
        "unknown key 'budget.trails' (did you mean 'budget.trials'?); also unknown: 'resources.gpus'.",
    ),
    (
        "unknown-key-no-close-match",
        {"resources.gpus": 2},
        "unknown key 'resources.gpus'; known keys: kind, devices, per_trial, parallel, memory_params.",
    ),
    (
        "sampler-name-close",
        {"sampler.name": "tpee"},
        "sampler.name must be one of 'tpe', 'gp', 'random', 'cmaes', 'grid', 'qmc' or 'nsga2' (did you mean 'tpe'?), got 'tpee'.",
    ),
    (
        "goal-close",
        {"target.goal": "maximise"},
        "target.goal must be one of 'minimize' or 'maximize' (did you mean 'maximize'?), got 'maximise'.",
    ),
    (
        "grace-null",
        {"trial.grace_period": None},
        "trial.grace_period must be seconds or a duration like '90s', '30m', '2h', got null.",
    ),
    # 14.9: store URLs whose scheme cannot be opened, secrets masked.
    (
        "storage-mongodb",
        {"storage": "mongodb://x/y"},
        "storage must start with sqlite:///, postgresql:// or postgresql+psycopg://, got 'mongodb://x/y'.",
    ),
    (
        "storage-scheme-password-masked",
        {"storage": "mysql://tuner:hunter2@db/optuna"},
        "storage must start with sqlite:///, postgresql:// or postgresql+psycopg://, got 'mysql://tuner:****@db/optuna'.",
    ),
    (
        "storage-postgres-alias",
        {"storage": "postgres://u@h/d"},
        "storage must start with sqlite:///, postgresql:// or postgresql+psycopg:// (SQLAlchemy spells it postgresql://), got 'postgres://u@h/d'.",
    ),
    (
        "tracking-mongodb",
        {"lineage": {"tracking_uri": "mongodb://admin:s3cret@x/y"}},
        "lineage.tracking_uri must be a URI MLflow can open: a path, or one starting with sqlite:, postgresql:, mysql:, mssql:, http:, https:, file:, databricks:, databricks-uc:, uc:, got 'mongodb://admin:****@x/y'.",
    ),
    (
        "tracking-driver-on-http",
        {"lineage": {"tracking_uri": "http+foo://host:5000"}},
        "lineage.tracking_uri must be a URI MLflow can open",
    ),
    # 14.10: conditional parameters on the command line.
    (
        "placeholder-optional-unknown",
        {"command": "python train.py --m={momentun?}"},
        "command[2] has placeholder {momentun?}, which names no parameter (did you mean 'momentum'?)",
    ),
    (
        "checkpoint-store",
        {"checkpoint": {"store": "s3"}},
        "checkpoint.store must be one of 'local', 'shared' or 'mlflow', got 's3'.",
    ),
    (
        "checkpoint-shared-no-path",
        {"checkpoint": {"store": "shared"}},
        "checkpoint.path must be set when store is shared.",
    ),
    (
        "checkpoint-every-zero",
        {"checkpoint": {"every": 0}},
        "checkpoint.every must be >= 1, got 0.",
    ),
    (
        "checkpoint-every-word",
        {"checkpoint": {"every": "often"}},
        "checkpoint.every must be an integer, got 'often'.",
    ),
    (
        "reads-params-word",
        {"reads_tuner_params": "sometimes"},
        "reads_tuner_params must be true or false, got 'sometimes'.",
    ),
    # Values pydantic would otherwise read as something else: YAML true as exit code 1, an
    # exit code no process ends with, a module name or "yes" as preload: true.
    (
        "retry-on-true",
        {"trial.retries": 1, "trial.retry_on": [True]},
        "trial.retry_on[0] must be an exit code 1-255, a signal name (SIGTERM, ...) or "
        "timeout, got true.",
    ),
    (
        "retry-on-code-out-of-range",
        {"trial.retries": 1, "trial.retry_on": [3, 999]},
        "trial.retry_on[1] must be an exit code 1-255, a signal name (SIGTERM, ...) or "
        "timeout, got 999.",
    ),
    (
        "retry-on-negative-code",
        {"trial.retries": 1, "trial.retry_on": [-9]},
        "trial.retry_on[0] must be an exit code 1-255",
    ),
    (
        "preload-module-name",
        {"trial.preload": "torch"},
        "trial.preload must be true, false or a list of module names, got 'torch'.",
    ),
    (
        "preload-yes",
        {"trial.preload": "yes"},
        "trial.preload must be true, false or a list of module names, got 'yes'.",
    ),
    (
        "heartbeat-fraction",
        {"heartbeat": {"interval": "2.5s"}},
        "heartbeat.interval must be whole seconds, such as 5, '5s' or '1m', got '2.5s'.",
    ),
]


@pytest.mark.parametrize(("changes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_in_process(
    changes: dict[str, Any],
    expected: str,
    write_config: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(_apply(base_config(), changes))
    code = main(["validate", "c.yaml"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    line = err.rstrip("\n")
    prefix = "tuner validate: error: c.yaml: "
    assert line.startswith(prefix), line
    message = line[len(prefix) :]
    if expected.endswith("."):
        assert message == expected
    else:
        assert message.startswith(expected), message
        assert message.endswith(".")
    assert not list(Path.cwd().glob("*.db")), "validation must not create a store"
    assert not Path("mlruns").exists()


def test_at_least_thirty_distinct_cases() -> None:
    keys = {c[2].split(" ")[0] for c in CASES}
    assert len(CASES) >= 30 and len(keys) >= 30


def test_json_format_reports_the_error(
    write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    write_config(_apply(base_config(), {"parameters.lr.low": 0}))
    assert main(["validate", "c.yaml", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "valid": False,
        "error": "c.yaml: parameters.lr.low must be > 0 when log: true, got 0.",
    }
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "name: x\n  command: [a\n",
            "c.yaml: line 2, column 10: invalid YAML (mapping values are not allowed here).",
        ),
        ("- name: x\n", 'c.yaml: must be a mapping of keys at the top level, got [{"name": "x"}].'),
        (
            "",
            "c.yaml: is empty; a campaign needs at least name, command, target, parameters and budget.",
        ),
        ("name: a\nname: b\n", "c.yaml: line 2: key 'name' appears twice (first on line 1)."),
        (
            'name: "a\ncommand: x\n',
            "c.yaml: line 3, column 1: invalid YAML (while scanning a quoted scalar from line 1, "
            "column 7, found unexpected end of stream).",
        ),
    ],
    ids=["yaml-syntax", "top-level-list", "empty", "duplicate-key", "unclosed-quote"],
)
def test_bad_file(
    text: str, expected: str, write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(text)
    assert main(["validate", "c.yaml"]) == 2
    assert capsys.readouterr().err == f"tuner validate: error: {expected}\n"


def test_missing_file_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "nope.yaml"]) == 2
    assert capsys.readouterr().err == "tuner validate: error: nope.yaml: no such file.\n"
    (tmp_path / "d.yaml").mkdir()
    assert main(["validate", "d.yaml"]) == 2
    assert "d.yaml: is a directory, not a config file." in capsys.readouterr().err


def test_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.yaml").write_bytes(b"name: \xff\xfe\n")
    assert main(["validate", "c.yaml"]) == 2
    assert "c.yaml: is not UTF-8 text" in capsys.readouterr().err


SUBPROCESS_CASES = [
    c
    for c in CASES
    if c[0]
    in (
        "log-low-zero",
        "top-typo",
        "when-bad-value",
        "too-many-slots",
        "top-typo-required",
        "storage-mongodb",
        "tracking-mongodb",
    )
]


@pytest.mark.parametrize(
    ("changes", "expected"), [c[1:] for c in SUBPROCESS_CASES], ids=[c[0] for c in SUBPROCESS_CASES]
)
def test_bad_config_through_the_cli(
    changes: dict[str, Any], expected: str, write_config: Callable[..., Path], python: str
) -> None:
    path = write_config(_apply(base_config(), changes))
    proc = subprocess.run(
        [python, "-m", "tuner.cli", "validate", str(path.name)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == f"tuner validate: error: c.yaml: {expected}\n"
    assert "Traceback" not in proc.stderr
    assert not list(path.parent.glob("*.db"))


def test_gp_without_torch_names_the_extra(write_config: Callable[..., Path], python: str) -> None:
    data = base_config()
    data["sampler"] = {"name": "gp", "seed": 1}
    path = write_config(data)
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from tuner.cli import main\n"
        f"sys.exit(main(['validate', {path.name!r}]))\n"
    )
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (
        "tuner validate: error: c.yaml: sampler.name: gp needs PyTorch; install the 'gp' extra: "
        "pip install 'lineage-tuner[gp]'.\n"
    )


def test_heartbeat_durations_take_units_as_other_durations(
    write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from tuner.config import load_config

    path = write_config({**base_config(), "heartbeat": {"interval": "5s", "grace": "1m"}})
    config = load_config(path)
    assert (config.heartbeat.interval, config.heartbeat.grace) == (5, 60)


def test_legal_but_idle_settings_are_one_warning_each(
    write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data = {**base_config(), "trial": {"retry_on": ["SIGKILL"], "preload": ["nosuchmod_q", "json"]}}
    write_config(data)
    assert main(["validate", "c.yaml"]) == 0
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if "warning:" in line and "trial." in line]
    assert len(warnings) == 2, err
    assert warnings[0].endswith(
        "c.yaml: trial.retry_on is set but trial.retries is 0, so no failure is retried; "
        "set trial.retries to the re-runs a trial may have."
    )
    assert warnings[1].endswith("they are not preloaded: nosuchmod_q.")
