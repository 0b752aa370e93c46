"""A whole campaign (``executor: ray``) on the local Ray cluster: device ids per trial, lineage,
and a trial whose Ray worker is killed is failed with the reason and retried with its
parameters, continuing from its last checkpoint."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from tuner.campaign import Controller
from tuner.config import load_config

pytestmark = [pytest.mark.ray, pytest.mark.slow]
TRIAL = str(Path(__file__).with_name("_trial.py"))


def _config(tmp_path: Path, sqlite_uri: str, address: str, **over: Any) -> Path:
    out = tmp_path / "seen"
    out.mkdir(exist_ok=True)
    data: dict[str, Any] = {
        "name": "ray-campaign",
        "command": [sys.executable, TRIAL, "3", "0.1", str(out)],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 4, "max_failures": 3},
        "trial": {"grace_period": 2, "retries": 1},
        "sampler": {"name": "random", "seed": 5},
        "pruner": {"name": "none"},
        "resources": {"kind": "gpu", "per_trial": 1, "parallel": 2},
        "executor": {"name": "ray", "address": address},
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": sqlite_uri},
        **over,
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_campaign_on_ray_gives_each_trial_its_own_gpu(
    tmp_path: Path, sqlite_uri: str, ray_address: str
) -> None:
    config = load_config(_config(tmp_path, sqlite_uri, ray_address))
    result = Controller(config, importance=False, handle_signals=False).run()
    assert result.counts == {"COMPLETE": 4, "PRUNED": 0, "FAIL": 0}
    seen = [json.loads(p.read_text()) for p in (tmp_path / "seen").glob("*.json")]
    assert sorted(int(s["TUNER_TRIAL_NUMBER"]) for s in seen) == [0, 1, 2, 3]
    assert {s["CUDA_VISIBLE_DEVICES"] for s in seen} <= {"0", "1"}
    for a in seen:
        for b in seen:
            if a is not b and a["t0"] < b["t1"] and b["t0"] < a["t1"]:
                assert a["CUDA_VISIBLE_DEVICES"] != b["CUDA_VISIBLE_DEVICES"]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    for s in seen:
        run = client.get_run(s["MLFLOW_RUN_ID"])
        assert run.info.status == "FINISHED"
        assert "loss" in run.data.metrics  # intermediate reports reached the lineage store


#: Eight steps, a checkpoint after each; while ``hold`` exists a step waits after its
#: checkpoint. Each attempt appends its trial number and the step it starts at to ``starts``.
CHECKPOINTING = """
import json, pathlib, sys, time
from tuner import trial
x = float(trial.params()["x"])
start = 0
resume = trial.resume_from()
if resume is not None:
    start = json.loads((resume[0] / "state.json").read_text())["step"] + 1
with open("starts", "a") as fh:
    fh.write(f"{trial.number()} {start}\\n")
for step in range(start, 8):
    trial.report(step, loss=x + 1.0 / (step + 1))
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"step": step}))
    trial.checkpointed(step)
    while step >= 2 and pathlib.Path("hold").exists():
        time.sleep(0.02)
