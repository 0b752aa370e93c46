"""The scheduler contract, run against every scheduler: ASHA (promote and stop) and PBT
(asynchronous and ``synch``). Each is driven through the same scenario, the way the
controller drives it (`tuner.schedulers.Scheduler`'s contract), over a real Optuna study and
real committed checkpoints, with attempts simulated in this process: a scheduler returns
decisions over a read-only view and never changes it, a pause names a step the attempt
reached, every continuation continues a trial that ended and none is made twice, asking
twice enqueues nothing new, and the same seed gives the same decisions."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import pytest

from lineage import checkpoints
from lineage.trials import PARENT_ATTR, PAUSED_ATTR, RESUMED_STEP_ATTR
from tuner.config import Objective, Parameter
from tuner.config._scheduler import AshaConfig, PbtConfig
from tuner.schedulers import (
    Continue,
    Decision,
    Keep,
    Pause,
    SchedulerContext,
    Stop,
    make_scheduler,
)

STEPS = 9
SECTIONS = {
    "asha-promote": lambda: AshaConfig(name="asha", max_resource=STEPS, min_resource=1),
    "asha-stop": lambda: AshaConfig(name="asha", mode="stop", max_resource=STEPS),
    "pbt": lambda: PbtConfig.model_validate(
        {"name": "pbt", "population": 4, "interval": 2, "perturb": {"lr": {"factor": [0.8, 1.2]}}}
    ),
    "pbt-synch": lambda: PbtConfig.model_validate(
        {
            "name": "pbt",
            "population": 4,
            "interval": 2,
            "synch": True,
            "perturb": {"lr": {"factor": [0.8, 1.2]}},
        }
    ),
}


@dataclass(frozen=True)
class View:
    """An attempt as a scheduler sees it: frozen, so a scheduler that wrote to it would fail."""

    number: int
    trial: optuna.Trial
    attempt: int
    latest: Mapping[str, float]
    reported_steps: Set[int]
    resumed_step: int | None


@dataclass
class Story:
    """What a drive of one scheduler decided, in order."""

    decisions: list[tuple[int, int, str]] = field(default_factory=list)
    enqueued: list[int] = field(default_factory=list)


def _loss(lr: float, step: int) -> float:
    # The best lr moves during training: early, large steps help; late, small ones.
    best = 0.5 if step <= STEPS // 2 else 0.05
    return abs(math.log(lr / best)) + 1.0 / step


def _drive(section: Any, root: Path, seed: int, budget: int = 14) -> Story:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    folders: dict[int, Path] = {}

    def folder(trial: Any) -> Path:
        chain = int(trial.user_attrs.get("tuner.first_trial", trial.number))
        return folders.setdefault(chain, root / f"chain-{chain}")

    scheduler = make_scheduler(
        section,
        SchedulerContext(
            target=Objective(metric="loss", goal="minimize"),
            grace_period=1.0,
            parameters={"lr": Parameter(type="float", low=1e-3, high=1.0, log=True)},
            seed=seed,
        ),
        study,
        locked=contextlib.nullcontext,
        folder=folder,
        message=lambda line: None,
    )
    assert scheduler is not None
    story = Story()
    asked = 0
    while asked < budget * 4:
        before = {t.number for t in study.get_trials(deepcopy=False)}
        scheduler.before_ask()
        again = scheduler.before_ask()  # nothing changed: nothing new
        assert again == 0
        after = study.get_trials(deepcopy=False)
        story.enqueued += sorted({t.number for t in after} - before)
        waiting = [t for t in after if t.state == optuna.trial.TrialState.WAITING]
        counted = [t for t in after if t.state == optuna.trial.TrialState.COMPLETE]
        if not waiting and len(counted) + asked >= budget * 2:
            break
        trial = study.ask()
        asked += 1
        lr = trial.suggest_float("lr", 1e-3, 1.0, log=True)
        _attempt(study, scheduler, trial, lr, folder(trial), story)
        scheduler.changed()
    _check_continuations(study)
    return story


def _attempt(
    study: optuna.Study, scheduler: Any, trial: optuna.Trial, lr: float, folder: Path, story: Story
) -> None:
    resumed = trial.user_attrs.get(RESUMED_STEP_ATTR)
    start = 1 if resumed is None else int(resumed) + 1
    reported: set[int] = set()
    latest: dict[str, float] = {}
    for step in range(start, STEPS + 1):
        value = _loss(lr, step)
        directory = checkpoints.step_dir(folder, step)
        (directory / "weights").write_text(f"{lr} {step}")
        checkpoints.commit(directory, step)
        trial.report(value, step)
        before = max(reported, default=-1)
        reported.add(step)
        latest["loss"] = value
        view = View(trial.number, trial, 1, dict(latest), frozenset(reported), resumed)
        decision = scheduler.reported(view, before, step)
        assert isinstance(decision, Decision)
        story.decisions.append((trial.number, step, type(decision).__name__))
        if isinstance(decision, Keep):
            continue
        if isinstance(decision, Pause):
            assert start <= decision.step <= step, "a pause names a step the attempt reached"
            attrs: Mapping[str, Any] = {PAUSED_ATTR: decision.step}
        else:
            assert isinstance(decision, Stop | Continue)
            attrs = decision.attrs
        for key, value_ in attrs.items():
            study._storage.set_trial_user_attr(trial._trial_id, key, value_)
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return
    study.tell(trial, _loss(lr, STEPS))


def _check_continuations(study: optuna.Study) -> None:
    """Every continuation continues a trial that had ended, and no trial twice over."""
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    parents = [t.user_attrs[PARENT_ATTR] for t in trials.values() if PARENT_ATTR in t.user_attrs]
    for number, t in trials.items():
        parent = t.user_attrs.get(PARENT_ATTR)
        if parent is None:
            continue
        assert parent < number and trials[parent].state.is_finished()
    promoted = [
        t.user_attrs["tuner.promoted_from"]
        for t in trials.values()
        if "tuner.promoted_from" in t.user_attrs
    ]
    assert len(promoted) == len(set(promoted)), "a paused trial was promoted twice"
    assert all(isinstance(p, int) for p in parents)


@pytest.fixture(params=sorted(SECTIONS))
def section(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield SECTIONS[request.param]()


def test_a_scheduler_decides_over_a_read_only_view_and_continues_each_trial_once(
    section: Any, tmp_path: Path
) -> None:
    story = _drive(section, tmp_path, seed=3)
    kinds = {kind for _, _, kind in story.decisions}
    assert kinds <= {"Keep", "Stop", "Pause", "Continue"}
    assert "Keep" in kinds and kinds - {"Keep"}, "the scenario makes it decide something"


def test_the_same_seed_gives_the_same_decisions(section: Any, tmp_path: Path) -> None:
    first = _drive(section, tmp_path / "a", seed=5)
    second = _drive(section, tmp_path / "b", seed=5)
    assert first.decisions == second.decisions
    assert first.enqueued == second.enqueued


def test_recover_gives_back_the_orphans_it_had_not_decided(section: Any, tmp_path: Path) -> None:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study()
    scheduler = make_scheduler(
        section,
        SchedulerContext(
            target=Objective(metric="loss", goal="minimize"),
            grace_period=1.0,
            parameters={"lr": Parameter(type="float", low=1e-3, high=1.0, log=True)},
            seed=1,
        ),
        study,
        locked=contextlib.nullcontext,
        folder=lambda trial: tmp_path,
        message=lambda line: None,
    )
    assert scheduler is not None
    trial = study.ask()
    trial.suggest_float("lr", 1e-3, 1.0, log=True)
    orphan = study.get_trials(deepcopy=False)[0]
    assert scheduler.recover([], "host") == []
    assert [t.number for t in scheduler.recover([orphan], "host")] == [orphan.number]
