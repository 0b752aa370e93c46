"""``lineage runs`` stays right while another process adds, updates and deletes runs, on
SQLite (where the CLI keeps a run-table cache that must never serve a stale answer) and on
PostgreSQL."""

from __future__ import annotations

import json

import pytest
from _cli_helpers import lineage

pytestmark = pytest.mark.slow


def _runs(uri: str, *extra: str) -> list[dict[str, object]]:
    out = lineage("runs", "--tracking-uri", uri, "--format", "json", *extra)
    return list(json.loads(out.stdout))


def test_cli_sees_other_writers_at_once(store_uri: str) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store_uri)
    exp = client.create_experiment("live")
    first = client.create_run(exp, run_name="first", start_time=1).info.run_id
    client.log_metric(first, "loss", 1.0)
    assert [r["run_name"] for r in _runs(store_uri)] == ["first"]
    assert [r["run_name"] for r in _runs(store_uri)] == ["first"]  # from the cache
    second = client.create_run(exp, run_name="second", start_time=2).info.run_id
    client.log_metric(second, "loss", 0.5)
    assert [r["run_name"] for r in _runs(store_uri)] == ["second", "first"]
    client.log_metric(first, "loss", 0.1, step=1)
    best = _runs(store_uri, "--sort", "metrics.loss", "--limit", "1")
    assert best[0]["run_name"] == "first" and best[0]["metrics"] == {"loss": 0.1}
    client.delete_run(second)
    assert [r["run_name"] for r in _runs(store_uri)] == ["first"]
    client.set_terminated(first, status="FAILED")
    assert _runs(store_uri, "--where", "status = 'failed'")[0]["run_name"] == "first"
