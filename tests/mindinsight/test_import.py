"""``lineage import mindinsight`` on real summary directories, as a user runs it."""

from __future__ import annotations

import json
import os
import pty
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from lineage import tags
from lineage.mindinsight import find_runs, import_summaries
from lineage.store import open_store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tests.mindinsight.conftest import Summaries

pytestmark = pytest.mark.slow


def _cli(*args: str, uri: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineage.cli", *args, "--tracking-uri", uri],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _runs(uri: str, experiment: str) -> list[Any]:
    with open_store(uri) as store:
        (found,) = store.resolve_experiments([experiment])
        return store.runs([found.experiment_id])


def test_import_then_reimport_then_grow(
    copy_base: Path, sqlite_uri: str, summaries: Summaries, tmp_path: Path
) -> None:
    # The last training arrives later: it waits outside the base directory.
    later = sorted(copy_base.iterdir())[-1]
    later = later.rename(tmp_path / later.name)
    first = _cli(
        "import", "mindinsight", str(copy_base), "-e", "hist", "--format", "json", uri=sqlite_uri
    )
    assert first.returncode == 0, first.stderr
    results = json.loads(first.stdout)
    assert [r["status"] for r in results] == ["imported"] * 7
    runs = _runs(sqlite_uri, "hist")
    assert len(runs) == 7
    by_id = {r.tags["mindinsight.train_id"]: r for r in runs}
    for name, made in summaries.runs.items():
        if f"./{name}" not in by_id:
            continue
        run = by_id[f"./{name}"]
        assert run.status == "FINISHED"
        assert float(run.params["optimizer.lr"]) == made["lr"]
        assert float(run.params["momentum"]) == made["momentum"]
        assert 0.0 <= run.metrics["val_Accuracy"] <= 1.0
        assert run.name == name
        assert run.tags["mindinsight.base_dir"] == str(copy_base.resolve())
        assert len(run.tags["mindinsight.sha256"]) == 64
        # The training's own times, not the import's.
        assert run.start_time < run.end_time
    with open_store(sqlite_uri) as store:
        any_run = runs[0]
        assert len(store.metric_history(any_run.run_id, "loss")) >= 20
        assert [p.step for p in store.metric_history(any_run.run_id, "train_loss")] == [1, 2]
        assert "dataset/train_pipeline.json" in store.artifacts(any_run.run_id)

    again = _cli(
        "import", "mindinsight", str(copy_base), "-e", "hist", "--format", "json", uri=sqlite_uri
    )
    assert again.returncode == 0, again.stderr
    assert [r["status"] for r in json.loads(again.stdout)] == ["unchanged"] * 7
    assert len(_runs(sqlite_uri, "hist")) == 7
    assert "importing" not in again.stderr  # no progress bar through a pipe

    later.rename(copy_base / later.name)
    added = [f"./{later.name}"]
    grown = _cli(
        "import", "mindinsight", str(copy_base), "-e", "hist", "--format", "json", uri=sqlite_uri
    )
    assert grown.returncode == 0, grown.stderr
    statuses = {r["train_id"]: r["status"] for r in json.loads(grown.stdout)}
    assert [t for t, s in statuses.items() if s == "imported"] == added
    assert sum(s == "unchanged" for s in statuses.values()) == 7
    assert len(_runs(sqlite_uri, "hist")) == 8


def test_damaged_files_are_reported_and_the_other_runs_imported(
    copy_base: Path, sqlite_uri: str
) -> None:
    runs = find_runs(copy_base)
    bad_crc = runs[1].lineage_files[0]
    data = bytearray(bad_crc.read_bytes())
    (length,) = struct.unpack("<Q", data[:8])
    data[12 + length // 2] ^= 0xFF
    bad_crc.write_bytes(bytes(data))
    cut = runs[4].summary_files[0]
    cut.write_bytes(cut.read_bytes()[:-7])

    done = _cli(
        "import", "mindinsight", str(copy_base), "-e", "hurt", "--format", "json", uri=sqlite_uri
    )
    assert done.returncode == 1
    results = {r["train_id"]: r for r in json.loads(done.stdout)}
    failed = {t: r["error"] for t, r in results.items() if r["status"] == "failed"}
    assert set(failed) == {runs[1].train_id, runs[4].train_id}
    assert str(bad_crc) in failed[runs[1].train_id] and "bad CRC" in failed[runs[1].train_id]
    assert str(cut) in failed[runs[4].train_id] and "truncated" in failed[runs[4].train_id]
    # One line per damaged file on stderr, naming it; no traceback.
    assert "Traceback" not in done.stderr
    errors = [
        line for line in done.stderr.splitlines() if line.startswith("lineage import: error:")
    ]
    assert len(errors) == 2 and str(bad_crc) in done.stderr and str(cut) in done.stderr
    assert sum(r["status"] == "imported" for r in results.values()) == 6
    assert len(_runs(sqlite_uri, "hurt")) == 6


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, sqlite_uri: str) -> None:
    done = _cli("import", "mindinsight", str(tmp_path / "nope"), uri=sqlite_uri)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "nope" in done.stderr
    assert "must be an existing directory" in done.stderr


def test_progress_bar_on_a_terminal_only(copy_base: Path, sqlite_uri: str) -> None:
    argv = [
        sys.executable,
        "-m",
        "lineage.cli",
        "import",
        "mindinsight",
        str(copy_base),
        "--tracking-uri",
        sqlite_uri,
        "-e",
        "tty",
    ]
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env={**os.environ, "COLUMNS": "120"}
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=300) == 0
    os.close(master)
    on_tty = b"".join(chunks).decode(errors="replace")
    assert "importing" in on_tty  # the bar, drawn on the terminal (a pipe gets none: above)
    # On a terminal the summary may carry colour codes (rich highlights numbers), and a long
    # temporary path wraps it across lines: read the words.
    text = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", on_tty).split())
    assert ": 8 imported" in text, text[-2000:]


