"""The ``scheduler:`` section: what it accepts, and the combinations it refuses with one
line naming the key, exit code 2, through the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

BASE: dict[str, Any] = {
    "name": "s",
    "command": [sys.executable, "trial.py", "{lr}", "{opt}"],
    "target": {"metric": "loss", "goal": "minimize"},
    "parameters": {
        "lr": {"type": "float", "low": 0.001, "high": 0.1, "log": True},
        "opt": {"type": "categorical", "choices": ["sgd", "adam"]},
    },
    "budget": {"trials": 4},
}
PBT = {"name": "pbt", "population": 4, "interval": 2, "perturb": {"lr": {"factor": [0.8, 1.2]}}}
ASHA = {"name": "asha", "max_resource": 9}


def _validate(tmp_path: Path, **over: Any) -> subprocess.CompletedProcess[str]:
    (tmp_path / "trial.py").write_text("")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**BASE, **over}))
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", "validate", "c.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_scheduler_replaces_the_default_pruner_and_its_rungs_follow_eta(tmp_path: Path) -> None:
    from tuner.config import AshaConfig, PbtConfig, parse_config

    (tmp_path / "trial.py").write_text("")
    config = parse_config({**BASE, "scheduler": ASHA}, base_dir=tmp_path)
    assert config.pruner.name == "none"
    assert isinstance(config.scheduler, AshaConfig)
    assert config.scheduler.mode == "promote" and config.scheduler.rungs() == [1, 3]
    pbt = parse_config({**BASE, "scheduler": PBT}, base_dir=tmp_path).scheduler
    assert isinstance(pbt, PbtConfig) and pbt.quantile == 0.25
    assert _validate(tmp_path, scheduler=PBT).returncode == 0


@pytest.mark.parametrize(
    ("over", "line"),
    [
        (
            {"scheduler": PBT, "pruner": {"name": "median"}},
            "pruner.name must be none with scheduler pbt",
        ),
        (
            {"scheduler": {**PBT, "perturb": {"lrr": {"factor": [2]}}}},
            "scheduler.perturb.lrr must name a declared parameter (did you mean 'lr'?)",
        ),
        (
            {"scheduler": {**PBT, "perturb": {"opt": {"factor": [2]}}}},
            "scheduler.perturb.opt.factor needs a number parameter (opt is categorical)",
        ),
        (
            {"scheduler": {**PBT, "perturb": {"lr": {"neighbour": True}}}},
            "scheduler.perturb.lr.neighbour needs a categorical parameter (lr is float)",
        ),
        (
            {"scheduler": {**PBT, "perturb": {"lr": {"factor": [2], "resample": 0.5}}}},
            "scheduler.perturb.lr must set exactly one of factor, neighbour, resample",
        ),
        (
            {"scheduler": PBT, "budget": {"trials": 6}},
            "budget.trials must equal scheduler.population (4)",
        ),
        (
            {"scheduler": {**ASHA, "min_resource": 9}},
            "scheduler.max_resource must be > min_resource (9), got 9",
        ),
        ({"scheduler": {"name": "hyperband"}}, "scheduler.name must be one of 'asha', 'pbt'"),
        ({"scheduler": {**ASHA, "brackets": 0}}, "scheduler.brackets must be >= 1"),
        (
            {"scheduler": {**ASHA, "model": "bohb"}},
            "scheduler.model must be one of 'study' or 'rung', got 'bohb'",
        ),
    ],
)
def test_a_scheduler_that_makes_no_sense_is_refused_in_one_line(
    tmp_path: Path, over: dict[str, Any], line: str
) -> None:
    done = _validate(tmp_path, **over)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("tuner validate: error: c.yaml: ") and line in lines[0], lines
