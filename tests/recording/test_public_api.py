"""The public seams other packages (the tuner) use: ``lineage.recording``, ``lineage.uri``,
``lineage.masking``, ``lineage.tags``; run names and experiments ``lineage`` creates.

Against real stores (SQLite and PostgreSQL), read back through ``MlflowClient``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import lineage
from lineage import masking, tags
from lineage.recording import (
    Batch,
    TransientError,
    Writer,
    default_run_name,
    ensure_experiment,
    sql_writer,
)
from lineage.uri import (
    DEFAULT_TRACKING_URI,
    is_sql_uri,
    local_path,
    masked,
    postgres_conninfo,
    resolve_tracking_uri,
    scheme,
    sqlite_path,
)

pytestmark = pytest.mark.slow

SEEDED = """
import random, sys
import numpy as np
import lineage

random.seed(7)
np.random.seed(7)
with lineage.start_run(experiment="seeded", tracking_uri=sys.argv[1], params={"lr": 0.1}) as run:
    run.log_metric("loss", 0.5, step=1)
print(run.run_id)
"""


def test_seeded_scripts_get_distinct_meaningful_run_names(sqlite_uri: str, tmp_path: Path) -> None:
    """Two runs of one script that seeds ``random`` and numpy must not share a name, as
    MLflow's generated ones did (its generator draws from the seeded ``random``)."""
    script = tmp_path / "seeded_train.py"
    script.write_text(SEEDED)
    ids = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, str(script), sqlite_uri],
            capture_output=True,
            text=True,
            check=True,
        )
        ids.append(out.stdout.strip().splitlines()[-1])
    client = MlflowClient(tracking_uri=sqlite_uri)
    names = [client.get_run(i).info.run_name for i in ids]
    assert len(set(names)) == 2, names
    for name in names:
        assert name.startswith("seeded_train-") and len(name) == len("seeded_train-") + 6, name
        assert client.get_run(ids[0]).data.tags[tags.MLFLOW_RUN_NAME] == names[0]


def test_in_process_runs_after_the_same_seed_differ(sqlite_uri: str) -> None:
    """MindSpore's ``set_seed`` (which seeds ``random`` and numpy too), then two runs."""
    import random

    import mindspore

    names = []
    for _ in range(2):
        mindspore.set_seed(0)
        random.seed(0)
        with lineage.start_run(
            experiment="seeded", tracking_uri=sqlite_uri, record_identity=False
        ) as run:
            pass
        names.append(MlflowClient(tracking_uri=sqlite_uri).get_run(run.run_id).info.run_name)
    assert names[0] != names[1]
    random.seed(0)
    assert default_run_name(["/x/train.py"]) != default_run_name(["/x/train.py"])
    assert default_run_name(["-c"]).startswith("run-")
    assert default_run_name(["/env/ipykernel_launcher.py"]).startswith("notebook-")
    assert default_run_name(["/x/my train!.py"]).startswith("my-train-")


def test_explicit_run_name_is_kept(sqlite_uri: str) -> None:
    with lineage.start_run(
        experiment="named", run_name="baseline", tracking_uri=sqlite_uri, record_identity=False
    ) as run:
        pass
    assert MlflowClient(tracking_uri=sqlite_uri).get_run(run.run_id).info.run_name == "baseline"


def test_experiments_lineage_creates_open_on_their_runs(store_uri: str) -> None:
    client = MlflowClient(tracking_uri=store_uri)
    with lineage.start_run(
        experiment="fresh", tracking_uri=store_uri, record_identity=False
    ) as run:
        pass
    exp = client.get_experiment(run.experiment_id)
    assert exp.name == "fresh"
    assert exp.tags[tags.EXPERIMENT_KIND] == tags.EXPERIMENT_KIND_TRAINING
    # ensure_experiment: by client or by URI, the same id; an existing one is not re-tagged
    assert ensure_experiment(client, "fresh") == run.experiment_id
    assert ensure_experiment(store_uri, "fresh") == run.experiment_id
    other = client.create_experiment("made-by-mlflow")
    assert ensure_experiment(store_uri, "made-by-mlflow") == other
    assert tags.EXPERIMENT_KIND not in client.get_experiment(other).tags
    new = ensure_experiment(store_uri, "campaign-x")
    assert client.get_experiment(new).tags[tags.EXPERIMENT_KIND] == "custom_model_development"