def test_import_is_idempotent_on_every_store(copy_base: Path, store_uri: str) -> None:
    results = import_summaries(copy_base, experiment="contract", tracking_uri=store_uri)
    assert [r.status for r in results] == ["imported"] * 8
    assert [
        r.status for r in import_summaries(copy_base, experiment="contract", tracking_uri=store_uri)
    ] == ["unchanged"] * 8
    runs = _runs(store_uri, "contract")
    assert len(runs) == 8
    assert {r.tags[tags.IMPORT_SOURCE] for r in runs} == {"mindinsight"}
    assert {r.tags[tags.MLFLOW_SOURCE_TYPE] for r in runs} == {"LOCAL"}
    # Created like every experiment lineage makes: the MLflow UI opens it on its runs.
    experiment = MlflowClient(tracking_uri=store_uri).get_experiment_by_name("contract")
    assert experiment.tags[tags.EXPERIMENT_KIND] == tags.EXPERIMENT_KIND_TRAINING


def test_a_changed_directory_replaces_its_run(copy_base: Path, sqlite_uri: str) -> None:
    """A directory imported while its training was still writing (here: before its
    evaluation lineage arrived) is imported again once it changed, in place of the old run."""
    run = find_runs(copy_base)[0]
    late = run.lineage_files[-1]
    content = late.read_bytes()
    late.unlink()
    import_summaries(copy_base, experiment="grow", tracking_uri=sqlite_uri)
    before = {r.tags["mindinsight.train_id"]: r for r in _runs(sqlite_uri, "grow")}
    assert "val_Accuracy" not in before[run.train_id].metrics
    late.write_bytes(content)
    results = {
        r.train_id: r.status
        for r in import_summaries(copy_base, experiment="grow", tracking_uri=sqlite_uri)
    }
    assert results.pop(run.train_id) == "replaced"
    assert set(results.values()) == {"unchanged"}
    after = {r.tags["mindinsight.train_id"]: r for r in _runs(sqlite_uri, "grow")}
    assert len(after) == 8
    assert after[run.train_id].run_id != before[run.train_id].run_id
    assert "val_Accuracy" in after[run.train_id].metrics


def test_importance_and_diagnose_run_on_the_imported_experiment(
    copy_base: Path, sqlite_uri: str
) -> None:
    assert (
        _cli("import", "mindinsight", str(copy_base), "-e", "digits", uri=sqlite_uri).returncode
        == 0
    )
    imp = _cli(
        "importance",
        "-e",
        "digits",
        "--target",
        "val_Accuracy",
        "--goal",
        "maximize",
        "--format",
        "json",
        uri=sqlite_uri,
    )
    assert imp.returncode == 0, imp.stderr
    ranked = json.loads(imp.stdout)
    names = json.dumps(ranked)
    assert "optimizer.lr" in names and "momentum" in names
    diag = _cli("diagnose", "-e", "digits", "--format", "json", uri=sqlite_uri)
    assert diag.returncode == 0, diag.stderr
    diagnosed = json.loads(diag.stdout)["runs"]
    assert len(diagnosed) == 8
    assert all(isinstance(r["findings"], list) for r in diagnosed)


@pytest.fixture
def mlflow_http(tmp_path: Path) -> Iterator[str]:
    """A real ``mlflow server`` on a SQLite file, on a free local port."""
    import signal
    import socket
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{tmp_path / 'server.db'}",
            "--artifacts-destination",
            str(tmp_path / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "mlflow server exited"
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_import_through_an_mlflow_server_keeps_stdout_json(
    copy_base: Path, mlflow_http: str
) -> None:
    # MLflow prints "View run ... at: <url>" when a run on a server ends; not into our JSON.
    first = _cli(
        "import", "mindinsight", str(copy_base), "-e", "srv", "--format", "json", uri=mlflow_http
    )
    assert first.returncode == 0, first.stderr
    assert [r["status"] for r in json.loads(first.stdout)] == ["imported"] * 8
    again = _cli(
        "import", "mindinsight", str(copy_base), "-e", "srv", "--format", "json", uri=mlflow_http
    )
    assert [r["status"] for r in json.loads(again.stdout)] == ["unchanged"] * 8
    runs = _runs(mlflow_http, "srv")
    assert len(runs) == 8 and all("val_Accuracy" in r.metrics for r in runs)
