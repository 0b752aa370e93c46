"""Budget admission, heartbeats and stale-trial re-queueing, on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import optuna
import pytest

from tuner.coordination import (
    Heartbeat,
    StudyLock,
    ask_within_budget,
    counted_trials,
    heartbeat_storage,
    live_trial_ids,
    requeue_stale,
)
from tuner.search import RETRY_OF_ATTR, STALE_ATTR

WORKER = """
import sys, optuna
from tuner.coordination import Heartbeat, StudyLock, ask_within_budget, heartbeat_storage
optuna.logging.set_verbosity(optuna.logging.ERROR)
url, budget = sys.argv[1], int(sys.argv[2])
storage = heartbeat_storage(url, interval=1, grace=5)
study = optuna.load_study(study_name="s", storage=optuna.storages.get_storage(storage))
lock, hb = StudyLock(url, "s"), Heartbeat(storage).start()
while (trial := ask_within_budget(study, budget, lock, hb)) is not None:
    study.tell(trial, trial.suggest_float("x", 0, 1))
    hb.remove(trial._trial_id)
hb.stop()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'optuna.db'}"
    return str(request.getfixturevalue("pg_storage"))


def _study(
    url: str, interval: int = 1, grace: int = 2
) -> tuple[optuna.Study, optuna.storages.RDBStorage]:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = heartbeat_storage(url, interval=interval, grace=grace)
    return optuna.create_study(study_name="s", storage=storage, load_if_exists=True), storage


def test_processes_racing_for_the_budget_create_exactly_it(url: str) -> None:
    study, _ = _study(url)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, url, "12"]) for _ in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    trials = study.get_trials()
    assert len(trials) == 12 and {t.state.name for t in trials} == {"COMPLETE"}
    assert counted_trials(study) == 12


def test_a_stale_trial_is_requeued_once_with_its_params(url: str) -> None:
    # The kept trial's heartbeat comes from the thread, a beat a second against a grace of
    # five: a loaded machine can stall a test for a second or two, not for four.
    study, storage = _study(url, grace=5)
    lock = StudyLock(url, "s")
    hb = Heartbeat(storage)
    kept = ask_within_budget(study, 3, lock, hb)
    lost = ask_within_budget(study, 3, lock, hb)
    assert kept is not None and lost is not None
    lost.suggest_float("x", 0, 1)
    hb.remove(lost._trial_id)  # its worker "died": no more heartbeats
    hb.start()
    try:
        assert live_trial_ids(url, "s", 5) == {kept._trial_id, lost._trial_id}
        deadline = time.monotonic() + 120
        while lost._trial_id in live_trial_ids(url, "s", 5):
            assert time.monotonic() < deadline, "the lost trial's heartbeat never went stale"
            time.sleep(0.2)
        assert live_trial_ids(url, "s", 5) == {kept._trial_id}
        results: list[list[tuple[int, int]]] = []
        racers = [
            threading.Thread(
                target=lambda: results.append(requeue_stale(study, storage, StudyLock(url, "s")))
            )
            for _ in range(3)
        ]
        for t in racers:
            t.start()
        for t in racers:
            t.join()
    finally:
        hb.stop()
    moved = [m for r in results for m in r]
    assert len(moved) == 1 and moved[0][0] == lost.number
    old = study.trials[lost.number]
    assert old.state.name == "FAIL" and "no heartbeat" in old.system_attrs[STALE_ATTR]
    # The copy is taken before any new trial, whatever the count, with the same parameters.
    again = ask_within_budget(study, 3, lock, hb)
    assert again is not None and again.number == moved[0][1]
    assert again.suggest_float("x", 0, 1) == old.params["x"]
    assert study.trials[again.number].system_attrs[RETRY_OF_ATTR] == lost.number
    assert counted_trials(study) == 2  # kept and the copy; the stale one does not count
    assert ask_within_budget(study, 3, lock, hb) is not None
    assert ask_within_budget(study, 3, lock, hb) is None


def test_a_trial_whose_controller_died_before_its_first_heartbeat_is_requeued(url: str) -> None:
    """Killed between ``study.ask`` and the trial's first heartbeat (a worker asking ahead of a
    free slot, kill -9): the trial has no heartbeat at all, which Optuna never calls stale, so
    it stayed RUNNING for ever and every worker waited on it. The first look gives it a
    heartbeat on its behalf; a grace period later it is stale and re-queued like any other."""
    study, storage = _study(url)
    lock = StudyLock(url, "s")
    orphan = ask_within_budget(study, 3, lock)  # no Heartbeat: none recorded
    assert orphan is not None
    orphan.suggest_float("x", 0, 1)
    assert live_trial_ids(url, "s", 2) == set()
    assert requeue_stale(study, storage, lock) == []  # first look: a heartbeat on its behalf
    assert live_trial_ids(url, "s", 2) == {orphan._trial_id}
    deadline = time.monotonic() + 120
    moved: list[tuple[int, int]] = []
    while not moved:
        assert time.monotonic() < deadline, "the orphan was never re-queued"
        time.sleep(0.5)
        moved = requeue_stale(study, storage, lock)
    assert [old for old, _ in moved] == [orphan.number]
    assert study.trials[orphan.number].state.name == "FAIL"


def test_failed_heartbeat_writes_are_counted_and_stored_once_the_storage_is_back(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    from lineage.trials import MISSED_ATTR

    study, storage = _study(f"sqlite:///{tmp_path / 'optuna.db'}")
    trial = study.ask()
    beat = Heartbeat(storage)
    beat.add(trial._trial_id)
    real, failures = storage.record_heartbeat, [2]

    def flaky(trial_id: int) -> None:
        if failures[0]:
            failures[0] -= 1
            raise RuntimeError("database is locked")
        real(trial_id)

    storage.record_heartbeat = flaky  # type: ignore[method-assign]
    beat.beat()
    beat.beat()
    assert beat.missed == 2 and "database is locked" in (beat.last_error or "")
    attrs = storage.get_study_system_attrs
    assert not [k for k in attrs(study._study_id) if k.startswith(MISSED_ATTR)]
    beat.beat()  # the storage takes writes again: the count goes to the study
    stored = [v for k, v in attrs(study._study_id).items() if k.startswith(MISSED_ATTR)]
    assert [v["count"] for v in stored] == [2]
    assert "database is locked" in stored[0]["last"]