"""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_trial_whose_ray_worker_dies_continues_from_its_checkpoint(
    tmp_path: Path, sqlite_uri: str, ray_address: str
) -> None:
    (tmp_path / "trial.py").write_text(CHECKPOINTING)
    path = _config(
        tmp_path,
        sqlite_uri,
        ray_address,
        command=[sys.executable, "trial.py"],
        budget={"trials": 1, "max_failures": 3},
        trial={"grace_period": 2, "retries": 1, "retry_on": ["SIGKILL"]},
        resources={"kind": "npu", "per_trial": 1, "parallel": 1},
        reads_tuner_params=True,
        checkpoint={"store": "local", "keep": 2},
    )
    config = load_config(path)
    controller = Controller(config, importance=False, handle_signals=False)
    (tmp_path / "hold").touch()
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(result=controller.run()))
    thread.start()
    deadline = time.monotonic() + 120
    victim = None
    while victim is None and time.monotonic() < deadline:
        time.sleep(0.1)
        for rt in list(controller.running.values()):
            pid = rt.handle.process_info().get("pid")
            # Held after its checkpoint of step 2, whose report the driver has received.
            if pid and 2 in rt.reported_steps:
                victim = (rt.number, rt.params, rt.run_id, int(pid))
    assert victim is not None
    number, params, first_run, child = victim
    os.kill(_ray_worker(child), signal.SIGKILL)
    deadline = time.monotonic() + 60
    while _alive(child) and time.monotonic() < deadline:  # it dies with its worker
        time.sleep(0.05)
    assert not _alive(child)
    (tmp_path / "hold").unlink()
    thread.join(240)
    assert not thread.is_alive() and box["result"].counts == {"COMPLETE": 1, "PRUNED": 0, "FAIL": 0}

    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    failed = study.trials[number]
    assert failed.state.name == "FAIL"
    reason = failed.user_attrs["fail_reason"]
    # A task's worker (cold) or the slot's actor (warm) was lost.
    assert "lost (WorkerCrashedError)" in reason or "lost (ActorDiedError)" in reason
    (retry,) = [t for t in study.trials if t.user_attrs.get("tuner.retry_of") == number]
    assert retry.state.name == "COMPLETE" and retry.params == params
    assert retry.user_attrs["tuner.parent_trial"] == number
    assert retry.user_attrs["tuner.resumed_step"] == 2
    x = params["x"]
    assert retry.intermediate_values == {s: pytest.approx(x + 1.0 / (s + 1)) for s in range(8)}
    # The retry started after the checkpoint of step 2, in the same checkpoint folder.
    assert (tmp_path / "starts").read_text().split() == [str(number), "0", str(retry.number), "3"]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    run_id = retry.user_attrs["tuner.launch"]["run_id"]
    assert run_id != first_run
    assert client.get_run(run_id).data.tags["tuner.resumed_step"] == "2"
    curve = sorted((m.step, m.value) for m in client.get_metric_history(run_id, "loss"))
    assert [s for s, _ in curve] == list(range(8))  # one continuous curve, no step twice


def _ray_worker(pid: int) -> int:
    """The Ray worker a trial runs under: its parent for a cold trial, its warm parent's for
    a warm one (Ray titles its workers ``ray::...``)."""
    while pid > 1:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
            return pid
    raise AssertionError("the trial runs under no Ray worker")


#: Reports three steps, then kills the Ray worker it runs under at once: the reports are in
#: its channel on the node, and the worker dies before it could send them.
KILLS_ITS_WORKER = """
import os, pathlib, signal, time
from tuner import trial
for step in range(3):
    trial.report(step, loss=1.0 / (step + 1))
pid = os.getpid()
while pid > 1:
    pid = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    if pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
        os.kill(pid, signal.SIGKILL)
        break
time.sleep(60)
"""


@pytest.mark.parametrize("preload", [True, False], ids=["warm", "cold"])
def test_reports_a_dead_workers_node_still_holds_are_recorded(
    tmp_path: Path, sqlite_uri: str, ray_address: str, preload: bool
) -> None:
    (tmp_path / "trial.py").write_text(KILLS_ITS_WORKER)
    path = _config(
        tmp_path,
        sqlite_uri,
        ray_address,
        command=[sys.executable, "trial.py"],
        budget={"trials": 1, "max_failures": 2},
        trial={"grace_period": 2, "retries": 0, "preload": preload},
        resources={"kind": "cpu", "parallel": 1},
    )
    config = load_config(path)
    Controller(config, importance=False, handle_signals=False).run()
    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    (failed,) = study.trials
    assert failed.state.name == "FAIL" and "was lost" in failed.user_attrs["fail_reason"]
    # Read back from the node by a task pinned to it: every step the trial reported.
    assert failed.intermediate_values == {0: 1.0, 1: 0.5, 2: pytest.approx(1 / 3)}
