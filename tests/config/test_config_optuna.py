"""Samplers and pruners built from configs, the gp extra, and conditional sampling."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import pytest
from _campaign_base import base_config

from tuner import ConfigError
from tuner.config import CampaignConfig, load_config, parse_config
from tuner.search import _registry, distributions, sample_params, sampling_order, validate_params
from tuner.search._registry import SamplerPlan, make_pruner, make_sampler, search_space

optuna.logging.set_verbosity(optuna.logging.WARNING)

NUMERIC = {
    "x": {"type": "float", "low": -1.0, "high": 1.0},
    "y": {"type": "float", "low": 1e-3, "high": 1.0, "log": True},
    "n": {"type": "int", "low": 1, "high": 8},
}
GRID = {
    "x": {"type": "float", "low": 0.0, "high": 1.0, "step": 0.5},
    "n": {"type": "int", "low": 1, "high": 2},
    "opt": {"type": "categorical", "choices": ["a", "b"]},
}


def _config(parameters: dict[str, Any] | None = None, **sections: Any) -> CampaignConfig:
    data = base_config()
    data["command"] = ["python", "train.py"]
    if parameters is not None:
        data["parameters"] = parameters
    data.update(sections)
    return parse_config(data)


SAMPLER_CASES = [
    ("tpe", None, {"n_startup_trials": 3, "multivariate": True}),
    ("gp", NUMERIC, {"n_startup_trials": 10}),
    ("random", None, {}),
    ("cmaes", NUMERIC, {"n_startup_trials": 1, "popsize": 4, "independent_sampler": "tpe"}),
    ("grid", GRID, {}),
    ("qmc", NUMERIC, {"qmc_type": "sobol"}),
    ("nsga2", None, {"population_size": 4, "crossover": "sbx"}),
]


@pytest.mark.parametrize(
    ("name", "params", "options"), SAMPLER_CASES, ids=[c[0] for c in SAMPLER_CASES]
)
def test_every_sampler_constructs_seeded_and_samples(
    name: str, params: dict[str, Any] | None, options: dict[str, Any]
) -> None:
    config = _config(params, sampler={"name": name, "seed": 7, "options": options})
    cls = _registry.SAMPLERS[name]()

    def run() -> list[dict[str, Any]]:
        sampler = make_sampler(SamplerPlan.of(config))
        assert isinstance(sampler, cls)
        study = optuna.create_study(sampler=sampler, direction="minimize")
        out = []
        for i in range(4):
            trial = study.ask()
            values = sample_params(trial, config.parameters)
            study.tell(trial, float(i))
            out.append(values)
        return out

    first, second = run(), run()
    assert first == second, "sampler.seed must make proposals reproducible"
    for values in first:
        validate_params(config.parameters, values)


def test_seed_reaches_the_sampler() -> None:
    a = make_sampler(SamplerPlan.of(_config(sampler={"name": "random", "seed": 1})))
    b = make_sampler(SamplerPlan.of(_config(sampler={"name": "random", "seed": 2})))
    dist = optuna.distributions.FloatDistribution(0, 1)
    study = optuna.create_study()
    trial = optuna.trial.FrozenTrial  # noqa: F841 - only the RNG matters here
    sa = a.sample_independent(study, study.ask(), "x", dist)
    sb = b.sample_independent(study, study.ask(), "x", dist)
    assert sa != sb


def test_tpe_uses_constant_liar_when_trials_run_in_parallel() -> None:
    config = _config(resources={"parallel": 2})
    assert make_sampler(SamplerPlan.of(config))._constant_liar is True  # type: ignore[attr-defined]
    off = _config(resources={"parallel": 2}, sampler={"options": {"constant_liar": False}})
    assert make_sampler(SamplerPlan.of(off))._constant_liar is False  # type: ignore[attr-defined]


def test_grid_search_space_from_steps_and_explicit_values() -> None:
    params = {**GRID, "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True}}
    config = _config(
        params, sampler={"name": "grid", "options": {"search_space": {"lr": [1e-3, 1e-2]}}}
    )
    assert search_space(config.sampler, config.parameters, error=config.error) == {
        "x": [0.0, 0.5, 1.0],
        "n": [1, 2],
        "opt": ["a", "b"],
        "lr": [1e-3, 1e-2],
    }
    sampler = make_sampler(SamplerPlan.of(config))
    assert isinstance(sampler, optuna.samplers.GridSampler)
    study = optuna.create_study(sampler=sampler)
    seen = set()
    for _ in range(24):
        assert not sampler.is_exhausted(study)
        trial = study.ask()
        seen.add(tuple(sorted(sample_params(trial, config.parameters).items())))
        study.tell(trial, 0.0)  # Optuna's GridSampler would raise here at the last point
    assert len(seen) == 24, "the grid is visited without repeats"
    assert sampler.is_exhausted(study)


@pytest.mark.parametrize(
    ("name", "options", "cls"),
    [
        ("median", {"n_startup_trials": 2, "n_warmup_steps": 3}, optuna.pruners.MedianPruner),
        ("percentile", {}, optuna.pruners.PercentilePruner),
        ("percentile", {"percentile": 10.0}, optuna.pruners.PercentilePruner),
        (
            "hyperband",
            {"min_resource": 1, "max_resource": 27, "reduction_factor": 3},
            optuna.pruners.HyperbandPruner,
        ),
        (
            "successive_halving",
            {"min_resource": 3, "reduction_factor": 3},
            optuna.pruners.SuccessiveHalvingPruner,
        ),
        ("none", {}, optuna.pruners.NopPruner),
    ],
)
def test_every_pruner_constructs(name: str, options: dict[str, Any], cls: type) -> None:
    config = _config(pruner={"name": name, "options": options})
    pruner = make_pruner(config.pruner, error=config.error)
    assert isinstance(pruner, cls)
    if name == "percentile":
        assert pruner._percentile == options.get("percentile", 25.0)  # type: ignore[attr-defined]


def test_gp_without_torch_injected_import(
    write_config: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = base_config()
    data["sampler"] = {"name": "gp"}
    write_config(data)
    config = load_config("c.yaml")  # torch is installed here

    def no_torch(name: str) -> Any:
        if name == "torch":
            raise ModuleNotFoundError("No module named 'torch'")
        return importlib.import_module(name)

    monkeypatch.setattr(_registry, "_import_module", no_torch)
    expected = (
        "c.yaml: sampler.name: gp needs PyTorch; install the 'gp' extra: "
        "pip install 'lineage-tuner[gp]'."
    )
    with pytest.raises(ConfigError) as info:
        make_sampler(SamplerPlan.of(config))
    assert str(info.value) == expected and info.value.exit_code == 2
    with pytest.raises(ConfigError) as info:
        load_config("c.yaml")
    assert str(info.value) == expected


def test_conditional_parameters_are_absent_unless_their_condition_holds() -> None:
    config = _config()
    assert sampling_order(config.parameters) == ["lr", "optimizer", "momentum", "layers"]
    study = optuna.create_study(
        sampler=make_sampler(SamplerPlan.of(_config(sampler={"name": "random", "seed": 0})))
    )
    seen = {"sgd": 0, "adam": 0}
    for _ in range(30):
        trial = study.ask()
        values = sample_params(trial, config.parameters)
        seen[values["optimizer"]] += 1
        assert ("momentum" in values) == (values["optimizer"] == "sgd")
        assert list(values) == [n for n in sampling_order(config.parameters) if n in values]
        assert set(trial.params) == set(values)
        study.tell(trial, values["lr"])
    assert seen["sgd"] and seen["adam"]


def test_parents_are_sampled_first_whatever_the_declaration_order() -> None:
    params = {
        "dampening": {"type": "float", "low": 0.0, "high": 0.5, "when": {"nesterov": False}},
        "nesterov": {"type": "categorical", "choices": [True, False], "when": {"opt": "sgd"}},
        "opt": {"type": "categorical", "choices": ["sgd", "adam"]},
    }
    config = _config(params)
    assert sampling_order(config.parameters) == ["opt", "nesterov", "dampening"]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    kinds = set()
    for _ in range(40):
        trial = study.ask()
        values = sample_params(trial, config.parameters)
        kinds.add(tuple(values))
        if values["opt"] == "adam":
            assert values == {"opt": "adam"}
        elif values["nesterov"]:
            assert "dampening" not in values
        else:
            assert 0.0 <= values["dampening"] <= 0.5
        study.tell(trial, 0.0)
    assert kinds == {("opt",), ("opt", "nesterov"), ("opt", "nesterov", "dampening")}


def test_fixed_trials_and_distributions() -> None:
    config = _config()
    fixed = {"lr": 0.01, "optimizer": "adam", "layers": 3}
    assert validate_params(config.parameters, fixed) == fixed
    dists = distributions(config.parameters, fixed)
    assert list(dists) == ["lr", "optimizer", "layers"]
    assert dists["lr"] == optuna.distributions.FloatDistribution(1e-5, 0.1, log=True)
    study = optuna.create_study()
    study.enqueue_trial(fixed)
    trial = study.ask()
    assert sample_params(trial, config.parameters) == fixed
    frozen = optuna.trial.create_trial(params=fixed, distributions=dists, value=0.5)
    study.add_trial(frozen)
    for bad, message in [
        ({**fixed, "momentum": 0.9}, "its `when` does not hold"),
        ({"lr": 0.01, "optimizer": "sgd", "layers": 3}, "'momentum' is missing"),
        ({**fixed, "layers": 9}, "outside"),
        ({**fixed, "optimizer": "rmsprop"}, "not in its distribution"),
        ({**fixed, "depth": 2}, "not declared"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate_params(config.parameters, bad)


def test_multivariate_tpe_groups_conditional_parameters() -> None:
    options = {"multivariate": True, "n_startup_trials": 2}
    config = _config(sampler={"name": "tpe", "seed": 0, "options": options})
    sampler = make_sampler(SamplerPlan.of(config))
    assert sampler._group is True  # type: ignore[attr-defined]
    study = optuna.create_study(sampler=sampler)
    for i in range(6):
        trial = study.ask()
        values = sample_params(trial, config.parameters)
        assert ("momentum" in values) == (values["optimizer"] == "sgd")
        study.tell(trial, float(i))
    unconditional = _config(
        {"x": {"type": "float", "low": 0, "high": 1}}, sampler={"options": options}
    )
    assert make_sampler(SamplerPlan.of(unconditional))._group is False  # type: ignore[attr-defined]
