"""``lineage importance`` end to end over a real SQLite store filled by plain ``mlflow``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from lineage.cli import main

BOWL = ["importance", "-e", "bowl", "--target", "loss", "--goal", "minimize"]


def _run(capsys: pytest.CaptureFixture[str], uri: str, *args: str) -> tuple[int, str, str]:
    rc = main([*args, "--tracking-uri", uri])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_shape(capsys: pytest.CaptureFixture[str], mlflow_uri: str) -> None:
    rc, out, _ = _run(capsys, mlflow_uri, *BOWL, "--format", "json")
    assert rc == 0
    doc = json.loads(out)
    assert doc["target"] == "loss" and doc["goal"] == "minimize" and doc["n_runs"] == 48
    params = doc["params"]
    assert params[0]["name"] == "lr"
    assert {"name", "importance", "ci", "correlation", "significant"} <= set(params[0])
    values = [p["importance"] for p in params]
    assert values == sorted(values, reverse=True)
    assert math.isclose(sum(values), 1.0, rel_tol=1e-9)
    for p in params:
        assert 0.0 <= p["ci"][0] <= p["importance"] <= p["ci"][1] <= 1.0
    by_name = {p["name"]: p for p in params}
    assert by_name["lr"]["significant"] and by_name["lr"]["log_scale"]
    assert by_name["optimizer"]["best"] == "adam" and by_name["optimizer"]["correlation"] is None
    assert not by_name["seed"]["significant"]
    assert doc["dropped"] == {"batch_size": "constant"}
    assert by_name["momentum"]["missing"] > 0
    assert doc["target_summary"]["count"] == 48
    top = doc["top_runs"]
    assert top[0]["loss"] == doc["target_summary"]["min"] and len(top) == 5


def test_table_shows_ranking_distribution_and_top_runs(
    capsys: pytest.CaptureFixture[str], mlflow_uri: str
) -> None:
    rc, out, _ = _run(capsys, mlflow_uri, *BOWL, "--runs-shown", "3")
    assert rc == 0
    assert "importance for loss" in out and "distribution of loss" in out
    assert "top 3 runs" in out and "trial-" in out
    assert "batch_size (constant)" in out


def test_csv_rows(capsys: pytest.CaptureFixture[str], mlflow_uri: str) -> None:
    rc, out, _ = _run(capsys, mlflow_uri, *BOWL, "--format", "csv", "--params", "lr", "seed")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == (
        "param,type,importance,ci_low,ci_high,significant,spearman,best,aliases,"
        "rank_best,rank_worst,verdict"
    )
    assert [line.split(",")[0] for line in lines[1:]] == ["lr", "seed"]


def test_top_fraction(capsys: pytest.CaptureFixture[str], mlflow_uri: str) -> None:
    rc, out, _ = _run(capsys, mlflow_uri, *BOWL, "--top", "0.5", "--format", "json")
    assert rc == 0
    doc = json.loads(out)
    assert doc["n_runs"] == 24 and doc["top"] == 0.5
    rc, _, err = _run(capsys, mlflow_uri, *BOWL, "--top", "0.1")
    assert rc == 2 and "keeps 5 of 48 runs" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-e", "nope", "--target", "loss", "--goal", "min"], "experiment 'nope' not found"),
        (["-e", "bowl", "--target", "acc", "--goal", "max"], "target metric 'acc' is not logged"),
        (["-e", "small", "--target", "loss", "--goal", "min"], "at least 8 runs"),
        (["-e", "bowl", "--target", "flat", "--goal", "min"], "'flat' is constant"),
        (["-e", "bowl", "--target", "loss", "--goal", "min", "--params", "wd"], "param 'wd'"),
        (["-e", "bowl", "--target", "loss", "--goal", "min", "--where", "params.zz = 1"], "zz"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], mlflow_uri: str, args: list[str], message: str
) -> None:
    rc, out, err = _run(capsys, mlflow_uri, "importance", *args)
    assert rc == 2, err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_log_records_an_analysis_run_with_plots(
    capsys: pytest.CaptureFixture[str], mlflow_uri: str, tmp_path: Path
) -> None:
    from matplotlib.image import imread
    from mlflow.tracking import MlflowClient

    rc, out, _ = _run(capsys, mlflow_uri, *BOWL, "--log", "--format", "json")
    assert rc == 0
    run_id = json.loads(out)["analysis_run_id"]
    client = MlflowClient(tracking_uri=mlflow_uri)
    run = client.get_run(run_id)
    assert run.data.tags["lineage.run_type"] == "analysis"
    assert run.info.status == "FINISHED"
    assert math.isclose(
        sum(v for k, v in run.data.metrics.items() if k.startswith("importance.")), 1.0
    )
    names = {f.path for f in client.list_artifacts(run_id, "importance")} | {
        f.path for f in client.list_artifacts(run_id, "importance/scatter")
    }
    for expected in [
        "importance/importance.png",
        "importance/importance.html",
        "importance/target_distribution.png",
        "importance/top_runs.csv",
        "importance/importance.json",
        "importance/scatter/lr.png",
        "importance/scatter/optimizer.png",
    ]:
        assert expected in names
    local = Path(client.download_artifacts(run_id, "importance", str(tmp_path)))
    image = imread(local / "importance.png")
    assert image.shape[0] > 300 and image.shape[1] > 600 and image.std() > 0.05
    scatter = imread(local / "scatter" / "lr.png")
    assert scatter.shape[0] > 300 and scatter.std() > 0.05
    page = (local / "importance.html").read_text(encoding="utf-8")
    assert "plotly" in page and "Top runs" in page and len(page) < 8_000_000
    # The analysis run is never taken for a training run.
    rc, out, _ = _run(capsys, mlflow_uri, *BOWL, "--format", "json")
    doc = json.loads(out)
    assert doc["n_runs"] == 48 and doc["excluded_runs"] == {"analysis runs": 1}
    rc, out, _ = _run(capsys, mlflow_uri, *BOWL)
    assert "runs left out: 1 analysis run\n" in out  # one run, said in the singular


def test_cli_process_reads_sql_store_without_importing_mlflow(mlflow_uri: str) -> None:
    code = (
        "import sys; from lineage.cli import main; rc = main(sys.argv[1:]); "
        "print('mlflow imported' if 'mlflow' in sys.modules else 'no mlflow', file=sys.stderr); "
        "sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *BOWL, "--tracking-uri", mlflow_uri, "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("no mlflow")
    assert json.loads(proc.stdout)["params"][0]["name"] == "lr"


@pytest.mark.postgres
def test_postgres_store_and_log(capsys: pytest.CaptureFixture[str], postgres_uri: str) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=postgres_uri)
    exp = client.create_experiment("pg")
    for i in range(12):
        run = client.create_run(exp, run_name=f"r{i}")
        lr, opt = 10.0 ** (-1 - i % 4), ["sgd", "adam"][i % 2]
        client.log_param(run.info.run_id, "lr", lr)
        client.log_param(run.info.run_id, "opt", opt)
        client.log_metric(run.info.run_id, "loss", abs(math.log10(lr) + 2.5) + (i % 2))
        client.set_terminated(run.info.run_id)
    args = ["importance", "-e", "pg", "--target", "loss", "--goal", "min", "--format", "json"]
    rc = main([*args, "--log", "--tracking-uri", postgres_uri])
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["n_runs"] == 12 and {p["name"] for p in doc["params"]} == {"lr", "opt"}
    tags = client.get_run(doc["analysis_run_id"]).data.tags
    assert tags["lineage.run_type"] == "analysis"
