"""The `Coordination` contract, run against every implementation on the stores it serves:
`Standalone` (``tuner run``/``tuner resume``) on SQLite and PostgreSQL, `SharedStudy`
(``tuner worker``) on PostgreSQL. Each scenario is a promise of the contract in
``tuner/coordination/_base.py``; a new coordination joins the parametrization and must keep
them all."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest

from tuner import TunerError
from tuner.config import HeartbeatConfig
from tuner.coordination import (
    CampaignDir,
    Coordination,
    Heartbeat,
    SharedStudy,
    Standalone,
    StudyLock,
    StudySite,
    heartbeat_storage,
)

BUDGET = 6
KINDS = [
    "standalone-sqlite",
    pytest.param("standalone-postgresql", marks=pytest.mark.postgres),
    pytest.param("shared-postgresql", marks=pytest.mark.postgres),
]


class _Recorder:
    """What `recover` tells the lineage recorder: the runs it ends (the store is not under
    test here)."""

    def __init__(self) -> None:
        self.finished: list[tuple[str, str]] = []

    def trial_finished(self, run_id: str, *, status: str, **_: Any) -> None:
        self.finished.append((run_id, status))


@pytest.fixture(params=KINDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Coordination]]:
    """A factory of coordinations of one kind on one study (several calls: several
    controllers of the same campaign)."""
    kind = request.param
    if kind.endswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'optuna.db'}"
    else:
        url = str(request.getfixturevalue("pg_storage"))
    site = StudySite(
        name="contract",
        base_dir=tmp_path,
        storage_url=url,
        study_name="contract",
        heartbeat=HeartbeatConfig(interval=1, grace=2),
        grace_period=1.0,
    )
    made: list[tuple[Coordination, CampaignDir]] = []
    heartbeats: list[Heartbeat] = []
    beating: dict[Coordination, Heartbeat] = {}

    def new(worker: bool = False) -> Coordination:
        """A controller of the campaign, holding its campaign directory (step 1 of the
        contract); ``worker``: a `SharedStudy` whatever the kind."""
        if kind.startswith("standalone") and not worker:
            coordination: Coordination = Standalone(site)
        else:
            rdb = heartbeat_storage(url, interval=1, grace=2)
            beats = Heartbeat(rdb).start()  # a worker's own, stopped as it ends
            heartbeats.append(beats)
            coordination = SharedStudy(
                site,
                storage=optuna.storages.get_storage(rdb),
                rdb=rdb,
                heartbeat=beats,
                lock=StudyLock(url, site.study_name),
            )
            beating[coordination] = beats
        folder = coordination.campaign_dir()
        if isinstance(coordination, Standalone):
            # A worker's folder is named after its process: two in one test process would
            # share it, which two worker processes never do.
            try:
                folder.acquire()
            except TunerError:
                coordination.close()
                raise
        made.append((coordination, folder))
        return coordination

    def die(coordination: Coordination) -> None:
        """The controller's process ends: its heartbeats stop, its folder's lock is free."""
        coordination.close()
        for held, folder in made:
            if held is coordination:
                folder.release(clean=False)
        if coordination in beating:
            beating[coordination].stop()

    new.die = die  # type: ignore[attr-defined]
    yield new
    for coordination, folder in made:
        coordination.close()
        folder.release(clean=True)
    for beats in heartbeats:
        beats.stop()


def _study(coordination: Coordination) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    with coordination.setting_up():
        study = optuna.create_study(
            study_name="contract", storage=coordination.open_storage(), load_if_exists=True
        )
    coordination.joined(study)
    return study


def _run_all(coordination: Coordination, study: optuna.Study, budget: int) -> list[int]:
    """Ask and tell until the coordination says the budget is reached; the numbers run."""
    numbers = []
    while (trial := coordination.ask(study, budget)) is not None:
        study.tell(trial, trial.suggest_float("x", 0.0, 1.0))
        coordination.trial_ended(trial._trial_id)
        numbers.append(trial.number)
    return numbers


def test_ask_stops_at_the_budget_exactly(make: Callable[[], Coordination]) -> None:
    coordination = make()
    study = _study(coordination)
    assert len(_run_all(coordination, study, BUDGET)) == BUDGET
    assert coordination.ask(study, BUDGET) is None
    states = [t.state for t in study.get_trials(deepcopy=False)]
    assert states == [optuna.trial.TrialState.COMPLETE] * BUDGET


def test_waiting_trials_are_taken_first_whatever_the_count(
    make: Callable[[], Coordination],
) -> None:
    coordination = make()
    study = _study(coordination)
    _run_all(coordination, study, BUDGET)
    study.enqueue_trial({"x": 0.25})  # a re-queued copy, say, after the budget was reached
    trial = coordination.ask(study, BUDGET)
    assert trial is not None and trial.suggest_float("x", 0.0, 1.0) == 0.25
    study.tell(trial, 0.25)
    assert coordination.ask(study, BUDGET) is None


def test_two_controllers_together_never_pass_the_budget(
    make: Callable[..., Coordination], request: pytest.FixtureRequest
) -> None:
    kind = request.node.callspec.params["make"]
    first = make()
    if kind.startswith("standalone"):
        # One `tuner run` per campaign: the campaign directory's lock refuses a second.
        with pytest.raises(TunerError, match="another controller is running this campaign"):
            make()
        if kind.endswith("sqlite"):
            return  # no worker joins a SQLite study
    second = make(worker=True)  # a `tuner worker` joins
    studies = [_study(first), _study(second)]
    ran: list[list[int]] = [[], []]
    start = threading.Barrier(2)

    def drive(i: int, coordination: Coordination) -> None:
        start.wait()
        ran[i] = _run_all(coordination, studies[i], BUDGET)

    threads = [threading.Thread(target=drive, args=(i, c)) for i, c in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(ran[0] + ran[1]) == list(range(BUDGET))


def test_an_orphan_is_run_again_with_its_parameters_and_never_left_running(
    make: Callable[[], Coordination],
) -> None:
    dead = make()  # a controller that asked for a trial and died before running it
    study = _study(dead)
    orphan = dead.ask(study, BUDGET)
    assert orphan is not None
    x = orphan.suggest_float("x", 0.0, 1.0)
    make.die(dead)  # type: ignore[attr-defined]

    alive = make()
    study = _study(alive)
    deadline = time.monotonic() + 60
    while True:
        orphans, _ = alive.orphans(study)
        messages: list[str] = []
        alive.recover(study, orphans, recorder=_Recorder(), message=messages.append)  # type: ignore[arg-type]
        trials = study.get_trials(deepcopy=False)
        if not any(t.state == optuna.trial.TrialState.RUNNING for t in trials):
            break
        assert time.monotonic() < deadline, "the orphan stayed RUNNING past its grace"
        time.sleep(0.5)  # a shared study waits out the orphan's heartbeat grace
    # The orphan's place is taken again, once: one WAITING trial, with the orphan's
    # parameters when the study holds them (a controller may die before its cached
    # suggestions reach the database; then the next ask chooses again).
    waiting = [t for t in trials if t.state == optuna.trial.TrialState.WAITING]
    assert len(waiting) == 1
    stored = optuna.load_study(study_name="contract", storage=alive.site.storage_url)
    known = {p.get("x") for t in stored.get_trials(deepcopy=False) for p in [t.params]} - {None}
    again = alive.ask(study, BUDGET)
    assert again is not None
    if x in known:
        assert again.suggest_float("x", 0.0, 1.0) == x
    assert len(_run_all(alive, study, BUDGET)) == BUDGET - 1  # the budget counts it once


def test_close_twice_is_harmless(make: Callable[[], Coordination]) -> None:
    coordination = make()
    _study(coordination)
    coordination.close()
    coordination.close()
