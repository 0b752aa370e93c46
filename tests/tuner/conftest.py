"""Campaigns with real subprocess trials, a real MLflow SQLite store and Optuna on SQLite."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuner.config import CampaignConfig, load_config

BASE: dict[str, Any] = {
    "name": "t",
    "command": [sys.executable, "trial.py", "--x", "{x}"],
    "target": {"metric": "loss", "goal": "minimize"},
    "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
    "budget": {"trials": 3, "max_failures": 20},
    "trial": {"grace_period": 2},
    "sampler": {"name": "random", "seed": 7},
    "pruner": {"name": "none"},
    "resources": {"kind": "cpu", "parallel": 1},
    "diagnosis": {"early_stop": False},
}

#: A trial that reports ``loss = (x - 0.3)^2`` for a few steps through the trial API.
API_SCRIPT = """
import argparse, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); a = ap.parse_args()
for step in range(3):
    trial.report(step, loss=(a.x - 0.3) ** 2 + 0.1 / (step + 1), acc=step / 3)
"""


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "parameters":
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _maker(tmp_path: Path, tracking_uri: str) -> Callable[..., CampaignConfig]:
    def make(script: str = API_SCRIPT, **overrides: Any) -> CampaignConfig:
        (tmp_path / "trial.py").write_text(textwrap.dedent(script))
        data = _merge(BASE, {"lineage": {"tracking_uri": tracking_uri}, **overrides})
        path = tmp_path / "campaign.yaml"
        path.write_text(yaml.safe_dump(data))
        return load_config(path)

    return make


@pytest.fixture
def campaign(tmp_path: Path, sqlite_uri: str) -> Callable[..., CampaignConfig]:
    """``campaign(script, **overrides)``: write the trial script and the YAML, load it."""
    return _maker(tmp_path, sqlite_uri)


@pytest.fixture
def bare_campaign(tmp_path: Path) -> Callable[..., CampaignConfig]:
    """As ``campaign``, for controllers given a fake recorder (no MLflow store is made)."""
    return _maker(tmp_path, f"sqlite:///{tmp_path / 'unused-mlflow.db'}")


@pytest.fixture
def run_campaign() -> Callable[..., Any]:
    from tuner.campaign import Controller

    def run(config: CampaignConfig, **kwargs: Any) -> Any:
        kwargs.setdefault("importance", False)
        kwargs.setdefault("handle_signals", False)
        return Controller(config, **kwargs).run()

    return run


def mlflow_runs(uri: str, experiment: str = "t") -> list[Any]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    return list(client.search_runs([exp.experiment_id], max_results=1000))


def trials_of(config: CampaignConfig) -> list[Any]:
    import optuna

    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    return list(study.get_trials(deepcopy=False))


def tuner_cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``cli("status", path, ...)``: the tuner CLI in this process -> (exit code, out, err)."""
    from tuner.cli import main

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(list(args))
        out, err = capsys.readouterr()
        return rc, out, err

    return call


def offered_focus(text: str, name: str) -> dict[str, Any]:
    """Parameter ``name`` as `tuner init` offers it with its focus set: the line commented out
    above the parameter's own in the campaign ``text``."""
    (line,) = [ln for ln in text.splitlines() if ln.startswith(f"  # {name}: {{")]
    return dict(yaml.safe_load(line.removeprefix("  # "))[name])
