"""Shared devices in whole campaigns: real subprocess trials, a real MLflow SQLite store and
Optuna on SQLite, a fake CUDA driver (`_fake_gpu`; no GPU is used or claimed). The records
say where each trial ran, beside how many, and its peak memory; the campaign's run gives its
device-hours and each device's occupancy; a trial that runs out of memory beside another is
retried alone without spending the failure budget or a retry."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from _fake_gpu import STATE, install

from tuner.search import FAIL_ATTR

HERE = str(Path(__file__).parent)

#: Takes 100 MiB and ends once the other trial holds its share too (both run at once) and the
#: driver was asked what they hold.
PAIR = f"""
import sys, time
sys.path.insert(0, {HERE!r})
from _fake_gpu import allocate, held_by_others, wait_measured
from tuner import trial
allocate(100)
while held_by_others() < 100:
    time.sleep(0.02)
wait_measured()
trial.report(0, loss=1.0)
"""

#: The first trial on the device takes 300 MiB and ends once a later one ran out of memory;
#: a later one beside it takes 800 (1100 > 1000: out of memory); alone it takes 300.
GREEDY = f"""
import os, sys, time
from pathlib import Path
sys.path.insert(0, {HERE!r})
from _fake_gpu import allocate, held_by_others, wait_measured
from tuner import trial
beside = held_by_others() > 0
allocate(800 if beside else 300)
state = Path(os.environ["FAKE_GPU_STATE"])
while not beside and not list(state.glob("oom-*")):
    time.sleep(0.02)
wait_measured()
trial.report(0, loss=1.0)
"""


@pytest.fixture
def fake_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir, state = install(tmp_path, [{"index": 0, "uuid": "GPU-0", "total": 1000}])
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv(STATE, str(state))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return state


def _run(tmp_path: Path, uri: str, script: str, **over: Any) -> Any:
    from tuner.campaign import Controller
    from tuner.config import load_config

    (tmp_path / "trial.py").write_text(script)
    data = {
        "name": "t",
        "command": [sys.executable, "trial.py", "--x", "{x}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 2, "max_failures": 1},
        "trial": {"grace_period": 2, "timeout": 30, "retries": 0, "preload": False},
        "sampler": {"name": "random", "seed": 7},
        "pruner": {"name": "none"},
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": uri},
        **over,
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    config = load_config(path)
    result = Controller(config, importance=False, handle_signals=False).run()
    return config, result


def _runs(uri: str) -> list[Any]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("t")
    assert exp is not None
    return list(client.search_runs([exp.experiment_id], max_results=100))


def _trials(config: Any) -> list[Any]:
    import optuna

    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    return list(study.get_trials(deepcopy=False))


def test_half_a_device_each_records_neighbours_peaks_and_device_hours(
    fake_gpu: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    config, result = _run(
        tmp_path, sqlite_uri, PAIR, resources={"kind": "gpu", "devices": [0], "per_trial": 0.5}
    )
    assert config.resources.parallel == 2  # what fits: two halves of one device
    assert result.counts["COMPLETE"] == 2
    runs = _runs(sqlite_uri)
    trial_runs = [r for r in runs if r.data.tags.get("tuner.trial_number") is not None]
    assert len(trial_runs) == 2
    for run in trial_runs:
        assert run.data.tags["tuner.device"] == "gpu:0"
        assert run.data.tags["tuner.device.neighbours"] == "1"
        assert run.data.tags["tuner.device.peak_memory_mib"] == "100"
    for frozen in _trials(config):
        placement = frozen.user_attrs["tuner.placement"]
        assert placement["device"] == "gpu:0" and placement["neighbours"] == 1
        assert placement["peak_memory_mib"] == 100.0 and placement["duration"] > 0
    (parent,) = [r for r in runs if r.data.tags.get("tuner.trial_number") is None]
    assert float(parent.data.tags["tuner.device_hours"]) > 0
    # Both trials ran together for most of their lives: more than one trial at once.
    assert 1.0 < float(parent.data.tags["tuner.occupancy.gpu:0"]) <= 2.0


def test_out_of_memory_beside_another_is_retried_alone_outside_the_failure_budget(
    fake_gpu: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    # max_failures 1 and retries 0: had the out-of-memory failure counted as the
    # configuration's, the campaign would stop there, unretried.
    config, result = _run(tmp_path, sqlite_uri, GREEDY, resources={"per_trial": "auto"})
    assert result.counts["COMPLETE"] == 2, result
    trials = sorted(_trials(config), key=lambda t: t.number)
    states = [t.state.name for t in trials]
    assert states == ["COMPLETE", "FAIL", "COMPLETE"]
    failed = trials[1]
    assert "out of device memory beside other trials: retried alone" in failed.user_attrs[FAIL_ATTR]
    assert failed.user_attrs["tuner.placement"]["neighbours"] == 1
    retry = trials[2]
    assert retry.params == failed.params
    assert retry.user_attrs["tuner.placement"]["neighbours"] == 0
    assert retry.user_attrs["tuner.placement"]["peak_memory_mib"] == 300.0


#: Takes 100 MiB, stays until the driver was asked what it holds, and reports.
SMALL = f"""
import sys
sys.path.insert(0, {HERE!r})
from _fake_gpu import allocate, wait_measured
from tuner import trial
allocate(100)
wait_measured()
trial.report(0, loss=1.0)
"""


def test_auto_on_every_device_found_plans_for_every_device(tmp_path: Path, sqlite_uri: str) -> None:
    # Two devices found at run time (devices: auto), up to 8 trials on each: the progress
    # line, the sampler's plan and the campaign's record say 16 at a time, not one
    # device's 8 as validation planned without looking.
    import subprocess

    gpus = [{"index": i, "uuid": f"GPU-{i}", "total": 1000} for i in range(2)]
    bin_dir, state = install(tmp_path, gpus)
    (tmp_path / "trial.py").write_text(SMALL)
    path = tmp_path / "campaign.yaml"
    data = {
        "name": "t",
        "command": [sys.executable, "trial.py"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 2},
        "trial": {"timeout": 60, "preload": False},
        "resources": {"kind": "gpu", "per_trial": "auto"},
        "lineage": {"tracking_uri": sqlite_uri},
    }
    path.write_text(yaml.safe_dump(data))
    env = {k: v for k, v in os.environ.items() if not k.endswith("VISIBLE_DEVICES")}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.update(PATH=f"{bin_dir}:{os.environ['PATH']}", **{STATE: str(state)})
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "run", str(path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "budget 2 trials, 16 at a time" in done.stdout
    (parent,) = [r for r in _runs(sqlite_uri) if r.data.tags.get("tuner.trial_number") is None]
    assert parent.data.params["resources.parallel"] == "16"