def test_ensure_experiment_deleted_and_bad_names(sqlite_uri: str) -> None:
    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = ensure_experiment(client, "old")
    client.delete_experiment(exp)
    with pytest.raises(lineage.UsageError, match="'old' is deleted"):
        ensure_experiment(client, "old")
    assert ensure_experiment(client, "old", restore_deleted=True) == exp
    assert client.get_experiment(exp).lifecycle_stage == "active"
    with pytest.raises(lineage.UsageError, match="non-empty string, got ' '"):
        ensure_experiment(client, " ")


def test_sql_writer_batches_read_back_through_mlflow(store_uri: str) -> None:
    client = MlflowClient(tracking_uri=store_uri)
    exp = ensure_experiment(client, "bulk")
    run_id = client.create_run(exp).info.run_id
    writer = sql_writer(store_uri)
    assert isinstance(writer, Writer) and writer.kind.startswith("sql:")
    batch = Batch(
        points=[("loss", 1.0 / (s + 1), 1_700_000_000_000 + s, s) for s in range(50)],
        params={"lr": "0.1"},
        tags={"team": "vision"},
    )
    try:
        writer.write(run_id, batch)
        writer.write(run_id, batch)  # idempotent: a batch sent again duplicates nothing
        result = writer.write(run_id, Batch(params={"lr": "0.2"}))
        assert result.rejected_params == {"lr": ("0.1", "0.2")}
        assert writer.set_name(run_id, "trial-7")
        assert writer.set_status(run_id, "FINISHED", 1_700_000_100_000)
    finally:
        writer.close()
        writer.close()  # safe twice
    got = client.get_run(run_id)
    assert got.info.run_name == "trial-7" and got.data.tags[tags.MLFLOW_RUN_NAME] == "trial-7"
    assert got.info.status == "FINISHED" and got.info.end_time == 1_700_000_100_000
    assert got.data.params == {"lr": "0.1"} and got.data.tags["team"] == "vision"
    history = client.get_metric_history(run_id, "loss")
    assert [m.step for m in history] == list(range(50))
    assert got.data.metrics["loss"] == pytest.approx(1 / 50)


def test_set_start_time_moves_only_active_runs(store_uri: str) -> None:
    """A run created ahead of its work gets the work's start time; a deleted run keeps its
    own; the client writer cannot and says so."""
    from lineage._recording._client import ClientWriter

    client = MlflowClient(tracking_uri=store_uri)
    exp = ensure_experiment(client, "ahead")
    run_id = client.create_run(exp, start_time=1_700_000_000_000).info.run_id
    gone = client.create_run(exp, start_time=1_700_000_000_000).info.run_id
    client.delete_run(gone)
    writer = sql_writer(store_uri)
    assert writer is not None
    try:
        assert writer.set_start_time(run_id, 1_700_000_050_000)
        writer.set_start_time(gone, 1_700_000_050_000)
    finally:
        writer.close()
    assert client.get_run(run_id).info.start_time == 1_700_000_050_000
    assert client.get_run(gone).info.start_time == 1_700_000_000_000
    assert ClientWriter(client).set_start_time(run_id, 1) is False
    assert client.get_run(run_id).info.start_time == 1_700_000_050_000


def test_sql_writer_on_other_stores(tmp_path: Path, sqlite_uri: str) -> None:
    assert sql_writer(f"file://{tmp_path}/mlruns") is None
    assert sql_writer("http://127.0.0.1:5000") is None
    with pytest.raises(lineage.NotFoundError, match="does not exist"):
        sql_writer(f"sqlite:///{tmp_path}/none/mlflow.db")
    assert not (tmp_path / "none").exists()  # never creates the file
    with pytest.raises(lineage.StoreError) as info:
        sql_writer("postgresql://u:pw-zz@127.0.0.1:1/db")
    assert isinstance(info.value, TransientError) and "pw-zz" not in str(info.value)
    assert "\n" not in str(info.value)
    import sqlite3

    foreign = tmp_path / "optuna.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE studies (study_id INTEGER)")
    with pytest.raises(lineage.UsageError, match="not an MLflow tracking store"):
        sql_writer(f"sqlite:///{foreign}")


