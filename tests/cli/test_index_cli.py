"""``lineage index``: covering indexes inside an MLflow SQLite store, kept up to date by
SQLite itself, that change query speed and nothing else."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from _cli_helpers import PlainStore, lineage

pytestmark = pytest.mark.slow

QUERY = (
    "--format",
    "json",
    "--where",
    "params.optimizer = 'adam' and metrics.loss < 2",
    "--sort=-metrics.accuracy",
)


@pytest.fixture
def store_copy(plain_store: PlainStore, tmp_path: Path) -> str:
    """The plain-mlflow store copied, so that indexing it leaves the shared one alone."""
    src = plain_store.uri.removeprefix("sqlite:///")
    shutil.copyfile(src, tmp_path / "mlflow.db")
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def _states(uri: str, *flags: str) -> dict[str, str]:
    out = lineage("index", "--tracking-uri", uri, "--format", "json", *flags).stdout
    return {i["name"]: i["state"] for i in json.loads(out)}


def _sqlite_indexes(uri: str) -> set[str]:
    with sqlite3.connect(uri.removeprefix("sqlite:///")) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    return {r[0] for r in rows if r[0].startswith("lineage_")}


def test_index_creates_reports_and_drops_without_changing_answers(store_copy: str) -> None:
    before = lineage("runs", "--tracking-uri", store_copy, *QUERY).stdout
    assert set(_states(store_copy, "--check").values()) == {"absent"}
    assert set(_states(store_copy).values()) == {"created"}
    assert _sqlite_indexes(store_copy) == {
        "lineage_params_key_value",
        "lineage_latest_metrics_key_value",
        "lineage_tags_key_value",
    }
    assert set(_states(store_copy).values()) == {"present"}  # idempotent
    assert set(_states(store_copy, "--check").values()) == {"present"}
    after = lineage("runs", "--tracking-uri", store_copy, *QUERY).stdout
    assert json.loads(after) == json.loads(before) and len(json.loads(after)) == 2
    table = lineage("index", "--tracking-uri", store_copy, "--check").stdout
    assert "lineage_params_key_value" in table and "present" in table
    assert set(_states(store_copy, "--drop").values()) == {"dropped"}
    assert _sqlite_indexes(store_copy) == set()
    assert set(_states(store_copy, "--drop").values()) == {"absent"}


def test_an_indexed_store_stays_right_while_mlflow_writes(store_copy: str) -> None:
    from mlflow.tracking import MlflowClient

    lineage("index", "--tracking-uri", store_copy)
    client = MlflowClient(tracking_uri=store_copy)  # MLflow opens and migrates-checks it
    exp = client.get_experiment_by_name("baseline")
    assert exp is not None
    run = client.create_run(exp.experiment_id, run_name="late").info.run_id
    client.log_param(run, "optimizer", "rmsprop")
    client.log_metric(run, "loss", 0.5)
    client.set_terminated(run)

    def found(where: str) -> list[str]:
        out = lineage("runs", "--tracking-uri", store_copy, "--format", "json", "--where", where)
        return [r["run_name"] for r in json.loads(out.stdout)]

    assert found("params.optimizer = 'rmsprop' and metrics.loss <= 0.5") == ["late"]
    client.log_metric(run, "loss", 0.9, step=1)  # latest value changes: the index follows
    assert found("params.optimizer = 'rmsprop' and metrics.loss <= 0.5") == []
    assert found("metrics.loss > 0.8 and params.optimizer in ('rmsprop')") == ["late"]
    runs = client.search_runs([exp.experiment_id], "params.optimizer = 'rmsprop'")
    assert [r.info.run_id for r in runs] == [run]  # MLflow reads it as before
    client.delete_run(run)
    assert found("params.optimizer = 'rmsprop'") == []


def test_index_refuses_what_is_not_an_mlflow_sqlite_store(tmp_path: Path) -> None:
    cases = {
        "postgresql://postgres@127.0.0.1:5432/postgres": "SQLite stores only",
        f"sqlite:///{tmp_path / 'nope.db'}": "does not exist",
    }
    other = tmp_path / "optuna.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE studies (study_id INTEGER PRIMARY KEY)")
    cases[f"sqlite:///{other}"] = "not an MLflow tracking store"
    for uri, message in cases.items():
        proc = lineage("index", "--tracking-uri", uri, check=False)
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert "Traceback" not in proc.stderr
    with sqlite3.connect(other) as db:  # nothing was written into the foreign database
        assert (
            db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index'").fetchone()[0] == 0
        )
