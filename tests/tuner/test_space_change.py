"""A changed search space on `tuner run` / `tuner resume` is never silent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.tuner.conftest import mlflow_runs, trials_of
from tuner.config import CampaignConfig


def test_changed_space_is_refused_unless_allowed(
    campaign: Callable[..., CampaignConfig],
    cli: Callable[..., tuple[int, str, str]],
    sqlite_uri: str,
) -> None:
    config = campaign(budget={"trials": 2, "max_failures": 5})
    path = str(config.source_path)
    rc, _, err = cli("run", path, "--quiet")
    assert rc == 0, err

    campaign(
        parameters={"x": {"type": "float", "low": 0.0, "high": 2.0}},
        budget={"trials": 3, "max_failures": 5},
    )
    for command in ("run", "resume"):
        rc, _, err = cli(command, path, "--quiet")
        assert rc == 2, err
        assert err.strip() == (
            f"tuner {command}: error: {path}: parameters changed since campaign 't' last ran "
            "(x.high 1.0 -> 2.0), and its 2 trial(s) were sampled from the old space; run with "
            "--allow-space-change to go on with the new space (the change is recorded in the "
            "campaign's MLflow run), or give the campaign another name."
        )
    assert len(trials_of(config)) == 2

    rc, _, err = cli("run", path, "--quiet", "--allow-space-change")
    assert rc == 0, err
    assert len(trials_of(config)) == 3
    (parent,) = [
        r for r in mlflow_runs(sqlite_uri) if r.data.tags["lineage.run_type"] == "campaign"
    ]
    assert parent.data.tags["tuner.space_change"] == "x.high 1.0 -> 2.0"
    assert parent.data.params["space_change.1"] == "x.high 1.0 -> 2.0"
    note = parent.data.tags["mlflow.note.content"]
    assert "**Search space changes** (`--allow-space-change`)" in note
    assert note.rstrip().endswith(": x.high 1.0 -> 2.0")
    # The new space is the study's now: going on needs no flag.
    rc, _, err = cli("resume", path, "--quiet")
    assert rc == 0, err


def test_space_difference_names_each_change() -> None:
    from tuner.config import space_difference

    old: dict[str, Any] = {
        "lr": {"type": "float", "low": 0.001, "high": 0.1, "log": True},
        "opt": {"type": "categorical", "choices": ["sgd", "adam"]},
        "wd": {"type": "float", "low": 0.0, "high": 0.1},
    }
    new: dict[str, Any] = {
        "lr": {"type": "float", "low": 0.001, "high": 0.1},
        "opt": {"type": "categorical", "choices": ["sgd", "adam", "rmsprop"]},
        "layers": {"type": "int", "low": 1, "high": 4},
    }
    assert space_difference(old, new) == [
        "lr.log true -> false",
        'opt.choices ["sgd", "adam"] -> ["sgd", "adam", "rmsprop"]',
        "layers added",
        "wd removed",
    ]
    assert space_difference(new, new) == []
