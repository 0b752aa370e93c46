"""Each PyTorch example tuned by its campaign for real: trial processes, lineage runs, pruning.

The shipped configs are cut to two trials of eight epochs on a grid of two learning rates (one
good, one far too small) with every other parameter fixed, run one at a time: the seeded grid
runs the good one first, and the median pruner, once it completed, stops the second after its
first epoch, well before its last.
"""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow]

#: Enough epochs that a pruned trial visibly stops early: the pruner decides on epoch 1's
#: report and the trial sees the flag within an epoch or two.
EPOCHS = 8

CASES = {
    "pytorch-digits": ("torch", "lr", [0.3, 0.0001], "SGD"),
    "lightning-digits": ("lightning", "lr", [0.3, 0.0001], "SGD"),
    "transformers-tiny": ("transformers", "learning_rate", [0.003, 1e-6], "AdamW"),
}


def _small(config: dict[str, Any], lr_name: str, lrs: list[float], root: Path) -> dict[str, Any]:
    fixed = {
        name: {"type": "categorical", "choices": [spec.get("choices", [spec.get("low")])[0]]}
        for name, spec in config["parameters"].items()
        if name != lr_name
    }
    fixed["epochs"] = {"type": "categorical", "choices": [EPOCHS]}
    fixed[lr_name] = {"type": "categorical", "choices": lrs}
    config.update(
        parameters=fixed,
        workdir=str(root),
        budget={"trials": 2, "max_failures": 1},
        sampler={"name": "grid", "seed": 1},
        pruner={"name": "median", "options": {"n_startup_trials": 1, "n_warmup_steps": 0}},
        resources={"kind": "cpu", "parallel": 1},
    )
    return config


@pytest.mark.parametrize("name", list(CASES))
def test_campaign_tunes_records_and_prunes(
    name: str, python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str, read_run: Any
) -> None:
    import yaml

    from lineage.store import open_store

    module, lr_name, lrs, optimizer = CASES[name]
    importlib.import_module(module)  # a missing extra fails the test, never skips it
    config = yaml.safe_load((repo_root / f"configs/{name}.yaml").read_text())
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(_small(config, lr_name, lrs, repo_root)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(
        MLFLOW_TRACKING_URI=sqlite_uri,
        OMP_NUM_THREADS="1",
        PATH=f"{Path(python).parent}:{os.environ['PATH']}",
        PYTHONPATH=str(repo_root),
    )
    out = subprocess.run(
        [python, "-m", "tuner.cli", "run", str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    store = open_store(sqlite_uri)
    ids = [e.experiment_id for e in store.resolve_experiments([name])]
    trials = [r for r in store.runs(ids) if r.tags.get("lineage.run_type") == "trial"]
    states = sorted(r.tags["tuner.state"] for r in trials)
    assert len(trials) == 2 and "COMPLETE" in states and "PRUNED" in states, states
    for record in trials:
        view = read_run(sqlite_uri, record.run_id)
        v = view.values
        assert v["optimizer.name"] == optimizer
        assert float(v["optimizer.lr"]) == pytest.approx(float(v[lr_name]))
        # The script's callback and the controller (from the report) both log the metric.
        epochs = sorted({s for s, _ in view.series("val_accuracy")})
        trained = sorted(s for s, _ in view.series("epoch_time"))  # the callback's, per epoch
        if record.tags["tuner.state"] == "COMPLETE":
            assert epochs == trained == list(range(1, EPOCHS + 1))
        else:
            # A prune is asynchronous: the trial sees the flag at its next check, so it may
            # finish an epoch or two in flight, but it stops well before the last.
            assert epochs[:1] == [1] and trained[:1] == [1] and trained[-1] < EPOCHS - 2, trained
        assert view.series("loss") and view.tags["lineage.framework.pytorch"]
