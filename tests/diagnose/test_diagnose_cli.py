"""``lineage diagnose`` against a real MLflow SQLite store: JSON shape, table, exit codes."""

from __future__ import annotations

import json
import math
import subprocess
import time

import numpy as np
import pytest
from diag_curves import healthy_run

from lineage.cli import main


def _log(client, exp: str, name: str, hist, params, tags) -> str:  # type: ignore[no-untyped-def]
    from mlflow.entities import Metric, Param, RunTag

    run = client.create_run(exp, run_name=name)
    rid = run.info.run_id
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, s) for k, points in hist.items() for s, v in points]
    for i in range(0, len(metrics), 1000):
        client.log_batch(rid, metrics=metrics[i : i + 1000])
    client.log_batch(
        rid,
        params=[Param(k, str(v)) for k, v in params.items()],
        tags=[RunTag(k, str(v)) for k, v in tags.items()],
    )
    client.set_terminated(rid)
    return rid


@pytest.fixture
def store(sqlite_uri: str, seed: int) -> dict[str, str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.create_experiment("diag")
    rng = np.random.default_rng(seed)
    hist, params, tags = healthy_run(rng, "noisy_decreasing")
    healthy = _log(client, exp, "healthy", hist, params, tags)
    bad = dict(hist)
    bad["loss"] = [(s, v if s < 120 else math.nan) for s, v in hist["loss"]]
    runaway = _log(client, exp, "runaway", bad, {**params, "lr": "10"}, tags)
    analysis = _log(
        client, exp, "importance", {"loss": [(0, math.nan)]}, {}, {"lineage.run_type": "analysis"}
    )
    return {"uri": sqlite_uri, "healthy": healthy, "runaway": runaway, "analysis": analysis}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_json_for_one_run_and_an_experiment(
    store: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    uri = store["uri"]
    out = _json(capsys, ["diagnose", store["runaway"], "--tracking-uri", uri, "--format", "json"])
    (run,) = out["runs"]
    assert run["run_id"] == store["runaway"]
    checks = [f["check"] for f in run["findings"]]
    assert checks == ["loss_runaway", "hyperparameter_range"]
    runaway = run["findings"][0]
    assert set(runaway) >= {"check", "severity", "evidence", "causes", "next_steps"}
    assert runaway["severity"] == "error"
    assert runaway["evidence"]["step"] == 120 and runaway["evidence"]["value"] == "nan"
    assert runaway["evidence"]["window"] == [119, 120]
    assert all(isinstance(c, str) and c for c in runaway["causes"] + runaway["next_steps"])
    assert run["findings"][1]["evidence"]["param"] == "lr"

    out = _json(
        capsys, ["diagnose", "--experiment", "diag", "--tracking-uri", uri, "--format", "json"]
    )
    by_id = {r["run_id"]: r["findings"] for r in out["runs"]}
    assert set(by_id) == {store["healthy"], store["runaway"]}  # the analysis run is skipped
    assert by_id[store["healthy"]] == []

    out = _json(
        capsys,
        [
            "diagnose",
            "-e",
            "diag",
            "--where",
            "params.lr > 1",
            "--tracking-uri",
            uri,
            "--format",
            "json",
            "--check",
            "loss_runaway",
        ],
    )
    assert [[f["check"] for f in r["findings"]] for r in out["runs"]] == [["loss_runaway"]]


@pytest.mark.slow
def test_table_and_csv(store: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    uri = store["uri"]
    assert main(["diagnose", "-e", "diag", "--tracking-uri", uri]) == 0
    text = capsys.readouterr().out
    # One summary line per run with findings; the causes and next steps with --details.
    (row,) = [line for line in text.splitlines() if store["runaway"][:8] in line]
    assert "loss_runaway, hyperparameter_range" in row and "likely causes:" not in text
    assert f"no findings: 1 run: {store['healthy'][:8]}" in text
    assert main(["diagnose", "-e", "diag", "--tracking-uri", uri, "--details"]) == 0
    text = capsys.readouterr().out
    assert "error loss_runaway (loss, step 120, value nan, steps 119-120)" in text
    assert "likely causes:" in text and "next steps:" in text
    assert main(["diagnose", store["runaway"][:8], "--tracking-uri", uri, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "run_id,check,severity,subject,step,value,window,summary"
    assert lines[1].startswith(f"{store['runaway']},loss_runaway,error,loss,120,nan,119-120,")


@pytest.mark.slow
def test_bad_input_exits_2_with_one_line(store: dict[str, str], python: str) -> None:
    uri = store["uri"]
    cases = [
        ["diagnose", "0123456789abcdef", "--tracking-uri", uri],
        ["diagnose", "--tracking-uri", uri],
        ["diagnose", "-e", "nope", "--tracking-uri", uri],
        ["diagnose", store["healthy"], "--check", "nope", "--tracking-uri", uri],
    ]
    for argv in cases:
        proc = subprocess.run([python, "-m", "lineage.cli", *argv], capture_output=True, text=True)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lineage diagnose: error:"), proc.stderr
        assert "Traceback" not in proc.stderr


def test_cli_module_does_not_import_heavy_libraries(python: str) -> None:
    code = (
        "import sys, lineage.cli; lineage.cli.build_parser(); "
        "print(sorted(m for m in ('mlflow','numpy','sklearn') if m in sys.modules))"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    assert "mlflow" not in out.stdout, out.stdout


@pytest.mark.parametrize("argv", [["diagnose", "--help"]])
def test_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "--experiment" in capsys.readouterr().out


@pytest.mark.slow
def test_diagnose_run_in_process(store: dict[str, str]) -> None:
    from lineage import NotFoundError
    from lineage.diagnose import diagnose_run
    from lineage.store import open_store

    assert diagnose_run(store["healthy"], tracking_uri=store["uri"]) == []
    with open_store(store["uri"]) as st:
        record = st.get_run(store["runaway"])
        assert diagnose_run(record, store=st)[0].check == "loss_runaway"
        with pytest.raises(NotFoundError):
            diagnose_run("feedfacefeedface", store=st)


@pytest.mark.slow
def test_checklist_findings_through_a_real_store(
    sqlite_uri: str, seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # the three checklist checks read what lineage.mindspore records, from MLflow's tables
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.create_experiment("checklist")
    rng = np.random.default_rng(seed)
    loss = (0.3 + 2.0 * np.exp(-np.arange(45) / 45)) * np.exp(0.03 * rng.standard_normal(45))
    hist = {"loss": [(i + 1, float(v)) for i, v in enumerate(loss)], "val_loss": [(1, 0.6)]}
    short = {"epochs": 1, "batch_size": 32, "train_size": 1437, "steps_per_epoch": 45}
    one_epoch = _log(client, exp, "one-epoch", hist, short, {})
    big = {"epochs": 300, "batch_size": 1024, "train_size": 1437, "steps_per_epoch": 2}
    big_batch = _log(client, exp, "big-batch", {}, big, {})
    running = client.create_run(exp, run_name="still-running").info.run_id
    for s, v in hist["loss"]:
        client.log_metric(running, "loss", v, step=s)

    out = _json(
        capsys, ["diagnose", "-e", "checklist", "--tracking-uri", sqlite_uri, "--format", "json"]
    )
    by_id = {r["run_id"]: r["findings"] for r in out["runs"]}
    assert [f["check"] for f in by_id[one_epoch]] == ["undertrained", "too_few_epochs"]
    undertrained, too_few = by_id[one_epoch]
    assert undertrained["evidence"]["metric"] == "loss"
    assert undertrained["evidence"]["window"] == [37, 45]
    assert too_few["evidence"]["suggested_epochs"] == 3 and too_few["evidence"]["param"] == "epochs"
    assert [f["check"] for f in by_id[big_batch]] == ["near_full_batch"]
    assert by_id[big_batch][0]["evidence"]["value"] == 1024
    assert by_id[running] == []  # a run still in progress is not "undertrained"

    assert main(["diagnose", one_epoch, big_batch, "--tracking-uri", sqlite_uri]) == 0
    text = capsys.readouterr().out
    assert "undertrained" in text and "near_full_batch" in text
    assert "Raise epochs to at least 3 (135 updates)" in " ".join(text.split())
