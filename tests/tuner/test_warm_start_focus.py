"""A way out of a narrowed space: a parameter's ``focus`` (what `tuner init` offers) holds
most trials, one in five samples the whole range, and the focus widens once the campaign's
best trials sit at its edge or beyond it; `tuner init` widens a recorded range whose best
runs sit at its bound."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from tests.tuner.conftest import offered_focus, trials_of
from tuner.history import PLACEHOLDER_PROGRAM
from tuner.search import IMPORTED_ATTR
from tuner.search._focus import EXPLORE_EVERY, OPEN, focus_of, focus_state


def _config(tmp_path: Path, **parameters: Any) -> Any:
    from tuner.config import parse_config

    return parse_config(
        {
            "name": "focus",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": {"metric": "loss", "goal": "minimize"},
            "parameters": parameters,
            "budget": {"trials": 40},
            "sampler": {"name": "tpe", "seed": 7},
        },
        base_dir=tmp_path,
    )


def _run(config: Any, loss: Any, n: int) -> optuna.Study:
    from tuner.search import SamplerPlan, make_sampler, sample_params

    study = optuna.create_study(sampler=make_sampler(SamplerPlan.of(config)))
    for _ in range(n):
        trial = study.ask()
        study.tell(trial, loss(sample_params(trial, config.parameters)))
    return study


LR = {"type": "float", "low": 1e-6, "high": 1.0, "log": True, "focus": {"low": 1e-3, "high": 1e-1}}


def test_a_right_focus_holds_four_trials_in_five(tmp_path: Path) -> None:
    config = _config(tmp_path, lr=LR)
    study = _run(config, lambda p: (math.log10(p["lr"]) + 2) ** 2, 30)
    # The first OPEN trials sample the whole range; the focus holds from then on.
    assert any(not 1e-3 <= t.params["lr"] <= 1e-1 for t in study.trials[:OPEN])
    focused = [t for t in study.trials[OPEN:] if (t.number + 1) % EXPLORE_EVERY]
    assert all(1e-3 <= t.params["lr"] <= 1e-1 for t in focused)
    (state,) = focus_state(study.trials, study.directions, focus_of(config.parameters)).values()
    assert (state.low, state.high, state.released) == (1e-3, 1e-1, ())
    assert state.line() == "focus on lr: [0.001, 0.1], held"


def test_a_wrong_focus_gives_way_to_the_best_trial_beyond_it(tmp_path: Path) -> None:
    """The optimum (lr = 1e-5) lies two decades below the focus: the exploring trials find
    better values there, the focus widens to the range's low bound, and the campaign's best
    ends beyond the old focus."""
    config = _config(tmp_path, lr=LR)
    study = _run(config, lambda p: (math.log10(p["lr"]) + 5) ** 2, 40)
    assert study.best_params["lr"] < 1e-3
    (state,) = focus_state(study.trials, study.directions, focus_of(config.parameters)).values()
    assert (state.low, state.high) == (1e-6, 1e-1)
    assert state.released[0].startswith("the best trial has ")
    assert state.line().startswith("focus on lr: widened to [1e-06, 0.1]: the best trial has")
    # once widened, focused trials sample below the old focus too
    late = [t for t in study.trials[20:] if (t.number + 1) % EXPLORE_EVERY]
    assert sum(t.params["lr"] < 1e-3 for t in late) >= len(late) // 2


def test_best_trials_at_the_edge_of_the_focus_widen_it(tmp_path: Path) -> None:
    """The optimum sits just above the focus's high edge, inside the range: the best focused
    trials pile up at the edge, and that side opens."""
    config = _config(tmp_path, lr=LR)
    trials = []
    lr = optuna.distributions.FloatDistribution(1e-6, 1.0, log=True)
    for x in [0.1, 0.099, 0.098, 0.097, 0.1, 1e-3, 3e-3, 1e-2]:
        trials.append(
            optuna.trial.create_trial(params={"lr": x}, distributions={"lr": lr}, value=-x)
        )
    (state,) = focus_state(
        trials, [optuna.study.StudyDirection.MINIMIZE], focus_of(config.parameters)
    ).values()
    assert (state.low, state.high) == (1e-3, 1.0)
    assert state.released == ("5 of the 5 best trials sit at its high edge",)


def test_a_focus_on_choices_gives_way_when_the_best_trial_has_another(tmp_path: Path) -> None:
    kernel = {
        "type": "categorical",
        "choices": ["rbf", "poly", "sigmoid"],
        "focus": {"choices": ["poly"]},
    }
    config = _config(tmp_path, kernel=kernel, x={"type": "float", "low": 0.0, "high": 1.0})
    score = {"rbf": 0.0, "poly": 0.5, "sigmoid": 1.0}
    study = _run(config, lambda p: score[p["kernel"]] + (p["x"] - 0.5) ** 2, 25)
    assert study.best_params["kernel"] == "rbf"
    state = focus_state(study.trials, study.directions, focus_of(config.parameters))["kernel"]
    assert state.choices == ("rbf", "poly", "sigmoid")
    assert state.line().startswith("focus on kernel: widened to [rbf, poly, sigmoid]")


@pytest.mark.parametrize(
    ("focus", "message"),
    [
        ({"low": 1e-7, "high": 0.1}, "parameters.lr.focus.low must be >= low (1e-06)"),
        ({"low": 1e-3, "high": 2.0}, "parameters.lr.focus.high must be <= high (1.0), got 2.0."),
        ({"choices": [1]}, "parameters.lr.focus.choices is only for type: categorical"),
    ],
)
def test_a_bad_focus_is_one_line(tmp_path: Path, focus: dict[str, Any], message: str) -> None:
    from tuner import ConfigError

    with pytest.raises(ConfigError) as info:
        _config(tmp_path, lr={**LR, "focus": focus})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_bad_choice_in_focus_is_one_line(tmp_path: Path) -> None:
    from tuner import ConfigError

    kernel = {"type": "categorical", "choices": ["rbf", "poly"], "focus": {"choices": ["linear"]}}
    with pytest.raises(
        ConfigError, match=r"focus\.choices\[0\] must be one of choices, got 'linear'"
    ):
        _config(tmp_path, kernel=kernel)


# ----- tuner init: a focus over the recorded range, a range widened at its bound ---------------

#: The new task: its optimum (lr = 10^-4.5) lies inside the recorded range but outside the
#: focus the earlier runs (optimum lr = 10^-2) give.
MOVED = """
import math
from tuner import trial
p = trial.params()
trial.report(0, loss=(math.log10(p["lr"]) + 4.5) ** 2 + 0.01 * p["batch"] / 64)
"""


def _runs(uri: str, experiment: str, lrs: list[float], loss: Any) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.create_experiment(experiment)
    for i, lr in enumerate(lrs):
        run = client.create_run(exp).info.run_id
        batch = (16, 32, 64)[i % 3]
        client.log_param(run, "lr", lr)
        client.log_param(run, "batch", batch)
        client.log_metric(run, "loss", loss(lr) + 0.01 * batch / 64)
        client.set_terminated(run)


def _init(cli: Any, uri: str, experiment: str, out: Path, trials: int = 20) -> dict[str, Any]:
    argv = ["init", "--from", experiment, "--target", "loss", "--goal", "minimize"]
    rc, _, err = cli(*argv, "--trials", str(trials), "--tracking-uri", uri, "-o", str(out))
    assert rc == 0, err
    # The runs recorded no command: put one in place of the placeholder, as a user does
    # before validating (tuner validate refuses the placeholder).
    out.write_text(out.read_text().replace(PLACEHOLDER_PROGRAM, sys.executable))
    data: dict[str, Any] = yaml.safe_load(out.read_text())
    return data


def test_init_widens_a_range_whose_best_runs_sit_at_its_bound(
    cli: Any, sqlite_uri: str, tmp_path: Path
) -> None:
    """Most of the best earlier runs sit at the top of what was recorded (lr = 0.1): the
    derived range reaches beyond it, and the comment says why."""
    lrs = [10 ** (-4 + 3 * i / 10) for i in range(11)] + [0.098, 0.099, 0.0995, 0.1, 0.097]
    _runs(sqlite_uri, "edge", lrs, lambda lr: -math.log10(lr))
    data = _init(cli, sqlite_uri, "edge", tmp_path / "c.yaml")
    lr = data["parameters"]["lr"]
    assert lr["low"] == 1e-4 and lr["high"] == pytest.approx(10**0.5, rel=0.01)
    assert lr.get("focus", {"high": lr["high"]})["high"] == lr["high"]
    flat = " ".join(w for w in (tmp_path / "c.yaml").read_text().split() if w != "#")
    assert "mostly sit at the high bound of the recorded range (0.1)" in flat
    assert "the optimum may lie beyond it" in flat
    rc, _, err = cli("validate", str(tmp_path / "c.yaml"))
    assert rc == 0, err


def test_a_derived_campaign_escapes_a_wrong_refinement(
    cli: Any, sqlite_uri: str, tmp_path: Path, run_campaign: Any
) -> None:
    """`tuner init` refines lr around the earlier optimum (10^-2); the new task's lies at
    10^-4.5, inside the recorded range, outside the focus. Real trials: the exploring trials
    find it, the focus gives way, and the campaign's best lies beyond the old focus."""
    from tuner.config import load_config

    lrs = [10 ** (-5 + 4 * ((i * 7) % 16) / 15) for i in range(16)]
    _runs(sqlite_uri, "earlier", lrs, lambda lr: (math.log10(lr) + 2) ** 2)
    path = tmp_path / "derived.yaml"
    data = _init(cli, sqlite_uri, "earlier", path, trials=16)
    # The focus is offered commented out; a user who trusts the earlier runs sets it.
    assert "focus" not in data["parameters"]["lr"]
    data["parameters"]["lr"] = offered_focus(path.read_text(), "lr")
    focus = data["parameters"]["lr"]["focus"]
    assert 10**-4.5 < focus["low"] < 1e-2 < focus["high"]
    (tmp_path / "trial.py").write_text(MOVED)
    data.update(
        command=[sys.executable, "trial.py"],
        reads_tuner_params=True,
        sampler={"name": "tpe", "seed": 3},
        resources={"kind": "cpu", "parallel": 1},
        trial={"grace_period": 2},
        diagnosis={"early_stop": False},
    )
    path.write_text(yaml.safe_dump(data))
    config = load_config(path)
    run_campaign(config)
    own = [t for t in trials_of(config) if IMPORTED_ATTR not in t.system_attrs]
    assert len(own) == 16
    best = min((t for t in own if t.value is not None), key=lambda t: t.value)
    assert best.params["lr"] < focus["low"]
    rc, out, err = cli("run", str(path))  # the budget is spent: prints the notes again
    assert rc == 0, err
    assert "focus on lr: widened to [" in out and "below it" in out
    rc, out, err = cli("status", str(path), "--format", "json")
    assert rc == 0, err
    (line,) = json.loads(out)["focus"]
    assert line.startswith("focus on lr: widened to [")
    rc, out, err = cli("status", str(path))
    assert rc == 0 and line in out.splitlines(), err


