"""Which parameters a continuation changed from the trial that wrote its checkpoint
(``TUNER_RESUME_CHANGED``): the writer is found up the chain of parents, past a retry that
holds a copied checkpoint it never wrote itself."""

from __future__ import annotations

import json
from types import SimpleNamespace

import optuna

from tuner import _protocol as protocol
from tuner.campaign._launch import Launcher
from tuner.search import PARENT_ATTR, RESUMED_STEP_ATTR


def _study() -> optuna.Study:
    """Trial 0 trains x=0.5 from scratch; trial 1 continues its checkpoint of step 3 with
    x=0.6 (an exploit); trial 2 retries trial 1 after it wrote step 5; trial 3 retries it
    before it wrote anything (its folder holds only the copy of step 3)."""
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    dist: dict[str, optuna.distributions.BaseDistribution] = {
        "x": optuna.distributions.FloatDistribution(0.1, 0.9)
    }
    rows = [(0.5, None, None), (0.6, 0, 3), (0.6, 1, 5), (0.6, 1, 3)]
    for x, parent, resumed in rows:
        attrs = {} if parent is None else {PARENT_ATTR: parent, RESUMED_STEP_ATTR: resumed}
        study.add_trial(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState.PRUNED,
                params={"x": x},
                distributions=dist,
                user_attrs=attrs,
            )
        )
    return study


def test_the_changed_parameters_are_those_of_the_checkpoints_writer() -> None:
    study = _study()
    launcher = SimpleNamespace(_study=study)
    trials = study.get_trials(deepcopy=False)

    def changed(number: int, step: int) -> list[str]:
        trial = trials[number]
        return Launcher._changed(launcher, trial, trial.params, step)  # type: ignore[arg-type]

    assert changed(1, 3) == ["x"]  # the exploit: trial 0 wrote step 3 with x=0.5
    assert changed(2, 5) == []  # trial 1 wrote step 5 with its own x
    assert changed(3, 3) == ["x"]  # step 3 is still trial 0's, copied into trial 1's folder
    assert changed(0, 3) == []  # a fresh trial continues nothing


def test_checkpoint_env_names_the_changed_parameters_only_for_a_resume() -> None:
    env = protocol.checkpoint_env("/ck", 2, ("/ck/step-3", 3), changed=["lr", "momentum"])
    assert json.loads(env[protocol.RESUME_CHANGED]) == ["lr", "momentum"]
    assert protocol.RESUME_CHANGED not in protocol.checkpoint_env("/ck", 2, ("/ck/step-3", 3))
    assert protocol.RESUME_CHANGED not in protocol.checkpoint_env("/ck", 2, None, changed=["lr"])
