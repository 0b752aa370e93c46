"""The recording contract, run against every SQL backend (SQLite, PostgreSQL).

What ``lineage`` writes straight into MLflow's tables must read back through
``MlflowClient`` exactly as if MLflow had written it.
"""

from __future__ import annotations

import math
import time

import pytest
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

import lineage
from lineage import NotFoundError, UsageError
from lineage._params import decode_params, types_tag_from_tags

pytestmark = pytest.mark.slow


def _history(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, int, float]]:
    return sorted((m.step, m.timestamp, m.value) for m in client.get_metric_history(run_id, key))


def test_params_metrics_tags_read_back_through_mlflow(store_uri: str) -> None:
    params = {
        "optimizer": {"name": "adam", "lr": 3e-4, "betas": [0.9, 0.999]},
        "epochs": 5,
        "amp": True,
    }
    with lineage.start_run(
        experiment="contract",
        run_name="r",
        params=params,
        tags={"team": "vision"},
        tracking_uri=store_uri,
    ) as run:
        assert lineage.active_run() is run
        for step in range(300):
            run.log_metric("loss", 1.0 / (step + 1), step=step)
        run.log_metrics({"acc": 0.5, "f1": 0.25}, step=299)
        run.set_tags({"stage": "done"})
    assert lineage.active_run() is None
    client = MlflowClient(tracking_uri=store_uri)
    got = client.get_run(run.run_id)
    assert got.info.status == "FINISHED" and got.info.run_name == "r"
    assert client.get_experiment(got.info.experiment_id).name == "contract"
    assert got.data.params == {
        "optimizer.name": "adam",
        "optimizer.lr": "0.0003",
        "optimizer.betas": "[0.9, 0.999]",
        "epochs": "5",
        "amp": "True",
    }
    assert decode_params(got.data.params, types_tag_from_tags(got.data.tags)) == {
        "optimizer.name": "adam",
        "optimizer.lr": 3e-4,
        "optimizer.betas": [0.9, 0.999],
        "epochs": 5,
        "amp": True,
    }
    assert got.data.metrics == {"loss": 1.0 / 300, "acc": 0.5, "f1": 0.25}
    assert [s for s, _, _ in _history(client, run.run_id, "loss")] == list(range(300))
    assert got.data.tags["team"] == "vision" and got.data.tags["stage"] == "done"
    assert got.data.tags["lineage.outcome"] == "FINISHED"


def test_same_rows_as_mlflow_including_nan_inf_and_latest_rules(store_uri: str) -> None:
    """Log one sequence through stock MLflow and through lineage; compare what reads back."""
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.create_experiment("parity")
    stock = client.create_run(exp).info.run_id
    t = int(time.time() * 1000)
    # out of order steps, equal steps with later timestamps, NaN and infinities, a duplicate
    seq = [
        ("m", 1.0, t, 5),
        ("m", 2.0, t + 1, 3),
        ("m", math.nan, t + 2, 5),
        ("m", 0.5, t + 3, 5),
        ("m", 0.5, t + 3, 5),
        ("inf", math.inf, t, 0),
        ("inf", -math.inf, t + 1, 1),
        ("nan_last", 1.0, t, 0),
        ("nan_last", math.nan, t + 5, 9),
    ]
    for key, value, ts, step in seq:
        client.log_batch(stock, metrics=[Metric(key, value, ts, step)])
    with lineage.start_run(
        experiment="parity", tracking_uri=store_uri, record_identity=False
    ) as run:
        for key, value, ts, step in seq[:4]:
            run.log_metric(key, value, step=step, timestamp=ts)
        run.flush()  # a second batch must respect what the first stored in latest_metrics
        for key, value, ts, step in seq[4:]:
            run.log_metric(key, value, step=step, timestamp=ts)
    ours = client.get_run(run.run_id).data.metrics
    theirs = client.get_run(stock).data.metrics
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert (math.isnan(ours[key]) and math.isnan(theirs[key])) or ours[key] == theirs[key], key
        a = [
            (s, ts, "nan" if math.isnan(v) else v) for s, ts, v in _history(client, run.run_id, key)
        ]
        b = [(s, ts, "nan" if math.isnan(v) else v) for s, ts, v in _history(client, stock, key)]
        assert a == b, key
    assert ours["inf"] == -1.7976931348623157e308 and math.isnan(ours["nan_last"])


