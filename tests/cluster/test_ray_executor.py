"""The Ray executor against a real local Ray cluster (declared GPUs and NPUs)."""

from __future__ import annotations

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
TRIAL = str(Path(__file__).with_name("_trial.py"))


def _spec(number: int, *args: str, **kw: object) -> TrialSpec:
    return TrialSpec(
        number=number,
        attempt=0,
        params={},
        argv=[sys.executable, TRIAL, *args],
        grace_period=2.0,
        **kw,  # type: ignore[arg-type]
    )


def _finish(executor: RayExecutor, handles: list, limit: float = 120.0) -> dict[int, TrialOutcome]:
    done: dict[int, TrialOutcome] = {}
    deadline = time.monotonic() + limit
    while len(done) < len(handles) and time.monotonic() < deadline:
        executor.wait(0.5)
        for handle in handles:
            handle.reports()
            outcome = handle.poll()
            if outcome is not None:
                done[handle.spec.number] = outcome
    assert len(done) == len(handles), f"only {sorted(done)} finished in {limit}s"
    return done


@pytest.mark.parametrize(
    ("kind", "variable"), [("gpu", "CUDA_VISIBLE_DEVICES"), ("npu", "ASCEND_RT_VISIBLE_DEVICES")]
)
def test_each_trial_sees_exactly_its_own_devices(
    ray_address: str, tmp_path: Path, kind: str, variable: str
) -> None:
    executor = RayExecutor(address=ray_address, kind=kind, per_trial=1, parallel=2)
    assert executor.capacity == 2
    handles, outcomes = [], {}
    for number in range(4):  # two waves of two trials on the cluster's two devices
        while executor.free_slots() == 0:
            outcomes.update(_finish(executor, [h for h in handles if not h.finished][:1]))
        handles.append(executor.submit(_spec(number, "3", "0.2", str(tmp_path))))
    outcomes.update(_finish(executor, [h for h in handles if not h.finished]))
    executor.shutdown()

    assert all(o.succeeded for o in outcomes.values()), outcomes
    seen = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert len(seen) == 4
    by_number = {int(s["TUNER_TRIAL_NUMBER"]): s for s in seen}
    for handle in handles:
        mine = by_number[handle.spec.number]
        # Exactly one device, the one Ray granted to this trial's task, and no other kind.
        assert handle.devices in {("0",), ("1",)}
        assert mine[variable] == handle.devices[0]
        other = "ASCEND_RT_VISIBLE_DEVICES" if kind == "gpu" else "CUDA_VISIBLE_DEVICES"
        assert not mine[other]
        assert mine["DEVICE_ID"] == ("0" if kind == "npu" else None)
    # Trials that overlapped in time never shared a device.
    for a in seen:
        for b in seen:
            overlap = a["t0"] < b["t1"] and b["t0"] < a["t1"]
            if a is not b and overlap:
                assert a[variable] != b[variable], (a, b)


def test_reports_stream_back_and_prune_stops_the_process(ray_address: str) -> None:
    executor = RayExecutor(address=ray_address, kind="cpu", per_trial=1, parallel=1)
    handle = executor.submit(_spec(7, "2000", "0.05"))  # pruned long before its end
    steps: list[int] = []
    deadline = time.monotonic() + 120
    while len(steps) < 3 and time.monotonic() < deadline:
        executor.wait(0.5)
        steps += [r.step for r in handle.reports()]
    assert steps[:3] == [0, 1, 2]
    info = handle.process_info()
    assert info["pid"] and info["node_ip"]
    proc = identity(int(info["pid"]))
    handle.request_prune()
    outcome = _finish(executor, [handle])[7]
    assert outcome.stopped and not outcome.succeeded
    assert not is_alive(proc)
    executor.shutdown()


def test_timeout_launch_error_and_exit_code(ray_address: str) -> None:
    executor = RayExecutor(address=ray_address, kind="cpu", per_trial=1, parallel=2)
    slow = executor.submit(_spec(1, "200", "0.05", timeout=1.0))
    bad = executor.submit(
        TrialSpec(number=2, attempt=0, params={}, argv=["no-such-command-xyz"], grace_period=1)
    )
    outcomes = _finish(executor, [slow, bad])
    assert outcomes[1].timed_out and not outcomes[1].stopped
    assert outcomes[2].launch_error and "no-such-command-xyz" in outcomes[2].launch_error
    failing = executor.submit(
        TrialSpec(
            number=3,
            attempt=0,
            params={},
            argv=[sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"],
            grace_period=1,
        )
    )
    outcome = _finish(executor, [failing])[3]
    assert outcome.exit_code == 3 and "boom" in outcome.stderr_tail
    executor.shutdown()


def test_a_dead_worker_fails_its_trial_with_a_reason(ray_address: str) -> None:
    executor = RayExecutor(address=ray_address, kind="cpu", per_trial=1, parallel=1)
    handle = executor.submit(_spec(4, "400", "0.05"))
    deadline = time.monotonic() + 120
    while not handle.process_info() and time.monotonic() < deadline:
        executor.wait(0.3)
        handle.reports()
    child = int(handle.process_info()["pid"])
    child_id = identity(child)
    ray_worker = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(ray_worker, signal.SIGKILL)  # what a lost node looks like from the driver
    outcome = _finish(executor, [handle])[4]
    assert not outcome.succeeded and outcome.signal == signal.SIGKILL
    assert "ray: the trial's task" in outcome.stderr_tail and "lost" in outcome.stderr_tail
    deadline = time.monotonic() + 60
    while is_alive(child_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not is_alive(child_id), "the trial process outlived its Ray worker"
    executor.shutdown()
