"""The executor contract (`tuner.executors._base`), written once and run against every
executor: in-process, local subprocesses and a real local Ray cluster (see conftest.py).

Behaviour that needs a process (signals, devices, output, timeouts) is skipped for the
in-process executor, which runs its trial as a function call inside `submit`.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _executor_kit import Backend, spec

from tuner.executors import (
    Executor,
    ExecutorFullError,
    Report,
    TrialHandle,
    TrialOutcome,
    TrialSpec,
)


@dataclass
class Seen:
    """Everything one handle gave back until its outcome."""

    outcome: TrialOutcome
    reports: list[Report] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def drive(executor: Executor, handles: list[TrialHandle], limit: float = 90.0) -> list[Seen]:
    """Poll like the controller does until every handle has its outcome."""
    reports: dict[int, list[Report]] = {id(h): [] for h in handles}
    lines: dict[int, list[str]] = {id(h): [] for h in handles}
    done: dict[int, TrialOutcome] = {}
    deadline = time.monotonic() + limit
    while len(done) < len(handles):
        assert time.monotonic() < deadline, f"{len(done)}/{len(handles)} ended in {limit}s"
        executor.wait(0.1)
        for handle in handles:
            if id(handle) in done:
                continue
            reports[id(handle)] += handle.reports()
            lines[id(handle)] += handle.output_lines()
            outcome = handle.poll()
            if outcome is not None:
                # What was written just before the exit arrives with the outcome.
                reports[id(handle)] += handle.reports()
                lines[id(handle)] += handle.output_lines()
                done[id(handle)] = outcome
    return [Seen(done[id(h)], reports[id(h)], lines[id(h)]) for h in handles]


def first_report(executor: Executor, handle: TrialHandle, limit: float = 90.0) -> list[Report]:
    got: list[Report] = []
    deadline = time.monotonic() + limit
    while not got:
        assert time.monotonic() < deadline, "the trial reported nothing"
        executor.wait(0.1)
        got = handle.reports()
    return got


def read_dump(path: Path, limit: float = 120.0) -> dict[str, object]:
    """The trial's dump, waiting for it: on Ray a cancelled task's outcome reaches the driver as
    soon as the cancel is processed, while the node still signals the trial (its grace period)."""
    deadline = time.monotonic() + limit
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return dict(json.loads(path.read_text()))


def test_capacity_free_slots_and_a_full_executor(backend: Backend) -> None:
    executor = backend.make(slots=2)
    assert executor.capacity == 2 and executor.free_slots() == 2
    handles = [executor.submit(spec(n, "--steps", "1")) for n in range(2)]
    # A trial holds its slot until `poll` returned its outcome, even if it ended already.
    assert executor.free_slots() == 0
    with pytest.raises(ExecutorFullError):
        executor.submit(spec(2))
    seen = drive(executor, handles)
    assert all(s.outcome.succeeded for s in seen), seen
    assert executor.free_slots() == 2 and executor.capacity == 2
    again = executor.submit(spec(3, "--steps", "1"))
    assert drive(executor, [again])[0].outcome.succeeded


def test_reports_arrive_in_order_and_the_outcome_is_stable(backend: Backend) -> None:
    executor = backend.make()
    handle = executor.submit(spec(0, "--steps", "4", "--sleep", "0.02"))
    seen = drive(executor, [handle])[0]
    assert [r.step for r in seen.reports] == [0, 1, 2, 3]
    assert [r.metrics["loss"] for r in seen.reports] == [1.0, 0.5, 1 / 3, 0.25]
    assert all(r.source == "api" for r in seen.reports)
    assert seen.outcome.succeeded and seen.outcome.exit_code == 0 and seen.outcome.signal is None
    assert handle.poll() == seen.outcome and handle.reports() == []
    assert handle.spec.number == 0


def test_exit_codes(backend: Backend) -> None:
    executor = backend.make(slots=2)
    good = executor.submit(spec(0, "--exit", "0"))
    bad = executor.submit(spec(1, "--exit", "3"))
    ok, failed = drive(executor, [good, bad])
    assert ok.outcome.exit_code == 0 and ok.outcome.succeeded
    assert failed.outcome.exit_code == 3 and not failed.outcome.succeeded
    assert not failed.outcome.stopped and not failed.outcome.timed_out
    assert failed.outcome.launch_error is None


def test_a_command_that_cannot_start_is_an_outcome(processes_only: Backend) -> None:
    executor = processes_only.make()
    handle = executor.submit(
        TrialSpec(number=0, attempt=1, params={}, argv=["no-such-cmd-xyz"], grace_period=1)
    )
    outcome = drive(executor, [handle])[0].outcome
    assert outcome.launch_error and "no-such-cmd-xyz" in outcome.launch_error
    assert not outcome.succeeded
    assert executor.free_slots() == 1


def test_terminate_stops_the_trial(processes_only: Backend, tmp_path: Path) -> None:
    executor = processes_only.make()
    dump = tmp_path / "seen.json"
    handle = executor.submit(spec(0, "--steps", "2000", "--sleep", "0.05", "--dump", str(dump)))
    first_report(executor, handle)
    handle.terminate()
    handle.terminate()  # idempotent
    outcome = drive(executor, [handle])[0].outcome
    assert outcome.stopped and not outcome.succeeded and not outcome.timed_out
    seen = read_dump(dump)
    assert seen["terminated"] is True  # SIGTERM reached the trial (its grace period began)


def test_prune_request_raises_the_flag_then_stops(processes_only: Backend, tmp_path: Path) -> None:
    executor = processes_only.make()
    dump = tmp_path / "seen.json"
    handle = executor.submit(spec(0, "--steps", "2000", "--sleep", "0.05", "--dump", str(dump)))
    first_report(executor, handle)
    handle.request_prune()
    handle.request_prune()  # idempotent
    outcome = drive(executor, [handle])[0].outcome
    assert outcome.stopped and not outcome.succeeded
    seen = read_dump(dump)
    # The stop flag is up before the signal: a trial that checks should_prune() sees it.
    assert seen.get("prune_flag") is True or "pruned_at" in seen, seen


def test_timeout_is_enforced_by_the_executor(processes_only: Backend) -> None:
    executor = processes_only.make()
    handle = executor.submit(spec(0, "--steps", "2000", "--sleep", "0.05", timeout=1.0))
    outcome = drive(executor, [handle])[0].outcome
    assert outcome.timed_out and not outcome.stopped and not outcome.succeeded


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_device_and_trial_environment(processes_only: Backend, tmp_path: Path, kind: str) -> None:
    executor = processes_only.make(slots=2, kind=kind)
    handles = [
        executor.submit(
            spec(
                n,
                "--steps",
                "2",
                "--sleep",
                "0.3",
                "--dump",
                str(tmp_path / f"{n}.json"),
                attempt=2,
                env={"MLFLOW_RUN_ID": f"run-{n}"},
            )
        )
        for n in range(2)
    ]
    assert all(s.outcome.succeeded for s in drive(executor, handles))
    visible = []
    for n, handle in enumerate(handles):
        seen = json.loads((tmp_path / f"{n}.json").read_text())
        assert seen["TUNER_TRIAL_NUMBER"] == str(n) and seen["TUNER_ATTEMPT"] == "2"
        assert seen["MLFLOW_RUN_ID"] == f"run-{n}"
        assert seen["CUDA_VISIBLE_DEVICES"] == ",".join(handle.devices)
        assert not seen["ASCEND_RT_VISIBLE_DEVICES"] and seen["DEVICE_ID"] is None
        if kind == "gpu":
            assert len(handle.devices) == 1 and handle.device_label()
            visible.append(seen["CUDA_VISIBLE_DEVICES"])
        else:
            assert handle.devices == ()
    if kind == "gpu":  # two trials at once never share a device
        assert sorted(visible) == ["0", "1"]


def test_output_lines_and_tails(processes_only: Backend) -> None:
    executor = processes_only.make()
    handle = executor.submit(spec(0, "--out", "hello out", "--err", "boom err", "--exit", "2"))
    seen = drive(executor, [handle])[0]
    assert "hello out" in seen.lines and "boom err" in seen.lines
    assert "hello out" in seen.outcome.stdout_tail
    assert "boom err" in seen.outcome.stderr_tail
    assert seen.outcome.exit_code == 2


def test_shutdown_ends_running_trials_and_is_idempotent(backend: Backend) -> None:
    executor = backend.make()
    args = ("--steps", "2000", "--sleep", "0.05") if backend.processes else ("--steps", "1")
    handle = executor.submit(spec(0, *args))
    if backend.processes:
        first_report(executor, handle)
    executor.shutdown()
    executor.shutdown()
    outcome = drive(executor, [handle], limit=30)[0].outcome
    if backend.processes:
        assert outcome.stopped and not outcome.succeeded
        assert outcome.signal in (None, int(signal.SIGTERM), int(signal.SIGKILL))
    else:
        assert outcome.succeeded
    assert sys.executable  # the trial ran under this interpreter
