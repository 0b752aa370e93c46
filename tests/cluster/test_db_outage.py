"""The study database drops every connection, and refuses new ones for seconds, while three
`tuner worker`s (real trial processes, MLflow on SQLite) share its study on PostgreSQL: they
reconnect with backoff, say so in one line, and finish exactly the budget; no trial is lost,
run twice or left RUNNING, and a trial that ended during the outage keeps its result."""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from _pgfaults import campaign, refusing, sessions, terminate, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(1800)]

BUDGET, STEPS, SLEEP, OUTAGE = 8, 4, 0.5, 1.0


def _start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "tuner.cli", "worker", str(config)),
            *("--heartbeat", "1", "--stale-after", "4"),
        ],
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
        cwd=config.parent,
    )


def _trials(storage: str) -> list[optuna.trial.FrozenTrial]:
    # One session per look (no pool): the test's own connections are never the ones ended.
    if storage not in _LOOKS:
        _LOOKS[storage] = optuna.storages.RDBStorage(
            storage, engine_kwargs={"poolclass": sqlalchemy.pool.NullPool}
        )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name="shared", storage=_LOOKS[storage]).get_trials()


_LOOKS: dict[str, optuna.storages.RDBStorage] = {}


def _done(storage: str) -> int:
    return sum(t.state.is_finished() for t in _trials(storage))


def _running_process(storage: str) -> tuple[int, int] | None:
    """``(number, pid)`` of a trial whose process runs now, if any."""
    for trial in _trials(storage):
        launch = trial.user_attrs.get("tuner.launch") or {}
        if trial.state.name == "RUNNING" and launch.get("pid") and _alive(launch["pid"]):
            return trial.number, int(launch["pid"])
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (ended, not yet reaped by its controller, which waits for the database).
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def test_workers_survive_terminated_connections_and_an_outage(
    tmp_path: Path, pg_storage: str, sqlite_uri: str
) -> None:
    config = campaign(tmp_path, pg_storage, sqlite_uri, trials=BUDGET, steps=STEPS, sleep=SLEEP)
    logs = [tmp_path / f"worker{i}.log" for i in range(3)]
    procs = [_start(config, log) for log in logs]
    peak = [0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            with contextlib.suppress(Exception):
                peak[0] = max(peak[0], sessions(pg_storage))

    threading.Thread(target=sample, daemon=True).start()
    try:
        wait_for(lambda: _done(pg_storage) >= 1, 900, "a finished trial")
        terminated = [terminate(pg_storage)]  # the workers may still be starting
        wait_for(lambda: _done(pg_storage) >= 3, 600, "3 finished trials")
        hit: list[tuple[int, int]] = []
        wait_for(
            lambda: hit.extend(filter(None, [_running_process(pg_storage)])) or hit,
            600,
            "a running trial process",
        )
        number, pid = hit[0]
        with refusing(pg_storage):
            down = time.time()
            time.sleep(OUTAGE)
            # Until that trial's process has ended while the database is away.
            wait_for(lambda: not _alive(pid), 60, f"the end of trial {number}")
            up = time.time()
        wait_for(lambda: _done(pg_storage) >= 5, 600, "5 finished trials")
        terminated.append(terminate(pg_storage))
        codes = [proc.wait(600) for proc in procs]
    finally:
        sampling.set()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    texts = [log.read_text() for log in logs]
    assert codes == [0, 0, 0], "\n".join(t[-2000:] for t in texts)
    assert all(terminated), terminated

    # Database sessions stay bounded: per worker, the storage's pool (5, overflow 10) and
    # the study lock's one session.
    assert 0 < peak[0] <= 3 * 16, peak
    # Exactly the budget, each trial once, nothing left RUNNING or WAITING.
    trials = _trials(pg_storage)
    counted = [t for t in trials if "tuner:stale" not in t.system_attrs]
    assert len(counted) == BUDGET and {t.state.name for t in counted} == {"COMPLETE"}
    # A trial is superseded only if it never ran (made beyond the budget while the study
    # lock's session was lost, and given back).
    assert all("tuner.launch" not in t.user_attrs for t in trials if t not in counted)
    seen = [json.loads(p.read_text()) for p in (tmp_path / "seen").glob("*.json")]
    numbers = sorted(int(s["TUNER_TRIAL_NUMBER"]) for s in seen)
    assert numbers == sorted(t.number for t in counted), "each counted trial ran exactly once"
    # Every result sent arrived, with its value; trials that ended during the outage too.
    by_number = {t.number: t for t in counted}
    for trial in counted:
        x = trial.params["x"]
        assert trial.value is not None
        assert math.isclose(trial.value, (x - 0.3) ** 2 + 1.0 / STEPS, rel_tol=1e-9)
    ended_while_down = [s for s in seen if int(s["TUNER_TRIAL_NUMBER"]) == number]
    assert len(ended_while_down) == 1 and down < ended_while_down[0]["t1"] < up
    assert by_number[number].state.name == "COMPLETE"
    # Each worker said so in one line per outage; no raw SQLAlchemy text.
    for text in texts:
        assert "study database postgresql://" in text and "reconnected after" in text, text
        for raw in ("Background on this error", "[SQL:", "Traceback", "OperationalError"):
            assert raw not in text, text
    # The lineage store holds one finished run per trial.
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.get_experiment_by_name(f"shared-{tmp_path.name}")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id], max_results=200)
    trial_runs = [r for r in runs if r.data.tags.get("lineage.run_type") == "trial"]
    finished = [r for r in trial_runs if r.info.status == "FINISHED"]
    assert len(finished) == BUDGET, [r.info.status for r in trial_runs]
    assert {r.info.run_id for r in finished} == {s["MLFLOW_RUN_ID"] for s in seen}
    assert all(r.info.status != "RUNNING" for r in runs)
