"""Real MindSpore trainings provoked into failure, recorded through ``lineage``, diagnosed.

One session-scoped fixture runs the four trainings of ``examples/mindspore_digits/train.py``
concurrently as subprocesses into one SQLite MLflow store:

- learning rate 10: the loss runs away (Inf within the first epoch);
- learning rate 1e-7: the loss does not move (slow convergence);
- 40 training images for 40 epochs: the model memorises them (overfitting; its batch of 32
  is also nearly the whole training set);
- the example's defaults: a well-configured run, which must give no finding at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.mindspore]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "mindspore_digits" / "train.py"
TRAININGS = {
    "runaway": ["--lr", "10", "--epochs", "2"],
    "slow": ["--lr", "1e-7", "--epochs", "2"],
    "overfit": ["--lr", "0.1", "--train-size", "40", "--epochs", "40"],
    "healthy": ["--epochs", "3"],
}


@pytest.fixture(scope="session")
def provoked(
    tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> Iterator[dict[str, str]]:
    import mindspore  # noqa: F401  (the mindspore extra: a missing one fails)

    work = tmp_path_factory.mktemp("diagnose-mindspore")
    shutil.copyfile(_sqlite_template, work / "mlflow.db")
    uri = f"sqlite:///{work / 'mlflow.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env["MLFLOW_TRACKING_URI"] = uri
    procs = {
        name: subprocess.Popen(
            [sys.executable, str(SCRIPT), *argv, "--experiment", f"ms-{name}"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, argv in TRAININGS.items()
    }
    outputs = {name: proc.communicate(timeout=600)[0] for name, proc in procs.items()}
    for name, proc in procs.items():
        assert proc.returncode == 0, f"{name} training failed:\n{outputs[name][-3000:]}"

    from lineage.store import open_store

    with open_store(uri) as store:
        runs = {}
        for name in TRAININGS:
            (exp,) = store.resolve_experiments([f"ms-{name}"])
            (record,) = store.runs([exp.experiment_id])
            runs[name] = record.run_id
    yield {"uri": uri, **runs}


def _diagnose(provoked: dict[str, str], name: str) -> list:  # type: ignore[type-arg]
    from lineage.diagnose import diagnose_run

    return diagnose_run(provoked[name], tracking_uri=provoked["uri"])


def test_learning_rate_10_runs_away(provoked: dict[str, str]) -> None:
    findings = _diagnose(provoked, "runaway")
    assert findings[0].check == "loss_runaway" and findings[0].severity == "error"
    assert findings[0].evidence["metric"] == "loss"
    assert findings[0].evidence["value"] in {"inf", "-inf", "nan"} or (
        findings[0].evidence["factor"] >= 100
    )
    lr = [f for f in findings if f.check == "hyperparameter_range"]
    assert len(lr) == 1 and lr[0].evidence["value"] == 10.0
    assert {f.check for f in findings} <= {"loss_runaway", "hyperparameter_range"}


def test_learning_rate_1e_7_converges_slowly(provoked: dict[str, str]) -> None:
    checks = [f.check for f in _diagnose(provoked, "slow")]
    assert "slow_convergence" in checks and "hyperparameter_range" in checks
    assert "loss_runaway" not in checks and "divergence" not in checks


def test_tiny_training_set_overfits(provoked: dict[str, str]) -> None:
    findings = _diagnose(provoked, "overfit")
    # batch 32 of 40 training images: 2 updates per epoch, which the checklist points out
    assert [f.check for f in findings] == ["overfitting", "near_full_batch"]
    assert findings[1].evidence["train_size"] == 40 and findings[1].evidence["value"] == 32
    assert findings[0].evidence["metric"] == "val_loss"
    assert findings[0].evidence["value"] > 3 * findings[0].evidence["train_value"]


def test_well_configured_run_has_no_finding(provoked: dict[str, str]) -> None:
    assert _diagnose(provoked, "healthy") == []


def test_cli_json_on_the_provoked_runs(provoked: dict[str, str]) -> None:
    argv = [
        sys.executable,
        "-m",
        "lineage.cli",
        "diagnose",
        "--tracking-uri",
        provoked["uri"],
        "--where",
        "attributes.experiment like 'ms-%'",
        "--format",
        "json",
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    runs = {r["run_id"]: r["findings"] for r in json.loads(out.stdout)["runs"]}
    assert runs[provoked["healthy"]] == []
    assert runs[provoked["runaway"]][0]["check"] == "loss_runaway"
    assert {"step", "value", "window"} <= set(runs[provoked["runaway"]][0]["evidence"])


def _first_stops(provoked: dict[str, str], name: str) -> dict[str, int | None]:
    """Each recorded metric replayed report by report through ``online_check`` (as the tuner's
    default early stop reads a running trial): the first report count that stops it."""
    import math

    from lineage.diagnose import online_check
    from lineage.store import open_store

    with open_store(provoked["uri"]) as store:
        histories = store.metric_histories(provoked[name])
    stops: dict[str, int | None] = {}
    for metric, points in histories.items():
        steps = [p.step for p in points]
        # MLflow stores +/-Inf as +/-max float; a running trial reports the infinity itself
        values = [
            math.copysign(math.inf, p.value) if abs(p.value) >= sys.float_info.max else p.value
            for p in points
        ]
        stops[metric] = next(
            (n for n in range(1, len(values) + 1) if online_check(metric, steps[:n], values[:n])),
            None,
        )
    return stops


def test_early_stop_stops_the_runaway_training_and_not_the_healthy_or_slow_ones(
    provoked: dict[str, str],
) -> None:
    runaway = _first_stops(provoked, "runaway")
    assert runaway["loss"] is not None
    for name in ("healthy", "slow"):
        stops = _first_stops(provoked, name)
        assert "loss" in stops and "val_accuracy" in stops
        assert all(n is None for n in stops.values()), (name, stops)
