"""Each PyTorch example continues a killed trial from its checkpoint: a real campaign on CPU
whose first attempt is killed with SIGKILL after the checkpoint of epoch 1, retried because
the config says ``retry_on: [SIGKILL]``, and resumed through the framework's own mechanism
(``lineage.pytorch.restore_checkpoint``, Lightning's ``ckpt_path``, the Trainer's
``resume_from_checkpoint``).

To kill at a known point, the trial processes import a ``sitecustomize`` (on their
``PYTHONPATH``) that, in a first attempt, holds the process right after a checkpoint of
epoch 1 is committed and writes its pid; the test then kills that process from outside.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow]

CASES = {
    "pytorch-digits": ("torch", "lr", 0.3),
    "lightning-digits": ("lightning", "lr", 0.3),
    "transformers-tiny": ("transformers", "learning_rate", 0.003),
}

HOOK = """
import os, time
from lineage import checkpoints

_commit = checkpoints.commit


def commit(path, step, **kwargs):
    done = _commit(path, step, **kwargs)
    if step == 1 and os.environ.get("TUNER_ATTEMPT") == "1":
        with open(os.environ["HOLD_PID_FILE"] + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.replace(os.environ["HOLD_PID_FILE"] + ".tmp", os.environ["HOLD_PID_FILE"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the test kills this process
            time.sleep(0.05)
    return done


checkpoints.commit = commit
"""


def _config(config: dict[str, Any], lr_name: str, lr: float, root: Path) -> dict[str, Any]:
    fixed = {
        name: {"type": "categorical", "choices": [spec.get("choices", [spec.get("low")])[0]]}
        for name, spec in config["parameters"].items()
    }
    fixed["epochs"] = {"type": "categorical", "choices": [3]}
    fixed[lr_name] = {"type": "categorical", "choices": [lr]}
    config.update(
        parameters=fixed,
        workdir=str(root),
        budget={"trials": 1, "max_failures": 2},
        trial={"timeout": "180s", "grace_period": "5s", "retries": 1, "retry_on": ["SIGKILL"]},
        sampler={"name": "grid", "seed": 1},
        resources={"kind": "cpu", "parallel": 1},
    )
    return config


def _wait_for(path: Path, deadline: float, proc: subprocess.Popen[str]) -> str:
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the campaign ended first:\n{out[-2000:]}\n{err[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {path}")
        time.sleep(0.05)
    return path.read_text()


@pytest.mark.parametrize("name", list(CASES))
def test_a_killed_trial_resumes_from_its_checkpoint(
    name: str, python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str, read_run: Any
) -> None:
    import yaml

    from lineage.store import open_store
    from tuner.config import load_config

    module, lr_name, lr = CASES[name]
    importlib.import_module(module)  # a missing extra fails the test, never skips it
    config = yaml.safe_load((repo_root / f"configs/{name}.yaml").read_text())
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(_config(config, lr_name, lr, repo_root)))
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOK)
    pid_file = tmp_path / "held.pid"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(
        MLFLOW_TRACKING_URI=sqlite_uri,
        OMP_NUM_THREADS="1",
        PATH=f"{Path(python).parent}:{os.environ['PATH']}",
        PYTHONPATH=f"{hooks}:{repo_root}",
        HOLD_PID_FILE=str(pid_file),
    )
    proc = subprocess.Popen(
        [python, "-m", "tuner.cli", "run", str(path), "--quiet"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        pid = int(_wait_for(pid_file, time.monotonic() + 200, proc))
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-2000:] + err[-3000:]

    import optuna

    loaded = load_config(path)
    study = optuna.load_study(study_name=loaded.study_name, storage=loaded.optuna_storage_url())
    killed, retry = study.get_trials(deepcopy=False)
    assert killed.state.name == "FAIL" and retry.state.name == "COMPLETE"
    assert retry.user_attrs["tuner.resumed_step"] == 1
    # The pruner's curve: epoch 1 from the killed attempt, 2 and 3 from the retry.
    assert sorted(retry.intermediate_values) == [1, 2, 3]
    assert retry.intermediate_values[1] == killed.intermediate_values[1]

    store = open_store(sqlite_uri)
    ids = [e.experiment_id for e in store.resolve_experiments([name])]
    runs = {
        r.tags["tuner.trial_number"]: r for r in store.runs(ids) if "tuner.trial_number" in r.tags
    }
    second = read_run(sqlite_uri, runs["1"].run_id)
    assert second.tags["tuner.resumed_step"] == "1"
    # One continuous curve: epoch 1 taken over from the killed attempt, and the retry trained
    # only epochs 2 and 3 (the callback and the controller, from the report, may both log a
    # point of the same value at a step).
    assert sorted({s for s, _ in second.series("val_accuracy")}) == [1, 2, 3]
    # Per-step curves go on from the checkpoint's optimizer step instead of starting again;
    # once the retry ended, the killed attempt's steps before it were carried over: one
    # curve per series, each step once.
    first = read_run(sqlite_uri, runs["0"].run_id)
    spe = int(second.values["steps_per_epoch"])
    loss = [s for s, _ in second.series("loss")]
    assert len(loss) == len(set(loss)) and max(loss) > spe
    assert sorted(s for s in loss if s <= spe) == sorted(
        s for s, _ in first.series("loss") if s <= spe
    )
    assert sorted(s for s, _ in second.series("epoch_time")) == sorted(
        {s for s, _ in first.series("epoch_time") if s < 2} | {2, 3}
    )