def test_init_from_a_campaign_keeps_its_declared_space(
    campaign: Any, run_campaign: Any, cli: Any, sqlite_uri: str, tmp_path: Path
) -> None:
    """The runs of an earlier campaign: its declared type, scale, step and choices are kept
    (not re-inferred from the values the trials happened to try), only bounds are refined."""
    script = """
import math
from tuner import trial
p = trial.params()
trial.report(0, loss=(math.log10(p["lr"]) + 2) ** 2 + 0.001 * p["batch"] + 0.01 * len(p["opt"]))
"""
    space = {
        "lr": {"type": "float", "low": 0.001, "high": 0.5, "log": True},
        "batch": {"type": "int", "low": 16, "high": 128, "step": 16},
        "opt": {"type": "categorical", "choices": ["sgd", "adam", "lamb"]},
    }
    config = campaign(
        script,
        command=[sys.executable, "trial.py"],
        reads_tuner_params=True,
        parameters=space,
        budget={"trials": 10},
    )
    run_campaign(config)
    data = _init(cli, sqlite_uri, "t", tmp_path / "derived.yaml")
    lr, batch, opt = (data["parameters"][n] for n in ("lr", "batch", "opt"))
    assert (lr["type"], lr.get("log"), lr["low"], lr["high"]) == ("float", True, 0.001, 0.5)
    assert (batch["type"], batch["step"], batch["low"], batch["high"]) == ("int", 16, 16, 128)
    assert opt["type"] == "categorical" and opt["choices"] == ["sgd", "adam", "lamb"]
    rc, _, err = cli("validate", str(tmp_path / "derived.yaml"))
    assert rc == 0, err


def test_init_keeps_a_log_scale_under_two_decades(
    cli: Any, sqlite_uri: str, tmp_path: Path
) -> None:
    """A width sampled on a log scale over [8, 512] spans 1.8 decades, less than what the
    importance analysis takes for log: `tuner init` still tunes it on a log scale (sampled
    uniformly, most trials would land above 128). One spread evenly over the same span stays
    linear."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(sqlite_uri)
    exp = client.create_experiment("widths")
    for i in range(12):
        run = client.create_run(exp).info.run_id
        client.log_param(run, "width", round(8 * 64 ** (((i * 5) % 12) / 11)))
        client.log_param(run, "depth", 8 + round(504 * ((i * 7) % 12) / 11))
        client.log_metric(run, "loss", float(i))
        client.set_terminated(run)
    data = _init(cli, sqlite_uri, "widths", tmp_path / "c.yaml")
    width, depth = data["parameters"]["width"], data["parameters"]["depth"]
    assert (width["type"], width["low"], width["high"], width.get("log")) == ("int", 8, 512, True)
    assert (depth["type"], depth["low"], depth["high"], depth.get("log")) == ("int", 8, 512, None)
