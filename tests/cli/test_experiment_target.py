"""An experiment's target (the tag a campaign writes on its experiment) is what ``lineage
show``, ``export`` and ``report`` lead with, whichever runs a query selects. The store is a
real SQLite MLflow store; the target, ``score``, is to be minimised although its name says
nothing of it (a reader guessing from the name would maximise it)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from _cli_helpers import lineage
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient


@pytest.fixture
def tagged(sqlite_uri: str) -> tuple[str, list[str]]:
    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.create_experiment("tagged")
    client.set_experiment_tag(exp, "lineage.target", "score:minimize")
    client.set_experiment_tag(exp, "lineage.tuned", "x")
    ids = []
    for i in range(6):
        run = client.create_run(exp, run_name=f"r{i}", start_time=1_000 * (i + 1)).info.run_id
        metrics = [Metric("score", 5.0 - i + s, 1_000 * (i + 1) + s, s) for s in range(3)]
        metrics.append(Metric("accuracy", 0.1 * i, 0, 0))
        params = [Param("x", str(i)), Param("y", str(i % 2))]
        client.log_batch(run, metrics=metrics, params=params)
        client.set_terminated(run)
        ids.append(run)
    return sqlite_uri, ids


def test_show_leads_with_the_target_and_its_goal(tagged: tuple[str, list[str]]) -> None:
    uri, ids = tagged
    shown = json.loads(lineage("show", ids[0], "--tracking-uri", uri, "--format", "json").stdout)
    first = shown["metrics"][0]
    assert (first["key"], first["goal"], first["best"], first["best_step"]) == (
        "score",
        "min",
        5.0,
        0,
    )


def test_export_puts_the_target_first_among_the_metrics(tagged: tuple[str, list[str]]) -> None:
    uri, _ = tagged
    out = lineage("export", "-e", "tagged", "--tracking-uri", uri, "--where", "params.y = '1'")
    header = next(csv.reader(io.StringIO(out.stdout)))
    metrics = [h for h in header if h.startswith("metrics.")]
    assert metrics == ["metrics.score", "metrics.accuracy"]


def test_report_takes_the_target_from_the_experiment(
    tagged: tuple[str, list[str]], tmp_path: Path
) -> None:
    uri, _ = tagged
    args = ["report", "-e", "tagged", "--tracking-uri", uri, "--format", "json"]
    out = lineage(*args, "--where", "params.y = '0'", "-o", str(tmp_path / "r"))
    # No --target: the experiment names it, and its goal (not guessed from the name).
    report = json.loads(out.stdout)
    assert report["trials"], report
    assert not any("guessed" in n for n in report["notes"]), report["notes"]


def test_an_infinite_metric_reads_inf_in_runs_and_show(tagged: tuple[str, list[str]]) -> None:
    uri, ids = tagged
    client = MlflowClient(tracking_uri=uri)
    client.log_metric(ids[1], "train_loss", float("inf"))
    client.log_metric(ids[2], "train_loss", float("-inf"))
    table = lineage(
        "runs", "-e", "tagged", "--tracking-uri", uri, "-c", "run_name,metrics.train_loss"
    )
    rows = dict(line.split() for line in table.stdout.splitlines()[2:] if len(line.split()) == 2)
    assert (rows["r1"], rows["r2"]) == ("inf", "-inf"), table.stdout
    shown = lineage("show", ids[1], "--tracking-uri", uri).stdout
    assert "1.79769e+308" not in shown and " inf " in shown, shown
