"""Warm slots on a real Ray cluster: each trial is forked from its slot's warm parent (living
beside a long-lived actor), stays isolated from the trials before it, stops and dies as a
cold Ray trial does, and a lost actor takes its trial and parent with it."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tuner.executors import TrialOutcome, TrialSpec
from tuner.executors._procs import identity, is_alive
from tuner.executors._ray import RayExecutor

pytestmark = [pytest.mark.ray, pytest.mark.slow]
TRIAL = str(Path(__file__).parents[1] / "executors" / "_warm_trial.py")


def _spec(number: int, out: Path, *args: str) -> TrialSpec:
    argv = [sys.executable, TRIAL, str(out), *args]
    return TrialSpec(number=number, attempt=0, params={}, argv=argv, grace_period=2.0)


def _seen(path: Path, handle, executor: RayExecutor) -> dict:
    deadline = time.monotonic() + 120
    while not (path.exists() and path.stat().st_size):
        assert time.monotonic() < deadline, f"{path} never appeared"
        executor.wait(0.2)
        handle.reports()
    return json.loads(path.read_text())


def _finish(executor: RayExecutor, handle) -> TrialOutcome:
    deadline = time.monotonic() + 120
    while (outcome := handle.poll()) is None:
        assert time.monotonic() < deadline, "the trial never finished"
        executor.wait(0.2)
        handle.reports()
    return outcome


def _parent_of(pid: int) -> int:
    parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert Path(f"/proc/{parent}/cmdline").read_bytes().startswith(b"ray::"), "not a Ray worker"
    return parent


@pytest.fixture
def warm(ray_address: str):
    executor = RayExecutor(address=ray_address, kind="cpu", per_trial=1, parallel=1, preload=True)
    yield executor
    executor.shutdown()


def test_warm_trials_are_isolated_and_stop_as_cold_ones(warm: RayExecutor, tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    handle = warm.submit(_spec(0, first))
    assert _finish(warm, handle).exit_code == 0, handle.poll()
    handle = warm.submit(_spec(1, second))
    assert _finish(warm, handle).exit_code == 0
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    # The second trial finds none of what the first one changed.
    assert b["global"] == "clean" and b["module_attr"] is None and b["env"] is None
    assert b["context_mode"] == a["context_mode"] and b["op"] == 3.0
    # Both forked by the slot's one warm parent, which is neither this driver nor the actor.
    parent = a["ppid"]
    assert a["pid"] != b["pid"] and b["ppid"] == parent != os.getpid()

    for number, how in enumerate(["prune", "timeout", "sigterm", "kill -9"], start=2):
        out = tmp_path / f"{how}.json"
        trial = _spec(number, out, "--sleep", "120")
        if how == "timeout":
            trial = dataclasses.replace(trial, timeout=15.0)
        handle = warm.submit(trial)
        seen = _seen(out, handle, warm)
        proc = identity(seen["pid"])
        assert seen["ppid"] == parent and handle.process_info()["pid"] == seen["pid"]
        if how == "prune":
            handle.request_prune()
        elif how == "sigterm":
            os.killpg(seen["pid"], signal.SIGTERM)
        elif how == "kill -9":
            os.killpg(seen["pid"], signal.SIGKILL)
        outcome = _finish(warm, handle)
        assert not outcome.succeeded and not is_alive(proc), how
        assert outcome.timed_out == (how == "timeout"), how
        assert outcome.stopped == (how == "prune"), how
        if how != "prune":
            expected = signal.SIGKILL if how == "kill -9" else signal.SIGTERM
            assert outcome.signal == int(expected), (how, outcome)
    # Killing a trial never killed its parent: the next trial forks from the same one.
    last = tmp_path / "last.json"
    handle = warm.submit(_spec(9, last))
    assert _finish(warm, handle).exit_code == 0
    assert json.loads(last.read_text())["ppid"] == parent


def test_a_lost_actor_takes_its_trial_and_parent_along(warm: RayExecutor, tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    handle = warm.submit(_spec(0, out, "--sleep", "120"))
    seen = _seen(out, handle, warm)
    trial, parent = identity(seen["pid"]), identity(seen["ppid"])
    actor_worker = _parent_of(seen["ppid"])
    os.kill(actor_worker, signal.SIGKILL)  # what a lost node looks like from the driver
    outcome = _finish(warm, handle)
    assert not outcome.succeeded and outcome.signal == signal.SIGKILL
    assert "ray: the trial's task" in outcome.stderr_tail and "lost" in outcome.stderr_tail
    deadline = time.monotonic() + 120
    while (is_alive(trial) or is_alive(parent)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not is_alive(trial) and not is_alive(parent), "a process outlived its actor"
    # The slot gets a new actor and a new warm parent for the next trial.
    again = tmp_path / "again.json"
    handle = warm.submit(_spec(1, again))
    assert _finish(warm, handle).exit_code == 0
    assert json.loads(again.read_text())["ppid"] != seen["ppid"]
