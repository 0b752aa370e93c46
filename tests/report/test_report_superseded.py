"""A report counts an interrupted or retried attempt with the trial that continues it."""

from __future__ import annotations

import json
from pathlib import Path

from mlflow import MlflowClient

from lineage import tags, trials
from lineage.report import report_experiment


def _run(client: MlflowClient, exp: str, number: int, lr: float, **kw: object) -> None:
    run = client.create_run(exp)
    run_id = run.info.run_id
    client.log_param(run_id, "lr", lr)
    trial_tags = {tags.CAMPAIGN: "c", tags.TRIAL_NUMBER: str(number)}
    if kw.get("parent") is not None:
        trial_tags[trials.PARENT_ATTR] = str(kw["parent"])
    trial_tags[tags.TRIAL_STATE] = str(kw.get("state", "COMPLETE"))
    for key, value in trial_tags.items():
        client.set_tag(run_id, key, value)
    for step in (1, 2, 3):
        if kw.get("value") is not None:
            client.log_metric(run_id, "acc", float(kw["value"]) * step / 3, step=step)
    client.set_terminated(run_id, str(kw.get("status", "FINISHED")))


def test_a_resumed_attempt_is_counted_apart_not_as_a_failure(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/m.db"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("resumed")
    _run(client, exp, 0, 0.1, value=0.5)
    _run(client, exp, 1, 0.2, state="FAIL", status="KILLED")  # killed, then resumed as 3
    _run(client, exp, 2, 0.3, state="FAIL", status="FAILED")  # failed its last attempt
    _run(client, exp, 3, 0.2, parent=1, value=0.7)
    _run(client, exp, 4, 0.4, value=0.6)
    report = report_experiment("resumed", tracking_uri=uri, out=tmp_path / "r", targets=["acc"])
    assert report.counts == {"COMPLETE": 3, "FAIL": 1, "superseded": 1}
    saved = json.loads((tmp_path / "r" / "report.json").read_text())
    assert saved["trials"] == report.counts
    assert "superseded 1" in (tmp_path / "r" / "report.html").read_text()
