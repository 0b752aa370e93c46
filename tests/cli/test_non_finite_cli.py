"""A metric logged as an infinity or NaN prints as ``inf``, ``-inf`` and ``nan`` in every
output of ``lineage runs`` and ``lineage show``, on SQLite and PostgreSQL (MLflow's SQL stores
keep an infinity as the largest float). JSON has no such numbers: they are the strings
``"inf"``, ``"-inf"`` and ``"nan"`` there."""

from __future__ import annotations

import csv
import io
import json

import mlflow
from _cli_helpers import lineage

LOGGED = {"up": float("inf"), "down": float("-inf"), "lost": float("nan"), "fine": 0.5}
SHOWN = {"up": "inf", "down": "-inf", "lost": "nan", "fine": "0.5"}


def _log(uri: str) -> dict[str, str]:
    mlflow.set_tracking_uri(uri)
    experiment = mlflow.create_experiment("non-finite")
    ids = {}
    for name, value in LOGGED.items():
        with mlflow.start_run(experiment_id=experiment, run_name=name) as run:
            mlflow.log_param("lr", 0.1)
            mlflow.log_metric("train_loss", value, step=0)
            mlflow.log_metric("train_loss", value, step=1)
        ids[name] = run.info.run_id
    mlflow.set_tracking_uri("")
    return ids


def test_non_finite_metrics_print_as_such(store_uri: str) -> None:
    ids = _log(store_uri)
    common = ("--tracking-uri", store_uri, "-e", "non-finite")
    table = lineage("runs", *common).stdout
    for name, shown in SHOWN.items():
        (row,) = [line for line in table.splitlines() if f" {name} " in line]
        assert row.split()[2] == shown, table  # run, name, then the metric
    assert "e+308" not in table
    rows = list(csv.DictReader(io.StringIO(lineage("runs", *common, "--format", "csv").stdout)))
    assert {r["run_name"]: r["metrics.train_loss"] for r in rows} == SHOWN
    for columns in ((), ("--columns", "name,metrics.train_loss")):
        out = lineage("runs", *common, "--format", "json", *columns).stdout
        objects = [json.loads(line.rstrip(",")) for line in out.splitlines()[1:-1]]
        values = {
            o["run_name"]: o["metrics"]["train_loss"] if "metrics" in o else o["metrics.train_loss"]
            for o in objects
        }
        assert values == {**SHOWN, "fine": 0.5}, out
    for name, shown in SHOWN.items():
        out = lineage("show", ids[name], "--tracking-uri", store_uri).stdout
        (row,) = [line for line in out.splitlines() if "train_loss" in line]
        assert f" {shown} " in row and "e+308" not in out, out
        shown_json = json.loads(lineage("show", ids[name], "--tracking-uri", store_uri,
                                        "--format", "json").stdout)  # fmt: skip
        text = json.dumps(shown_json)
        assert "e+308" not in text and "Infinity" not in text and "NaN" not in text
        assert shown == "0.5" or f'"{shown}"' in text, text
