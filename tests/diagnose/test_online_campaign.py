"""The tuner's default early stop, in real campaigns: real subprocess trials reporting through
the trial API, a real MLflow SQLite store, Optuna on SQLite.

``diagnosis.early_stop`` is left at its default (on). The tuner tells the online check each
objective's goal; other metrics go by their names, and one whose goal is unknown is never
stopped on. Each trial paces its reports (as a training does), so the controller checks its
curves several times while it runs; the assertions hold whatever the pacing.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

NEGATIVE_IMPROVING = """
import time
from tuner import trial
# starts just above zero and improves below it; a loss component grows (the price of the
# total's fall, as a KL term can): its goal is unknown, it is never stopped on
values = [0.0165, 0.018, 0.015] + [-0.1 * k for k in range(1, 30)]
for step, value in enumerate(values):
    trial.report(step, loss=value, kl_loss=0.01 * 1.3**step)
    time.sleep(0.1)
"""

REWARD_AS_LOSS = """
import time
from tuner import trial
for step in range(32):
    trial.report(step, loss=10.0 * step)  # a reward logged as `loss`: it improves upward
    time.sleep(0.1)
"""

EXPONENTIAL = """
import time
from tuner import trial
for step in range(2000):  # stopped by the controller long before, at any load
    trial.report(step, loss=1.05**step)  # finite all the way (1.05**2000 ~ 2e42)
    time.sleep(0.05)
"""


def _run(tmp_path: Path, uri: str, script: str, goal: str) -> Any:
    import optuna

    from tuner.campaign import Controller
    from tuner.config import load_config

    (tmp_path / "trial.py").write_text(textwrap.dedent(script))
    data = {
        "name": "t",
        "command": [sys.executable, "trial.py", "--x", "{x}"],
        "target": {"metric": "loss", "goal": goal},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 1},
        "sampler": {"name": "random", "seed": 7},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "lineage": {"tracking_uri": uri},
    }
    (tmp_path / "campaign.yaml").write_text(yaml.safe_dump(data))
    config = load_config(tmp_path / "campaign.yaml")
    assert config.diagnosis.early_stop  # the default
    result = Controller(config, importance=False, handle_signals=False).run()
    storage = config.optuna_storage_url()
    (trial,) = optuna.load_study(study_name=config.study_name, storage=storage).get_trials()
    return result, trial


def test_a_loss_improving_below_zero_runs_to_the_end(tmp_path: Path, sqlite_uri: str) -> None:
    result, trial = _run(tmp_path, sqlite_uri, NEGATIVE_IMPROVING, "minimize")
    assert result.counts["COMPLETE"] == 1, trial.user_attrs
    assert "prune_reason" not in trial.user_attrs
    assert trial.value == pytest.approx(-2.9)


def test_a_maximized_loss_rising_runs_to_the_end(tmp_path: Path, sqlite_uri: str) -> None:
    result, trial = _run(tmp_path, sqlite_uri, REWARD_AS_LOSS, "maximize")
    assert result.counts["COMPLETE"] == 1, trial.user_attrs
    assert trial.value == pytest.approx(310.0)


def test_exponential_growth_is_stopped_while_finite(tmp_path: Path, sqlite_uri: str) -> None:
    result, trial = _run(tmp_path, sqlite_uri, EXPONENTIAL, "minimize")
    assert result.counts["PRUNED"] == 1
    reason = trial.user_attrs["prune_reason"]
    # divergence (more than doubled from its best) or runaway, whichever a check sees first
    assert reason.startswith(
        (
            "stopped early by diagnosis: divergence: loss rose",
            "stopped early by diagnosis: loss_runaway: loss rose",
        )
    ), reason
    assert "inf" not in reason and "nan" not in reason
    assert max(trial.intermediate_values) < 1999
