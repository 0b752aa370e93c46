"""``lineage runs/show/diff/export`` in subprocesses, on runs logged by plain mlflow."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from _cli_helpers import PlainStore, lineage

pytestmark = pytest.mark.slow


def test_runs_json_is_a_list_of_full_objects(plain_store: PlainStore) -> None:
    out = lineage("runs", "--tracking-uri", plain_store.uri, "--format", "json")
    runs = json.loads(out.stdout)
    assert [r["run_name"] for r in runs] == ["lonely", "trial2", "trial", "bench"]
    bench = runs[-1]
    assert bench["run_id"] == plain_store.ids["bench"]
    assert (bench["experiment"], bench["status"]) == ("baseline", "FINISHED")
    assert bench["params"] == {"lr": "0.1", "batch_size": "32", "optimizer": "sgd", "epochs": "5"}
    assert bench["metrics"] == {"loss": 0.25, "accuracy": pytest.approx(0.8)}
    assert bench["tags"]["mlflow.source.git.commit"] == "abc123"


def test_runs_where_or_sort_columns_csv(plain_store: PlainStore) -> None:
    out = lineage(
        "runs",
        "--tracking-uri",
        plain_store.uri,
        "--experiment",
        "baseline",
        "--where",
        "params.optimizer = 'sgd' or (params.lr < 0.01 and not params.warmup is null)",
        "--sort=-metrics.accuracy,params.lr",
        "--columns",
        "run_name,params.lr,metrics.accuracy",
        "--format",
        "csv",
    )
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows[0] == ["run_name", "params.lr", "metrics.accuracy"]
    assert [r[0] for r in rows[1:]] == ["bench", "trial2"]
    assert float(rows[1][2]) == pytest.approx(0.8)


def test_runs_experiment_by_id_limit_and_table(plain_store: PlainStore) -> None:
    everything = json.loads(
        lineage("runs", "--tracking-uri", plain_store.uri, "--format", "json").stdout
    )
    other_id = next(r["experiment_id"] for r in everything if r["experiment"] == "other")
    out = lineage("runs", "--tracking-uri", plain_store.uri, "-e", other_id, "--format", "json")
    assert [r["run_name"] for r in json.loads(out.stdout)] == ["lonely"]
    out = lineage(
        "runs", "--tracking-uri", plain_store.uri, "--sort", "metrics.loss", "--limit", "2",
        "--format", "json",
    )  # fmt: skip
    assert [r["run_name"] for r in json.loads(out.stdout)] == ["bench", "trial"]
    table = lineage("runs", "--tracking-uri", plain_store.uri).stdout
    assert "4 runs" in table and plain_store.ids["bench"][:8] in table and "baseline" in table


def test_show_summarises_metrics_identity_artifacts(plain_store: PlainStore) -> None:
    rid = plain_store.ids["bench"]
    out = lineage("show", rid[:7], "--tracking-uri", plain_store.uri, "--format", "json")
    shown = json.loads(out.stdout)
    assert shown["run_id"] == rid and shown["params"]["optimizer"] == "sgd"
    metrics = {m["key"]: m for m in shown["metrics"]}
    loss, acc = metrics["loss"], metrics["accuracy"]
    assert (loss["goal"], loss["best"], loss["best_step"], loss["max"]) == ("min", 0.25, 3, 1.0)
    assert (loss["last"], loss["last_step"], loss["count"]) == (0.25, 3, 4)
    assert acc["goal"] == "max" and acc["best"] == pytest.approx(0.8) and acc["min"] == 0.5
    assert shown["identity"]["mlflow.source.git.commit"] == "abc123"
    assert "mlflow.source.name" in shown["identity"]
    assert shown["artifacts"] == ["ckpt/weights.txt"]
    table = lineage("show", rid, "--tracking-uri", plain_store.uri).stdout
    for word in ("params", "best", "identity", "ckpt/weights.txt", "min"):
        assert word in table


def test_diff_lists_hyperparameters_first(plain_store: PlainStore) -> None:
    a, b = plain_store.ids["bench"], plain_store.ids["trial2"]
    out = lineage("diff", a, b, "--tracking-uri", plain_store.uri, "--format", "json")
    diff = json.loads(out.stdout)
    assert (diff["a"]["run_id"], diff["b"]["run_id"]) == (a, b)
    sections = [d["section"] for d in diff["differences"]]
    assert sections == sorted(sections, key=["params", "metrics", "identity", "tags"].index)
    params = {d["key"]: d for d in diff["differences"] if d["section"] == "params"}
    assert set(params) == {"batch_size", "epochs", "lr", "optimizer", "warmup"}
    assert params["epochs"]["state"] == "only_a" and params["epochs"]["b"] is None
    assert params["warmup"]["state"] == "only_b"
    assert params["lr"] == {
        "section": "params",
        "key": "lr",
        "a": "0.1",
        "b": "0.001",
        "state": "changed",
    }
    identity = {d["key"] for d in diff["differences"] if d["section"] == "identity"}
    assert "mlflow.source.git.commit" in identity
    table = lineage("diff", a, b, "--tracking-uri", plain_store.uri).stdout
    assert "<absent>" in table and table.index("optimizer") < table.index("accuracy")
    same = json.loads(
        lineage("diff", a, b, "--all", "--tracking-uri", plain_store.uri, "--format", "json").stdout
    )
    assert any(d["state"] == "same" for d in same["differences"])


def test_export_csv_json_parquet(plain_store: PlainStore, tmp_path: Path) -> None:
    out = lineage("export", "--tracking-uri", plain_store.uri, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == 4 and rows[0]["run_name"] == "lonely"
    assert {"params.lr", "metrics.loss", "tags.mlflow.runName"} <= set(rows[0])
    target = tmp_path / "runs.json"
    lineage("export", "--tracking-uri", plain_store.uri, "--format", "json", "-o", str(target))
    assert len(json.loads(target.read_text())) == 4
    parquet = tmp_path / "runs.parquet"
    res = lineage(
        "export", "--tracking-uri", plain_store.uri, "--format", "parquet", "-o", str(parquet),
        "--where", "params.optimizer = 'adam'",
    )  # fmt: skip
    assert "wrote 2 runs" in res.stderr
    import pyarrow.parquet as pq

    table = pq.read_table(parquet)
    assert table.num_rows == 2
    assert str(table.schema.field("metrics.loss").type) == "double"
    assert sorted(table.column("params.lr").to_pylist()) == ["0.001", "0.05"]


def test_fast_path_never_imports_mlflow(plain_store: PlainStore) -> None:
    code = (
        "import sys, io, contextlib; from lineage.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        f"    rc = main(['runs', '--tracking-uri', {plain_store.uri!r}, '--format', 'json'])\n"
        "assert rc == 0 and len(buf.getvalue()) > 100\n"
        "assert 'mlflow' not in sys.modules, 'mlflow was imported'\n"
    )
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_filtered_query_loads_no_heavy_module(plain_store: PlainStore) -> None:
    """Start-up weight, checked without a clock: the modules `lineage runs --where ...` must
    not import (each costs ~1-5 ms of a ~60 ms call)."""
    heavy = ["typing", "dataclasses", "inspect", "shutil", "urllib.parse", "contextlib",
             "json", "mlflow", "pandas", "rich"]  # fmt: skip
    args = ["runs", "--tracking-uri", plain_store.uri, "--format", "json",
            "--where", "params.optimizer = 'adam' and metrics.loss < 1",
            "--sort=-metrics.accuracy"]  # fmt: skip
    code = (
        "import io, sys\n"
        "from lineage.cli import main\n"
        "out, sys.stdout = sys.stdout, io.StringIO()\n"
        f"rc = main({args!r})\n"
        "text, sys.stdout = sys.stdout.getvalue(), out\n"
        "assert rc == 0 and text.count('run_id') == 2, text\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == ""


def test_a_reader_that_leaves_early_gets_no_traceback(plain_store: PlainStore) -> None:
    """`lineage runs | head -1`: the console script exits quietly when its pipe closes."""
    import os
    import subprocess

    from _cli_helpers import CACHE_DIR

    env = {**os.environ, "LINEAGE_CACHE_DIR": CACHE_DIR}
    for fmt in ("csv", "json"):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lineage.cli",
                "runs",
                "--tracking-uri",
                plain_store.uri,
                "--format",
                fmt,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # before the command writes a byte
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0, err
        assert err == "", err
