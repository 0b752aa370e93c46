"""Schedulers beyond one controller on local slots: ASHA with promotion on the session's Ray
cluster, and three ``tuner worker``s sharing one set of rungs on a PostgreSQL study (no
paused trial promoted twice, exact budget)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from _services import MlflowServer

from tests.tuner.test_schedulers_asha import SCRIPT as ASHA_SCRIPT
from tuner.campaign import Controller
from tuner.config import load_config

ASHA = {"name": "asha", "mode": "promote", "min_resource": 1, "max_resource": 3, "brackets": 1}


def _base(tmp_path: Path, script: str, **over: Any) -> Path:
    (tmp_path / "trial.py").write_text(script)
    data: dict[str, Any] = {
        "name": "sched",
        "command": [sys.executable, "trial.py"],
        "reads_tuner_params": True,
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "trial": {"grace_period": 2},
        "sampler": {"name": "random", "seed": 11},
        "diagnosis": {"early_stop": False},
        **over,
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.ray
@pytest.mark.slow
def test_asha_promotes_a_paused_trial_on_ray(
    tmp_path: Path, sqlite_uri: str, ray_address: str
) -> None:
    (tmp_path / "bases").write_text("1.0 3.0 5.0 6.0 7.0")
    (tmp_path / "cut").write_text("3.0 5.0 6.0 7.0")
    path = _base(
        tmp_path,
        ASHA_SCRIPT,
        budget={"trials": 5, "max_failures": 3},
        resources={"kind": "gpu", "per_trial": 1, "parallel": 1},
        executor={"name": "ray", "address": ray_address},
        lineage={"tracking_uri": sqlite_uri},
        scheduler=ASHA,
    )
    config = load_config(path)
    result = Controller(config, importance=False, handle_signals=False).run()
    assert result.counts == {"COMPLETE": 2, "PRUNED": 3, "FAIL": 0}
    study = optuna.load_study(study_name="sched", storage=config.optuna_storage_url())
    trials = study.get_trials()
    (cont,) = [t for t in trials if "tuner.promoted_from" in t.user_attrs]
    paused = trials[cont.user_attrs["tuner.promoted_from"]]
    assert paused.user_attrs["tuner.paused_at"] == 1 and paused.state.name == "PRUNED"
    assert cont.state.name == "COMPLETE" and cont.user_attrs["tuner.resumed_step"] == 1
    assert sorted(cont.intermediate_values) == list(range(9))


@pytest.mark.ray
@pytest.mark.slow
def test_a_paused_ray_trial_computes_no_step_past_its_rung(
    tmp_path: Path, sqlite_uri: str, ray_address: str
) -> None:
    # Ray's warm slots (the default) carry the controller's verdicts to the trial's node: a
    # trial waits at its rung step as on local slots, so a pause there costs nothing more.
    from tests.tuner.test_pause_at_rung import SCRIPT as PAUSE_SCRIPT

    # After each commit the script notes what the verdict file on its node held: the trial
    # that goes on past its rung was let go by the controller's verdict, not by the timeout.
    script = PAUSE_SCRIPT.replace(
        "    trial.checkpointed(step)\n",
        "    trial.checkpointed(step)\n"
        "    seen = pathlib.Path(os.environ['TUNER_VERDICT'])\n"
        "    with open('verdicts', 'a') as fh:\n"
        "        fh.write(f'{trial.number()} {step} "
        "{seen.read_text().strip() if seen.exists() else -1}\\n')\n",
    )
    assert script != PAUSE_SCRIPT
    (tmp_path / "bases").write_text("1.0 3.0 5.0 6.0 7.0")
    path = _base(
        tmp_path,
        script,
        budget={"trials": 5, "max_failures": 3},
        resources={"kind": "cpu", "parallel": 1},
        executor={"name": "ray", "address": ray_address},
        lineage={"tracking_uri": sqlite_uri},
        scheduler={**ASHA, "max_resource": 9},
        trial={"grace_period": 60},
    )
    config = load_config(path)
    Controller(config, importance=False, handle_signals=False).run()
    study = optuna.load_study(study_name="sched", storage=config.optuna_storage_url())
    paused = [t for t in study.get_trials() if t.user_attrs.get("tuner.paused_at") is not None]
    assert paused
    computed: dict[int, list[int]] = {}
    for line in (tmp_path / "computed").read_text().splitlines():
        number, step = map(int, line.split())
        computed.setdefault(number, []).append(step)
    for t in paused:
        assert max(computed[t.number]) == t.user_attrs["tuner.paused_at"], (t.number, computed)
    verdicts = [
        tuple(map(int, line.split())) for line in (tmp_path / "verdicts").read_text().splitlines()
    ]
    # Trial 0 (the best) went on past rung 1: the verdict for step 1 had reached its node.
    assert any(n == 0 and step == 1 and seen >= 1 for n, step, seen in verdicts), verdicts


#: Six steps of a little work each, a checkpoint after each; the loss ranks trials by x.
SHARED = """
import json, time
from tuner import trial
x = float(trial.params()["x"])
resume = trial.resume_from()
start = 0 if resume is None else resume[1] + 1
for step in range(start, 6):
    time.sleep(0.1)
    trial.report(step, loss=x + 0.01 * step)
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"x": x}))
    trial.checkpointed(step)
    if trial.should_prune():
        break