def test_params_are_immutable_with_a_clear_error(store_uri: str) -> None:
    with lineage.start_run(
        experiment="p", params={"lr": 0.1}, tracking_uri=store_uri, record_identity=False
    ) as run:
        run.log_params({"lr": 0.1})  # same value: fine
        with pytest.raises(UsageError, match=r"param 'lr' is already '0.1'.*got '0.2'"):
            run.log_params({"lr": 0.2})
        with pytest.raises(UsageError, match="must be a number"):
            run.log_metric("loss", "high")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="has ended"):
        run.log_params({"b": 1})


def test_exception_in_block_ends_failed_and_keeps_points(store_uri: str) -> None:
    with (
        pytest.raises(RuntimeError),
        lineage.start_run(experiment="f", tracking_uri=store_uri, record_identity=False) as run,
    ):
        for i in range(50):
            run.log_metric("loss", float(i), step=i)
        raise RuntimeError("diverged: postgresql://u:pw@h/db")
    client = MlflowClient(tracking_uri=store_uri)
    got = client.get_run(run.run_id)
    assert got.info.status == "FAILED"
    assert len(client.get_metric_history(run.run_id, "loss")) == 50
    assert got.data.tags["lineage.error"] == "RuntimeError: diverged: postgresql://u:****@h/db"


