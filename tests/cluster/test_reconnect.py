"""The pieces that make a study survive its database, one by one (fast; the whole campaign
under faults is test_db_outage.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import optuna
import pytest
import sqlalchemy
from _pgfaults import terminate

from tuner._errors import StorageUnavailable
from tuner.coordination import StudyLock, ask_within_budget, counted_trials
from tuner.coordination._lock import Held
from tuner.search import _resilient as R


def _lost() -> Exception:
    orig = Exception("terminating connection due to administrator command\nmore text")
    return sqlalchemy.exc.OperationalError("SELECT 1", {}, orig)


def test_disconnects_are_told_from_other_errors() -> None:
    assert R.is_disconnect(_lost())
    wrapped = RuntimeError("commit failed")
    wrapped.__cause__ = _lost()
    assert R.is_disconnect(wrapped)
    locked = sqlalchemy.exc.OperationalError("x", {}, Exception("database is locked"))
    assert not R.is_disconnect(locked)
    assert not R.is_disconnect(ValueError("terminating connection"))
    full = sqlalchemy.exc.OperationalError("x", {}, Exception("database or disk is full"))
    assert R.is_disk_full(full) and not R.is_disconnect(full)


def test_a_lost_connection_is_retried_and_reported_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines: list[str] = []
    R.set_outage_sink(lines.append)
    try:
        outage = R.Outage("postgresql://me:secret@db:5432/optuna")
        calls = iter([_lost(), _lost(), "answer"])

        def call() -> str:
            item = next(calls)
            if isinstance(item, Exception):
                raise item
            return item

        assert R.retrying(call, outage) == "answer"
        assert len(lines) == 1 and "secret" not in lines[0]
        assert lines[0].startswith("study database postgresql://"), lines
        assert (
            "connection lost (terminating connection due to administrator command); "
            "reconnected after" in lines[0]
        ), lines
        assert "[SQL" not in lines[0] and "Background" not in lines[0]
        with pytest.raises(ValueError):
            R.retrying(lambda: (_ for _ in ()).throw(ValueError("bad value")), outage)
        monkeypatch.setenv("TUNER_DB_OUTAGE_TIMEOUT", "0.3")

        def always() -> None:
            raise _lost()

        with pytest.raises(StorageUnavailable, match=r"unreachable for 0\.3s"):
            R.retrying(always, outage)
    finally:
        R.set_outage_sink(None)


@pytest.mark.postgres
def test_the_study_lock_says_when_its_session_was_lost(pg_storage: str) -> None:
    lock = StudyLock(pg_storage, "s")
    try:
        with lock.hold() as held:
            pass
        assert not held.lost
        with lock.hold() as held:
            assert terminate(pg_storage) >= 1  # the lock's own session
        assert held.lost
        with lock.hold() as held:  # taken again on a new session
            pass
        assert not held.lost
    finally:
        lock.close()


class _LockLostOnce:
    """A study lock whose first hold loses its session while another controller asks."""

    def __init__(self, study: optuna.Study) -> None:
        self.study, self.holds = study, 0

    @contextlib.contextmanager
    def hold(self) -> Iterator[Held]:
        held = Held()
        self.holds += 1
        yield held
        if self.holds == 1:
            self.study.ask()  # the other controller, inside the lost lock
            held.lost = True


def test_a_trial_made_beyond_the_budget_under_a_lost_lock_is_given_back() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    lock = _LockLostOnce(study)
    assert ask_within_budget(study, 1, lock) is None  # type: ignore[arg-type]
    mine, theirs = study.get_trials()
    assert (
        mine.state.name == "FAIL" and "beyond budget.trials=1" in mine.system_attrs["tuner:stale"]
    )
    assert theirs.state.name == "RUNNING" and counted_trials(study) == 1