"""


def _worker(config: Path, creds: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "worker", str(config), "--heartbeat", "1",
         "--stale-after", "4"],
        env={**os.environ, **creds}, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
        cwd=config.parent,
    )  # fmt: skip


@pytest.mark.postgres
@pytest.mark.slow
def test_three_workers_share_the_rungs_and_promote_nothing_twice(
    tmp_path: Path, pg_storage: str, mlflow_server: MlflowServer, mlflow_credentials: dict[str, str]
) -> None:
    path = _base(
        tmp_path,
        SHARED,
        budget={"trials": 9, "max_failures": 3},
        resources={"kind": "cpu", "parallel": 1},
        storage=pg_storage,
        lineage={"tracking_uri": mlflow_server.url, "experiment": f"sched-{tmp_path.name}"},
        checkpoint={"store": "shared", "path": str(tmp_path / "checkpoints")},
        scheduler={**ASHA, "max_resource": 5},
    )
    procs = [_worker(path, mlflow_credentials, tmp_path / f"w{i}.log") for i in range(3)]
    deadline = time.monotonic() + 300
    for i, proc in enumerate(procs):
        assert proc.wait(max(1.0, deadline - time.monotonic())) == 0, (
            tmp_path / f"w{i}.log"
        ).read_text()[-3000:]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(pg_storage)
    try:
        study = optuna.load_study(study_name="sched", storage=storage)
        trials = study.get_trials()
        from tuner.coordination import counted_trials

        assert counted_trials(study) == 9
        assert not [t.number for t in trials if t.state.name in ("RUNNING", "WAITING")]
        paused = [t for t in trials if t.user_attrs.get("tuner.paused_at") is not None]
        assert paused, [(t.number, t.state.name, t.user_attrs) for t in trials]
        promoted = [
            t.user_attrs["tuner.promoted_from"]
            for t in trials
            if "tuner.promoted_from" in t.user_attrs
        ]
        assert len(promoted) == len(set(promoted)), f"promoted twice: {promoted}"
        for number in promoted:
            assert trials[number].state.name == "PRUNED"
            assert trials[number].user_attrs["tuner.paused_at"] in (1, 3)
        for cont in (t for t in trials if "tuner.promoted_from" in t.user_attrs):
            assert cont.user_attrs["tuner.resumed_step"] >= 1
    finally:
        storage.engine.dispose()


PBT = {"name": "pbt", "interval": 2, "quantile": 0.5, "perturb": {"x": {"factor": [0.8, 1.2]}}}


def _members_end_complete(trials: list[optuna.trial.FrozenTrial], n: int) -> list[Any]:
    """The exploit records, after checking each member's newest trial completed its curve
    and no trial was replaced twice."""
    from tuner.schedulers import member_of

    newest: dict[int, Any] = {}
    for t in trials:
        newest[member_of(t)] = t
    assert len(newest) == n, sorted(newest)
    for t in newest.values():
        assert t.state.name == "COMPLETE" and sorted(t.intermediate_values) == list(range(8))
    exploits = [t.user_attrs["tuner.exploit"] for t in trials if "tuner.exploit" in t.user_attrs]
    replaced = [e["replaces"] for e in exploits]
    assert len(replaced) == len(set(replaced)), f"replaced twice: {replaced}"
    return exploits


@pytest.mark.ray
@pytest.mark.slow
def test_pbt_exploits_on_ray(tmp_path: Path, sqlite_uri: str, ray_address: str) -> None:
    from tests.tuner.test_schedulers_pbt import SCRIPT as PBT_SCRIPT

    path = _base(
        tmp_path,
        PBT_SCRIPT,
        command=[sys.executable, "trial.py", "--x", "{x}"],
        reads_tuner_params=False,
        parameters={"x": {"type": "float", "low": 0.1, "high": 0.9}},
        env={"MEMBERS": "2"},
        budget={"trials": 2, "max_failures": 3},
        resources={"kind": "gpu", "per_trial": 1, "parallel": 2},
        executor={"name": "ray", "address": ray_address},
        lineage={"tracking_uri": sqlite_uri},
        scheduler={**PBT, "population": 2},
    )
    config = load_config(path)
    result = Controller(config, importance=False, handle_signals=False).run()
    assert result.counts["COMPLETE"] == 2
    study = optuna.load_study(study_name="sched", storage=config.optuna_storage_url())
    exploits = _members_end_complete(study.get_trials(), 2)
    assert exploits, "the worse member never copied the better one"


@pytest.mark.postgres
@pytest.mark.slow
def test_three_workers_share_one_population(
    tmp_path: Path, pg_storage: str, mlflow_server: MlflowServer, mlflow_credentials: dict[str, str]
) -> None:
    from tests.tuner.test_schedulers_pbt import SCRIPT as PBT_SCRIPT

    path = _base(
        tmp_path,
        PBT_SCRIPT,
        command=[sys.executable, "trial.py", "--x", "{x}"],
        reads_tuner_params=False,
        parameters={"x": {"type": "float", "low": 0.1, "high": 0.9}},
        env={"MEMBERS": "3"},
        budget={"trials": 3, "max_failures": 3},
        resources={"kind": "cpu", "parallel": 1},
        storage=pg_storage,
        lineage={"tracking_uri": mlflow_server.url, "experiment": f"pbt-{tmp_path.name}"},
        checkpoint={"store": "shared", "path": str(tmp_path / "checkpoints")},
        scheduler={**PBT, "population": 3},
    )
    procs = [_worker(path, mlflow_credentials, tmp_path / f"w{i}.log") for i in range(3)]
    deadline = time.monotonic() + 300
    for i, proc in enumerate(procs):
        assert proc.wait(max(1.0, deadline - time.monotonic())) == 0, (
            tmp_path / f"w{i}.log"
        ).read_text()[-3000:]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(pg_storage)
    try:
        study = optuna.load_study(study_name="sched", storage=storage)
        trials = study.get_trials()
        from tuner.coordination import counted_trials

        assert counted_trials(study) == 3
        assert not [t.number for t in trials if t.state.name in ("RUNNING", "WAITING")]
        exploits = _members_end_complete(trials, 3)
        assert exploits, [(t.number, t.state.name, t.user_attrs) for t in trials]
    finally:
        storage.engine.dispose()


@pytest.mark.postgres
@pytest.mark.slow
def test_two_workers_on_a_rising_loss_exploit_no_member_twice(
    tmp_path: Path, pg_storage: str, mlflow_server: MlflowServer, mlflow_credentials: dict[str, str]
) -> None:
    from tests.tuner.test_schedulers_pbt_ready import SCRIPT as RISING
    from tests.tuner.test_schedulers_pbt_ready import STEPS

    path = _base(
        tmp_path,
        RISING,
        command=[sys.executable, "trial.py", "--lr", "{lr}"],
        reads_tuner_params=False,
        parameters={"lr": {"type": "float", "low": 0.01, "high": 0.1}},
        budget={"trials": 2, "max_failures": 3},
        resources={"kind": "cpu", "parallel": 1},
        storage=pg_storage,
        lineage={"tracking_uri": mlflow_server.url, "experiment": f"pbt2-{tmp_path.name}"},
        checkpoint={"store": "shared", "path": str(tmp_path / "checkpoints")},
        scheduler={
            "name": "pbt",
            "population": 2,
            "interval": 1,
            "quantile": 0.5,
            "perturb": {"lr": {"factor": [0.8, 1.2]}},
        },
    )
    procs = [_worker(path, mlflow_credentials, tmp_path / f"w{i}.log") for i in range(2)]
    deadline = time.monotonic() + 300
    for i, proc in enumerate(procs):
        assert proc.wait(max(1.0, deadline - time.monotonic())) == 0, (
            tmp_path / f"w{i}.log"
        ).read_text()[-3000:]
    storage = optuna.storages.RDBStorage(pg_storage)
    try:
        study = optuna.load_study(study_name="sched", storage=storage)
        trials = study.get_trials()
        from tuner.coordination import counted_trials
        from tuner.schedulers import member_of

        assert counted_trials(study) == 2
        assert not [t.number for t in trials if t.state.name in ("RUNNING", "WAITING")]
        exploits = [
            t.user_attrs["tuner.exploit"] for t in trials if "tuner.exploit" in t.user_attrs
        ]
        replaced = [e["replaces"] for e in exploits]
        assert len(replaced) == len(set(replaced)), f"replaced twice: {replaced}"
        # Each decision judged a segment on a step it trained itself, an interval past its
        # copy: two workers never both decide about one segment, and a member decided about
        # twice at one step is a continuation that copied an earlier checkpoint and trained
        # that step again.
        by_number = {t.number: t for t in trials}
        for e in exploits:
            segment = by_number[e["replaces"]]
            copied = segment.user_attrs.get("tuner.exploit", {}).get("from_step", 0)
            assert member_of(segment) == e["member"], e
            assert e["step"] in segment.intermediate_values and e["step"] - copied >= 1, (e, copied)
        assert len(exploits) <= 2 * STEPS
        newest = {member_of(t): t for t in sorted(trials, key=lambda t: t.number)}
        assert sorted(t.state.name for t in newest.values()) == ["COMPLETE", "COMPLETE"]
    finally:
        storage.engine.dispose()
