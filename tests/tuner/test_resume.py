"""Crash and stop paths: kill -9 of the controller while trials run, then `tuner resume`;
SIGTERM to the controller. Nothing may stay RUNNING and the budget must come out exact."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.tuner.conftest import mlflow_runs, trials_of

if TYPE_CHECKING:
    from tuner.config import CampaignConfig

pytestmark = pytest.mark.slow

SCRIPT = """
import os, pathlib, time, argparse
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
pathlib.Path("pids").mkdir(exist_ok=True)
pathlib.Path("pids", str(os.getpid())).write_text(os.environ["TUNER_TRIAL_NUMBER"])
while pathlib.Path("slow").exists():
    time.sleep(0.05)
trial.report(0, loss=x)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _start(tmp_path: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "run", "campaign.yaml", "--quiet"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _poll(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout}s")
        time.sleep(0.1)


def _wait_for_pids(tmp_path: Path, n: int, config: CampaignConfig) -> list[int]:
    """The pids of ``n`` started trial processes, once the controller has recorded their
    launches in the study (what `tuner status` and `tuner resume` read)."""
    folder = tmp_path / "pids"

    def pids() -> list[int]:
        return [int(p.name) for p in folder.glob("*")] if folder.exists() else []

    def launched() -> int:
        return sum(
            1
            for t in trials_of(config)
            if t.state.name == "RUNNING" and "tuner.launch" in t.user_attrs
        )

    _poll(lambda: len(pids()) >= n, f"{n} trials did not start")
    _poll(lambda: launched() >= n, f"the controller did not record {n} launches")
    return pids()


def test_sigterm_then_kill9_then_resume_finishes_exact_budget(campaign, tmp_path, sqlite_uri, cli):
    config = campaign(
        SCRIPT, budget={"trials": 3}, resources={"parallel": 2}, trial={"grace_period": 1}
    )
    (tmp_path / "slow").touch()

    # 1. SIGTERM: running trials are stopped, marked FAIL (superseded) and re-queued.
    controller = _start(tmp_path)
    first = _wait_for_pids(tmp_path, 2, config)
    controller.send_signal(signal.SIGTERM)
    assert controller.wait(120) == 130
    assert not any(_alive(p) for p in first)
    trials = trials_of(config)
    states = [t.state.name for t in trials]
    # Two stopped and re-queued; the next trial may have been asked for already (WAITING).
    assert states.count("FAIL") == 2 and states.count("WAITING") in (2, 3)
    for t in trials:
        if t.state.name == "FAIL":
            assert t.user_attrs["fail_reason"] == "interrupted: the controller received SIGTERM"

    # 2. kill -9 while the re-queued trials run: they outlive their controller.
    for p in (tmp_path / "pids").iterdir():
        p.unlink()
    controller = _start(tmp_path)
    orphans = _wait_for_pids(tmp_path, 2, config)
    controller.kill()
    controller.wait(60)
    assert all(_alive(p) for p in orphans)
    rc, out, _ = cli("status", "campaign.yaml", "--format", "json")
    status = json.loads(out)
    assert status["controller"]["alive"] is False and status["stale"] is True
    # Two trial processes, and possibly the next trial already asked for (not started).
    launched = [r for r in status["running"] if r["launched"]]
    assert len(launched) == 2 and status["trials"]["RUNNING"] in (2, 3)
    assert {r["device"] for r in launched} == {"cpu#0", "cpu#1"}
    # Each running trial says where its process is: the pid the trial itself wrote.
    assert {r["pid"] for r in launched} == set(orphans)
    assert {r["host"] for r in launched} == {socket.gethostname()}
    assert all(r["elapsed_s"] >= 0 for r in status["running"])

    # 3. resume: orphans ended, stale trials failed and re-run with the same params.
    (tmp_path / "slow").unlink()
    rc, _, err = cli("resume", "campaign.yaml", "--quiet")
    assert rc == 0, err
    _poll(lambda: not any(_alive(p) for p in orphans), "the orphan trials did not end", 10)

    trials = trials_of(config)
    states = [t.state.name for t in trials]
    assert "RUNNING" not in states and "WAITING" not in states
    counted = [t for t in trials if "tuner:stale" not in t.system_attrs]
    assert len(counted) == 3 and all(t.state.name == "COMPLETE" for t in counted)
    died = [t for t in trials if "its controller died" in t.user_attrs.get("fail_reason", "")]
    assert len(died) == 2
    for t in died:
        assert t.state.name == "FAIL" and "tuner:stale" in t.system_attrs
        rerun = next(c for c in trials if c.user_attrs.get("tuner.rerun_of") == t.number)
        assert rerun.params == t.params and rerun.state.name == "COMPLETE"

    runs = mlflow_runs(sqlite_uri)
    active = [r for r in runs if r.info.lifecycle_stage == "active"]
    assert not [r for r in active if r.info.status == "RUNNING"]
    killed = [r for r in active if r.info.status == "KILLED"]
    assert len(killed) == 4  # two stopped by SIGTERM, two found after kill -9
    assert sum("controller died" in r.data.tags["tuner.fail_reason"] for r in killed) == 2
    assert len([r for r in active if r.data.tags.get("lineage.run_type") == "campaign"]) == 1
    # The re-run's MLflow run says which trial it re-runs, as Optuna does.
    by_id = {r.info.run_id: r for r in active}
    for t in died:
        rerun = next(c for c in trials if c.user_attrs.get("tuner.rerun_of") == t.number)
        run = by_id[rerun.user_attrs["tuner.launch"]["run_id"]]
        assert run.data.tags["tuner.rerun_of"] == str(t.number)
        assert run.info.run_name == f"t-{rerun.number}"
