"""Every open of a new store is safe at once: MLflow creates its schema on the first open of
an empty database, Optuna its tables; processes that race to do so (workers starting
together, `tuner status` or `lineage runs` beside them, trial scripts with ``lineage`` or plain
``mlflow``) must all get a store, and the store must be whole afterwards.

A store an older MLflow made (``tests/data/mlflow-2.9.2-*.sql``: MLflow 2.9.2's schema with
one run) is migrated by the first open of this MLflow; the openers of such a store race too.

Each round starts six openers, processes forked from one launcher that imported what they need
(``_race_opener.py``), that wait at one barrier (a file the test creates once every opener is
ready) and then open fresh stores together. ``LT_RACE_ROUNDS`` sets the
number of rounds of the six light openers per store kind, ``LT_RACE_WORKER_ROUNDS`` those with
two ``tuner worker``s; CI runs one of each, ``LT_RACE_ROUNDS=20 LT_RACE_WORKER_ROUNDS=20
pytest -n 0 tests/cluster/test_storage_race.py`` the whole check (about an hour on two
cores).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from _services import PG_BASE, pg_exec

from tuner.search import create_rdb

pytestmark = pytest.mark.postgres
OPENER = str(Path(__file__).with_name("_race_opener.py"))
ROUNDS = int(os.environ.get("LT_RACE_ROUNDS", "1"))
WORKER_ROUNDS = int(os.environ.get("LT_RACE_WORKER_ROUNDS", "1"))
TRIAL = str(Path(__file__).with_name("_trial.py"))


def test_clients_racing_to_create_the_tables_all_get_a_storage(pg_storage: str) -> None:
    # Stock RDBStorage fails here with a duplicate key on PostgreSQL's catalog (seen in 9 of
    # 12 racing constructions); the worker's kill -9 test once died of it.
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_one() -> None:
        start.wait()
        try:
            create_rdb(pg_storage).get_all_studies()
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []


def test_mlflow_opens_its_sql_stores_through_the_schema_lock() -> None:
    # The entry points live in the package's metadata: an install older than them leaves
    # every open of a new store unserialized, and this says how to fix it.
    from mlflow.tracking._model_registry.utils import _get_store_registry
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    from lineage.store._schema_lock import registry_store, tracking_store

    for scheme in ("sqlite", "postgresql"):
        assert _tracking_store_registry._registry[scheme] is tracking_store, "pip install -e ."
        assert _get_store_registry()._registry[scheme] is registry_store, "pip install -e ."


def _fresh_pg(databases: list[str]) -> str:
    name = f"lt_race_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}"')
    databases.append(name)
    return f"{PG_BASE}/{name}"


def _race(
    where: Path,
    openers: Sequence[Sequence[str]],
    *,
    early: str = "",
    timeout: float = 600,
    during: Callable[[], None] | None = None,
) -> None:
    """Start ``openers`` (each a ``_race_opener.py`` KIND ARGS..., a process of its own),
    release them together once all are ready, and assert that each exited 0 (or, for
    ``tuner status`` only, 2 with the one line ``early`` when it came before the campaign it
    asks about). ``during`` runs in a thread from the start signal on (a fault while they
    run)."""
    where.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, OPENER, str(where), json.dumps([list(o) for o in openers])]
    with open(where / "launcher.log", "wb") as log:
        launcher = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, cwd=where, start_new_session=True
        )
    try:
        deadline = time.monotonic() + timeout
        while not (where / "ready").exists():
            assert launcher.poll() is None, _logs(where, openers)
            assert time.monotonic() < deadline, "the openers did not get ready"
            time.sleep(0.02)
        (where / "go").touch()
        fault = threading.Thread(target=during, daemon=True) if during else None
        if fault is not None:
            fault.start()
        launcher.wait(max(1.0, deadline - time.monotonic()))
        if fault is not None:
            fault.join(60)
    finally:
        if launcher.poll() is None:  # the openers too: they are in its session
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
    assert launcher.returncode == 0, _logs(where, openers)
    for n, opener in enumerate(openers):
        code = int((where / f"exit-{n}").read_text())
        log = (where / f"opener-{n}.log").read_text(errors="replace")
        if early and opener[:2] == ["tuner", "status"] and code == 2:
            assert log.strip().splitlines() == [early], _logs(where, openers)
            continue
        assert code == 0, _logs(where, openers)


def _terminate_connections(database: str, *, times: int, every: float) -> None:
    """End every session on ``database`` ``times`` times, ``every`` seconds apart (a server
    restart or a failover, as the clients see it)."""
    for _ in range(times):
        time.sleep(every)
        pg_exec(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{database}' AND pid <> pg_backend_pid()"
        )


def _logs(where: Path, openers: Sequence[Sequence[str]]) -> str:
    def tail(name: str) -> str:
        path = where / name
        return path.read_text(errors="replace")[-2000:] if path.exists() else "(none)"

    parts = [f"--- launcher\n{tail('launcher.log')}"]
    parts += [f"--- {' '.join(o[:2])}\n{tail(f'opener-{n}.log')}" for n, o in enumerate(openers)]
    return "\n".join(parts)


def _usable(tracking: str, optuna_url: str, runs: int) -> None:
    """The MLflow store at its schema's head, holding ``runs`` finished runs with their
    metric, and the Optuna storage holding the study."""
    import optuna
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking)
    ids = [e.experiment_id for e in client.search_experiments()]
    found = client.search_runs(ids)
    assert len(found) == runs and {r.info.status for r in found} == {"FINISHED"}
    assert all(r.data.metrics.get("m") == 1.0 for r in found)
    storage = create_rdb(optuna_url)
    try:
        assert [s.study_name for s in optuna.get_all_study_summaries(storage)] == ["race"]
    finally:
        storage.engine.dispose()
    client._tracking_client.store.engine.dispose()


def _sqlite_round(where: Path, n: int) -> tuple[str, str, list[list[str]], int]:
    tracking = f"sqlite:///{where / 'mlflow.db'}"
    optuna_url = f"sqlite:///{where / 'optuna.db'}"
    if n % 2:
        # An empty database file (as `sqlite3 mlflow.db` leaves one): `lineage` reads it too.
        where.mkdir(parents=True, exist_ok=True)
        (where / "mlflow.db").touch()
        openers = [
            ["plain", tracking],
            ["start_run", tracking],
            ["start_run", tracking],
            ["lineage", "runs", "--tracking-uri", tracking, "--format", "json"],
            ["optuna", optuna_url],
            ["optuna", optuna_url],
        ]
        return tracking, optuna_url, openers, 3
    openers = [
        ["plain", tracking],
        ["plain", tracking],
        ["start_run", tracking],
        ["start_run", tracking],
        ["optuna", optuna_url],
        ["optuna", optuna_url],
    ]
    return tracking, optuna_url, openers, 4


def _pg_round(databases: list[str]) -> tuple[str, str, list[list[str]], int]:
    tracking, optuna_url = _fresh_pg(databases), _fresh_pg(databases)
    openers = [
        ["plain", tracking],
        ["start_run", tracking],
        ["start_run", tracking],
        ["lineage", "runs", "--tracking-uri", tracking, "--format", "json"],
        ["optuna", optuna_url],
        ["optuna", optuna_url],
    ]
    return tracking, optuna_url, openers, 3


@pytest.mark.slow
@pytest.mark.timeout(300 + 300 * ROUNDS)
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_six_openers_of_new_stores_all_succeed(
    kind: str, tmp_path: Path, _pg_databases: list[str]
) -> None:
    for n in range(ROUNDS):
        where = tmp_path / f"round-{n}"
        if kind == "sqlite":
            tracking, optuna_url, openers, runs = _sqlite_round(where, n)
        else:
            tracking, optuna_url, openers, runs = _pg_round(_pg_databases)
        _race(where, openers)
        _usable(tracking, optuna_url, runs)
        print(f"{kind} round {n + 1}/{ROUNDS}: six openers exited 0, the stores are whole")


def _campaign(where: Path, storage: str, tracking: str) -> Path:
    import yaml

    where.mkdir(parents=True, exist_ok=True)
    data = {
        "name": "campaign",
        "command": [sys.executable, TRIAL, "1", "0"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "reads_tuner_params": True,
        "budget": {"trials": 4},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "storage": storage,
        "lineage": {"tracking_uri": tracking, "experiment": "race"},
    }
    path = where / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow
@pytest.mark.timeout(300 + 600 * WORKER_ROUNDS)
def test_two_workers_on_a_new_sqlite_lineage_store_both_finish(
    tmp_path: Path, _pg_databases: list[str]
) -> None:
    # Two `tuner worker`s started together on one campaign (PostgreSQL study, a new SQLite
    # MLflow store), with `tuner status`, a plain mlflow script, a lineage script and an
    # Optuna client opening the same stores, while the study database's sessions are ended
    # three times in the first 9 s: both workers finish, none dies of MLflow's migrations
    # colliding ("Online migration expected to match one row").
    # LT_RACE_WORKER_ROUNDS=20 runs it 20 times.
    import optuna
    from mlflow.tracking import MlflowClient

    for n in range(WORKER_ROUNDS):
        where = tmp_path / f"round-{n}"
        storage = _fresh_pg(_pg_databases)
        tracking = f"sqlite:///{where / 'mlflow.db'}"
        config = str(_campaign(where, storage, tracking))
        worker = ["tuner", "worker", config, "--heartbeat", "1", "--stale-after", "30"]
        _race(
            where,
            [
                worker,
                worker,
                ["tuner", "status", config],
                ["plain", tracking],
                ["start_run", tracking],
                ["optuna", storage],
            ],
            early=f"tuner status: error: {config}: no campaign 'campaign' in {storage} yet; "
            "start it with `tuner run`",
            during=functools.partial(
                _terminate_connections, storage.rsplit("/", 1)[1], times=3, every=3.0
            ),
        )
        study = optuna.load_study(study_name="campaign", storage=storage)
        states = [t.state for t in study.trials]
        assert states == [optuna.trial.TrialState.COMPLETE] * 4, states
        client = MlflowClient(tracking_uri=tracking)
        found = client.search_runs([e.experiment_id for e in client.search_experiments()])
        assert sum(r.data.metrics.get("m") == 1.0 for r in found) == 2  # the two scripts
        assert {r.info.status for r in found} == {"FINISHED"}
        client._tracking_client.store.engine.dispose()
        print(f"workers round {n + 1}/{WORKER_ROUNDS}: both workers finished the 4 trials")


DATA = Path(__file__).resolve().parents[1] / "data"


def _legacy_sqlite(where: Path) -> str:
    """A SQLite MLflow store as MLflow 2.9.2 left it (schema, one experiment, one run)."""
    import sqlite3

    where.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(where / "mlflow.db") as conn:
        conn.executescript((DATA / "mlflow-2.9.2-sqlite.sql").read_text(encoding="utf-8"))
    return f"sqlite:///{where / 'mlflow.db'}"


def _legacy_pg(databases: list[str]) -> str:
    """A PostgreSQL MLflow store as MLflow 2.9.2 left it."""
    import psycopg

    url = _fresh_pg(databases)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((DATA / "mlflow-2.9.2-postgresql.sql").read_text(encoding="utf-8"))  # type: ignore[arg-type]
    return url


@pytest.mark.slow
@pytest.mark.timeout(300 + 300 * ROUNDS)
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_six_openers_of_a_store_an_older_mlflow_made_all_succeed(
    kind: str, tmp_path: Path, _pg_databases: list[str]
) -> None:
    # The first open by this MLflow migrates the old schema (about thirty alembic steps); the
    # others must wait for it rather than run the same migrations at once, and the old run
    # must read back whole afterwards.
    from mlflow.tracking import MlflowClient

    for n in range(ROUNDS):
        where = tmp_path / f"round-{n}"
        tracking = _legacy_sqlite(where) if kind == "sqlite" else _legacy_pg(_pg_databases)
        _race(
            where,
            [
                ["plain", tracking],
                ["plain", tracking],
                ["start_run", tracking],
                ["start_run", tracking],
                ["lineage", "runs", "--tracking-uri", tracking, "--format", "json"],
                ["lineage", "runs", "--tracking-uri", tracking, "-e", "legacy", "--format", "csv"],
            ],
        )
        client = MlflowClient(tracking_uri=tracking)
        legacy = client.get_experiment_by_name("legacy")
        assert legacy is not None
        (old,) = client.search_runs([legacy.experiment_id])
        assert old.data.params == {"lr": "0.01", "optimizer": "sgd"}
        history = client.get_metric_history(old.info.run_id, "loss")
        assert [(m.step, m.value) for m in history] == [(0, 0.9), (1, 0.5), (2, 0.3)]
        ids = [e.experiment_id for e in client.search_experiments()]
        fresh = [r for r in client.search_runs(ids) if r.data.metrics.get("m") == 1.0]
        assert len(fresh) == 4 and {r.info.status for r in fresh} == {"FINISHED"}
        client._tracking_client.store.engine.dispose()
        print(f"{kind} legacy round {n + 1}/{ROUNDS}: six openers exited 0, the old run reads back")
