from __future__ import annotations

import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient


def test_cli_entry_points_answer_help() -> None:
    for module in ("lineage.cli", "tuner.cli"):
        out = subprocess.run(
            [sys.executable, "-m", module, "--help"], capture_output=True, text=True, check=True
        )
        assert "usage:" in out.stdout


@pytest.mark.slow
def test_store_fixture_is_a_migrated_mlflow_store(store_uri: str) -> None:
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.create_experiment("smoke")
    run = client.create_run(exp)
    client.log_metric(run.info.run_id, "loss", 0.5, step=1)
    assert client.get_run(run.info.run_id).data.metrics == {"loss": 0.5}


def test_test_modules_have_distinct_basenames() -> None:
    # tests/ has no __init__.py files: pytest imports each test module by its basename, so two
    # files of one name in different folders stop the whole collection (it happened once).
    from collections import Counter
    from pathlib import Path

    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
