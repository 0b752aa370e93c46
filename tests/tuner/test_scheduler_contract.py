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
from lineage.trials import (
    EXPLOIT_ATTR,
    FIRST_TRIAL_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    RESUMED_STEP_ATTR,
)
from tuner.config import AshaConfig, Objective, Parameter, PbtConfig
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


@dataclass
class _Attempt:
    trial: optuna.Trial
    lr: float
    folder: Path
    resumed: int | None
    step: int
    reported: set[int] = field(default_factory=set)
    latest: dict[str, float] = field(default_factory=dict)


def _drive(section: Any, root: Path, seed: int, parallel: int = 4) -> Story:
    """Run a campaign, ``parallel`` attempts at a time, each advancing one step per round (so
    members overlap, as under a real controller): 12 fresh trials, or PBT's population."""
    budget = getattr(section, "population", 12)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))

    def folder(trial: Any) -> Path:
        if isinstance(trial, int):
            return root / f"chain-{trial}"
        return root / f"chain-{trial.user_attrs.get(FIRST_TRIAL_ATTR, trial.number)}"

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
    active: list[_Attempt] = []
    asked = 0
    for _ in range(STEPS * budget * 4):  # a bound: the contract's campaign ends well before
        before = {t.number for t in study.get_trials(deepcopy=False)}
        scheduler.before_ask()
        assert scheduler.before_ask() == 0, "asking twice enqueues nothing new"
        after = study.get_trials(deepcopy=False)
        story.enqueued += sorted({t.number for t in after} - before)
        waiting = any(t.state == optuna.trial.TrialState.WAITING for t in after)
        while len(active) < parallel and (waiting or asked < budget):
            trial = study.ask()
            asked += not waiting
            resumed = _resume_point(trial, folder(trial))
            lr = trial.suggest_float("lr", 1e-3, 1.0, log=True)
            start = 1 if resumed is None else int(resumed) + 1
            active.append(_Attempt(trial, lr, folder(trial), resumed, start))
            waiting = any(
                t.state == optuna.trial.TrialState.WAITING for t in study.get_trials(deepcopy=False)
            )
        if not active:
            break
        for attempt in list(active):
            if _advance(study, scheduler, attempt, story):
                active.remove(attempt)
                scheduler.changed()
    else:
        raise AssertionError("the campaign never ended")
    _check_continuations(study)
    return story


def _resume_point(trial: optuna.Trial, folder: Path) -> int | None:
    """Where a continuation resumes, as the launcher finds it: its chain's latest committed
    checkpoint (capped at the step it was paused or exploited at), recorded on the trial."""
    attrs = trial.user_attrs
    if RESUMED_STEP_ATTR in attrs:
        return int(attrs[RESUMED_STEP_ATTR])
    if not ({PARENT_ATTR, PROMOTED_FROM_ATTR, EXPLOIT_ATTR} & set(attrs)):
        return None
    exploit = attrs.get(EXPLOIT_ATTR) or {}
    found = checkpoints.latest_good(folder, at_most=exploit.get("step"))
    if found is None:
        return None
    trial.set_user_attr(RESUMED_STEP_ATTR, found.step)
    return found.step


def _advance(study: optuna.Study, scheduler: Any, a: _Attempt, story: Story) -> bool:
    """One step of attempt ``a``; True once it ended (told to the study)."""
    step, trial = a.step, a.trial
    if step > STEPS:
        study.tell(trial, _loss(a.lr, STEPS))
        return True
    value = _loss(a.lr, step)
    directory = checkpoints.step_dir(a.folder, step)
    (directory / "weights").write_text(f"{a.lr} {step}")
    checkpoints.commit(directory, step)
    trial.report(value, step)
    before = max(a.reported, default=-1)
    a.reported.add(step)
    a.latest["loss"] = value
    a.step += 1
    view = View(trial.number, trial, 1, dict(a.latest), frozenset(a.reported), a.resumed)
    decision = scheduler.reported(view, before, step)
    assert isinstance(decision, Decision)
    story.decisions.append((trial.number, step, type(decision).__name__))
    if isinstance(decision, Keep):
        return False
    if isinstance(decision, Pause):
        assert a.reported and decision.step <= step, "a pause names a step the attempt reached"
        attrs: Mapping[str, Any] = {PAUSED_ATTR: decision.step}
    else:
        assert isinstance(decision, Stop | Continue)
        attrs = decision.attrs
    for key, value_ in attrs.items():
        study._storage.set_trial_user_attr(trial._trial_id, key, value_)
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    return True


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
        t.user_attrs[PROMOTED_FROM_ATTR]
        for t in trials.values()
        if PROMOTED_FROM_ATTR in t.user_attrs
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