def test_attach_via_mlflow_run_id_leaves_status_to_its_owner(
    store_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.create_experiment("tuned")
    created = client.create_run(exp, run_name="trial-0")
    client.log_param(created.info.run_id, "lr", "0.1")  # as the tuner does before launching
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store_uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", exp)
    monkeypatch.setenv("MLFLOW_RUN_ID", created.info.run_id)
    with lineage.start_run(experiment="ignored", params={"lr": 0.1, "bs": 32}) as run:
        assert run.run_id == created.info.run_id and not run.owns_run
        run.log_metric("acc", 0.9, step=1)
    got = client.get_run(created.info.run_id)
    assert got.info.status == "RUNNING"  # the tuner sets the final status from the exit code
    assert got.data.tags["lineage.outcome"] == "FINISHED"
    assert got.data.params == {"lr": "0.1", "bs": "32"} and got.data.metrics == {"acc": 0.9}
    # the script's types cover the param the tuner logged before it started
    assert decode_params(got.data.params, types_tag_from_tags(got.data.tags)) == {
        "lr": 0.1,
        "bs": 32,
    }
    assert got.info.run_name == "trial-0"
    monkeypatch.setenv("LINEAGE_END_ATTACHED_RUN", "1")
    with lineage.start_run() as run:
        assert run.owns_run
    assert client.get_run(created.info.run_id).info.status == "FINISHED"


def test_unknown_run_id_is_not_found(
    store_uri: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(NotFoundError, match="run_id names no run"):
        lineage.start_run(tracking_uri=store_uri, run_id="0" * 32)
    # Named by the environment, it is the process's input: one line and exit 2, as a bad flag.
    monkeypatch.setenv("MLFLOW_RUN_ID", "0" * 32)
    with pytest.raises(SystemExit) as stop:
        lineage.start_run(tracking_uri=store_uri)
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith("lineage: MLFLOW_RUN_ID names no run in ")
    assert lineage.active_run() is None


def test_dataset_tags_change_with_content(store_uri: str, tmp_path: object) -> None:
    from pathlib import Path

    data = Path(str(tmp_path)) / "data"
    data.mkdir()
    (data / "x.csv").write_text("1,2\n")
    client = MlflowClient(tracking_uri=store_uri)
    fps = []
    for content in ("1,2\n", "1,3\n"):
        (data / "x.csv").write_text(content)
        with lineage.start_run(
            experiment="d", data=[data], tracking_uri=store_uri, record_identity=False
        ) as run:
            pass
        tags = client.get_run(run.run_id).data.tags
        assert tags["lineage.data.data.path"] == str(data.resolve())
        assert (tags["lineage.data.data.size"], tags["lineage.data.data.files"]) == ("4", "1")
        fps.append(tags["lineage.data.data.fingerprint"])
    assert fps[0].startswith("sha256:") and fps[0] != fps[1]


def test_file_store_goes_through_mlflow_client(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (Path(str(tmp_path)) / "mlruns").as_uri()
    with lineage.start_run(
        experiment="files", params={"a": {"b": 1}}, tracking_uri=uri, record_identity=False
    ) as run:
        for i in range(1500):
            run.log_metric("loss", float(i), step=i)
    client = MlflowClient(tracking_uri=uri)
    assert run._recorder.writer.kind == "mlflow-client"
    got = client.get_run(run.run_id)
    assert got.info.status == "FINISHED" and got.data.params == {"a.b": "1"}
    assert len(client.get_metric_history(run.run_id, "loss")) == 1500


def test_no_secret_reaches_the_store(store_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scan every param and tag row written: argv, environment, config and URIs are masked."""
    import sys

    monkeypatch.setattr(
        sys, "argv", ["train.py", "--db-password", "hunter2", "--store=postgresql://u:pgpass1@h/db"]
    )
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok-secret-9")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    config = {
        "model": {"depth": 3},
        "wandb": {"api_key": "wk-secret-7"},
        "data_url": "s3://ak:sk-secret-5@bucket/x",
    }
    with lineage.start_run(
        experiment="s", params=config, tags={"hf_token": "hf-secret-3"}, tracking_uri=store_uri
    ) as run:
        run.set_tags({"note": "see https://bob:pw-secret-2@host/x"})
    got = MlflowClient(tracking_uri=store_uri).get_run(run.run_id)
    blob = repr(got.data.params) + repr(got.data.tags)
    for secret in (
        "hunter2",
        "pgpass1",
        "tok-secret-9",
        "wk-secret-7",
        "sk-secret-5",
        "hf-secret-3",
        "pw-secret-2",
    ):
        assert secret not in blob, secret
    assert got.data.params["model.depth"] == "3" and got.data.params["wandb.api_key"] == "****"
    assert '"CUDA_VISIBLE_DEVICES":"0"' in got.data.tags["lineage.env"]
    assert "--db-password" in got.data.tags["lineage.command"]


def test_run_deleted_under_the_writer_fails_fast_and_spills_to_disk(
    sqlite_uri: str, tmp_path: object
) -> None:
    """A deleted run is a failure no retry can cure: the batch is tried once, not retried
    with backoff until the flush timeout (checked by counting writes, not by a clock)."""
    import json
    from pathlib import Path

    from lineage import StoreError

    client = MlflowClient(tracking_uri=sqlite_uri)
    run = lineage.start_run(experiment="gone", tracking_uri=sqlite_uri, record_identity=False)
    run.log_metric("loss", 1.0, step=0)
    run.flush()
    recorder = run._recorder
    real_write = recorder.writer.write
    attempts: list[int] = []

    def counted(run_id: str, batch: object) -> object:
        attempts.append(len(batch.points))  # type: ignore[attr-defined]
        return real_write(run_id, batch)  # type: ignore[arg-type]

    recorder.writer.write = counted  # type: ignore[method-assign]
    client.delete_run(run.run_id)
    run.log_metric("loss", 0.5, step=1)
    with pytest.raises(StoreError, match="is deleted"):
        run.end()
    # The one batch holding the new point and the outcome tag, tried once; the writer
    # thread gave up (a fatal error) instead of backing off and retrying.
    assert attempts == [1]
    assert recorder.fatal is not None and not recorder._thread.is_alive()
    spilled = Path(str(tmp_path)) / f"lineage-unsent-{run.run_id}.jsonl"
    rows = [json.loads(line) for line in spilled.read_text().splitlines()]
    assert {
        "type": "metric",
        "key": "loss",
        "value": 0.5,
        "timestamp": rows[-1]["timestamp"],
        "step": 1,
    } in rows
    assert lineage.active_run() is None


def test_forked_child_does_not_end_the_parents_run(sqlite_uri: str) -> None:
    import os

    with lineage.start_run(
        experiment="fork", tracking_uri=sqlite_uri, record_identity=False
    ) as run:
        run.log_metric("loss", 1.0, step=0)
        pid = os.fork()
        if pid == 0:  # the child runs lineage's exit hook, as a worker that returns would
            from lineage._recording import _lifecycle

            try:
                _lifecycle._at_exit()
                os._exit(0 if lineage.active_run() is None else 3)
            finally:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert MlflowClient(tracking_uri=sqlite_uri).get_run(run.run_id).info.status == "RUNNING"
        run.log_metric("loss", 0.5, step=1)
    got = MlflowClient(tracking_uri=sqlite_uri).get_run(run.run_id)
    assert got.info.status == "FINISHED" and got.data.metrics == {"loss": 0.5}


def test_locked_sqlite_file_is_waited_out(sqlite_uri: str) -> None:
    """Another process holding the write lock longer than SQLite's busy timeout (1 s)."""
    import sqlite3

    from lineage.uri import sqlite_path

    run = lineage.start_run(experiment="lock", tracking_uri=sqlite_uri, record_identity=False)
    holder = sqlite3.connect(sqlite_path(sqlite_uri), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        for i in range(100):
            run.log_metric("loss", float(i), step=i)
        # The writer takes the batch and meets "database is locked"; it keeps the batch
        # (``_pending``, cleared only once written) and retries with backoff.
        deadline = time.monotonic() + 60
        while run._recorder._pending is None:
            assert time.monotonic() < deadline, "the writer never took the batch"
            time.sleep(0.05)
        stored = holder.execute(
            "SELECT COUNT(*) FROM metrics WHERE run_uuid = ?", (run.run_id,)
        ).fetchone()
        assert stored == (0,)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    run.end()
    assert len(MlflowClient(tracking_uri=sqlite_uri).get_metric_history(run.run_id, "loss")) == 100


def test_unknown_schema_falls_back_to_mlflow_client(sqlite_uri: str) -> None:
    import sqlite3

    from lineage.uri import sqlite_path

    with sqlite3.connect(sqlite_path(sqlite_uri)) as conn:
        conn.execute("ALTER TABLE metrics ADD COLUMN note VARCHAR(20)")
    with lineage.start_run(
        experiment="schema", tracking_uri=sqlite_uri, record_identity=False
    ) as run:
        assert run._recorder.writer.kind == "mlflow-client"
        run.log_metrics({"a": 1.0, "b": math.nan}, step=3)
    got = MlflowClient(tracking_uri=sqlite_uri).get_run(run.run_id)
    assert got.data.metrics["a"] == 1.0 and math.isnan(got.data.metrics["b"])
    assert got.info.status == "FINISHED"


def test_import_lineage_does_not_import_mlflow() -> None:
    import subprocess
    import sys

    code = "import sys, lineage; print('mlflow' in sys.modules, 'sqlalchemy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_first_run_on_a_new_sqlite_file_uses_the_sql_writer(tmp_path: object) -> None:
    from pathlib import Path

    uri = f"sqlite:///{Path(str(tmp_path)) / 'new' / 'mlflow.db'}"
    (Path(str(tmp_path)) / "new").mkdir()
    with lineage.start_run(experiment="fresh", tracking_uri=uri, record_identity=False) as run:
        assert run._recorder.writer.kind == "sql:sqlite"
        run.log_metric("loss", 1.0)
    assert MlflowClient(tracking_uri=uri).get_run(run.run_id).data.metrics == {"loss": 1.0}


def test_unreachable_store_is_one_clear_line() -> None:
    from lineage import StoreError

    with pytest.raises(StoreError) as info:
        lineage.start_run(tracking_uri="postgresql://u:pw-x@127.0.0.1:1/db", record_identity=False)
    message = str(info.value)
    assert "\n" not in message and "pw-x" not in message and "cannot be opened" in message
    assert lineage.active_run() is None