def test_uri_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert resolve_tracking_uri() == DEFAULT_TRACKING_URI == "sqlite:///mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://h:5000")
    assert resolve_tracking_uri() == "http://h:5000"
    assert resolve_tracking_uri("sqlite:///x.db") == "sqlite:///x.db"
    assert [
        scheme(u) for u in ("postgres://h/d", "postgresql+psycopg://h/d", "/a/b", "FILE:/x")
    ] == [
        "postgresql",
        "postgresql",
        "",
        "file",
    ]
    assert is_sql_uri("sqlite:///a.db") and is_sql_uri("postgres://h/d")
    assert not is_sql_uri("http://h") and not is_sql_uri("file:///tmp/mlruns")
    assert sqlite_path("sqlite:///rel/a.db") == "rel/a.db"
    assert sqlite_path("sqlite:////abs/a%20b.db?mode=ro") == "/abs/a b.db"
    for bad in ("sqlite://", "sqlite:///:memory:", "sqlite:rel.db"):
        with pytest.raises(lineage.UsageError, match=r"tracking URI must .*, got 'sqlite"):
            sqlite_path(bad)
    assert postgres_conninfo("postgresql+psycopg://u@h:5/d") == "postgresql://u@h:5/d"
    assert local_path("file:///tmp/a%20b") == "/tmp/a b"
    assert local_path("mlruns") == "mlruns" and local_path("s3://bucket/x") is None
    assert masked("postgresql://u:secret@h/d") == "postgresql://u:****@h/d"
    assert masked("http://h/x?token=abc") == "http://h/x?token=****"
    assert masked("sqlite:///plain.db") == "sqlite:///plain.db"


def test_masking_is_one_rule_set() -> None:
    assert masking.mask_uri("see postgresql://u:pw@h/db") == "see postgresql://u:****@h/db"
    assert masking.mask_argv(["train.py", "--api-key", "k-1", "--lr", "0.1"]) == [
        "train.py",
        "--api-key",
        masking.MASK,
        "--lr",
        "0.1",
    ]
    assert masking.mask_mapping({"HF_TOKEN": "x", "CUDA_VISIBLE_DEVICES": "0"}) == {
        "HF_TOKEN": masking.MASK,
        "CUDA_VISIBLE_DEVICES": "0",
    }
    assert masking.is_secret_name("db.password") and not masking.is_secret_name("tokenizer")
    secrets = masking.secret_values(["--password", "hunter22"], {"API_TOKEN": "tok-12345"})
    assert masking.scrub_text("pw hunter22 and tok-12345", secrets) == (
        f"pw {masking.MASK} and {masking.MASK}"
    )
    assert masking.mask_nested({"a": ["http://u:p@h"]}) == {"a": ["http://u:****@h"]}
    assert masking.mask_value("token", "x") == masking.MASK


def test_recorded_tags_are_the_named_ones(sqlite_uri: str, tmp_path: Path) -> None:
    data = tmp_path / "train.csv"
    data.write_text("x,y\n1,2\n")
    with lineage.start_run(experiment="tags", tracking_uri=sqlite_uri, data=[str(data)]) as run:
        run.log_params({"lr": 0.1})
    got = MlflowClient(tracking_uri=sqlite_uri).get_run(run.run_id).data.tags
    for key in (
        tags.COMMAND,
        tags.HOST,
        tags.PYTHON,
        tags.GIT_COMMIT,
        tags.PARAM_TYPES,
        tags.OUTCOME,
        tags.MLFLOW_USER,
        tags.MLFLOW_SOURCE_NAME,
        tags.data_tag("train", "fingerprint"),
    ):
        assert key in got, key
    assert json.loads(got[tags.PARAM_TYPES]) == {"lr": "float"}
    assert got[tags.OUTCOME] == "FINISHED"
    assert tags.framework_tag("torch") == "lineage.framework.torch"
