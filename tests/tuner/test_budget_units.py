"""Budgets in the units users pay: ``budget.steps`` (reported steps over every trial) and
``budget.device_hours``; the progress lines count in that unit. Real subprocess trials, a
real MLflow SQLite store, Optuna on SQLite."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tuner.conftest import trials_of
from tuner.campaign._progress import PlainObserver
from tuner.coordination import own_steps, spent_of

pytestmark = pytest.mark.slow

#: Five steps of a little work each.
STEPS = """
import argparse, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
for step in range(5):
    if trial.should_prune():
        break
    time.sleep(0.05)
    trial.report(step, loss=(x - 0.3) ** 2 + 1 / (step + 1))
"""

#: Steps until told to stop (at most 400 of 50 ms).
LONG = """
import argparse, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
for step in range(400):
    if trial.should_prune():
        break
    time.sleep(0.05)
    trial.report(step, loss=x + 1 / (step + 1))
"""

_BRACKET = re.compile(r"^\[(\d+)/(\d+) steps\] trial ")


def _brackets(text: str) -> list[int]:
    return [int(m.group(1)) for line in text.splitlines() if (m := _BRACKET.match(line))]


def test_a_steps_budget_ends_the_campaign_at_exactly_its_steps(
    campaign: Any, run_campaign: Any
) -> None:
    config = campaign(STEPS, budget={"steps": 12, "max_failures": 20, "trials": None})
    assert config.budget.trials is None and config.trial_limit is None
    out = io.StringIO()
    run_campaign(config, observer=PlainObserver(out))
    finished = [t for t in trials_of(config) if t.state.is_finished()]
    # A trial asked ahead and never started is ended, not left WAITING: superseded, no steps.
    trials = [t for t in finished if "tuner:stale" not in t.system_attrs]
    assert all(t.user_attrs["fail_reason"].startswith("not run: budget.steps") for t in
               finished if t not in trials)  # fmt: skip
    assert not any(t.state.name == "WAITING" for t in trials_of(config))
    assert sum(own_steps(t) for t in trials) == 12  # 5 + 5 + 2: never past the budget
    assert [own_steps(t) for t in trials] == [5, 5, 2]
    last = trials[-1]
    assert last.state.name == "PRUNED"
    assert "stopped at the budget: budget.steps (12 steps spent)" in last.user_attrs["prune_reason"]
    text = out.getvalue()
    assert "budget 12 steps" in text.splitlines()[0]
    shown = _brackets(text)
    # One line per trial; the figures rise, never repeat and never pass the budget.
    assert len(shown) == 3 and shown == sorted(set(shown)) and shown[-1] == 12, text
    assert "budget.steps reached (12 steps spent)" in text


def test_a_steps_budget_counts_what_earlier_runs_spent(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    config = campaign(STEPS, budget={"steps": 6, "max_failures": 20, "trials": None})
    run_campaign(config)
    assert spent_of(trials_of(config)).steps == 6
    # Continuing the campaign with a larger budget spends only what is left of it.
    data = yaml.safe_load((tmp_path / "campaign.yaml").read_text())
    data["budget"]["steps"] = 13
    (tmp_path / "campaign.yaml").write_text(yaml.safe_dump(data))
    from tuner.config import load_config

    bigger = load_config(tmp_path / "campaign.yaml")
    run_campaign(bigger)
    assert spent_of(trials_of(bigger)).steps == 13


def test_a_device_hours_budget_stops_the_running_trials_where_it_is_spent(
    campaign: Any, run_campaign: Any
) -> None:
    # 0.0005 device-hours is 1.8 s of one CPU slot; a trial alone would run 20 s.
    config = campaign(LONG, budget={"device_hours": 0.0005, "max_failures": 20, "trials": None})
    out = io.StringIO()
    run_campaign(config, observer=PlainObserver(out))
    trials = [
        t
        for t in trials_of(config)
        if t.state.is_finished() and "tuner:stale" not in t.system_attrs  # ran, not given back
    ]
    assert trials, out.getvalue()
    reasons = [t.user_attrs.get("prune_reason", "") for t in trials]
    assert "stopped at the budget: budget.device_hours" in reasons[-1], reasons
    assert all(own_steps(t) < 400 for t in trials)
    assert "budget.device_hours reached" in out.getvalue()
    # The seconds on a trial's line are its process's running time, as recorded.
    for t in trials:
        secs = t.user_attrs["tuner.placement"]["duration"]
        shown = f" {secs:.1f}s " if secs >= 1 else f" {secs:.2g}s "
        assert shown in out.getvalue()
