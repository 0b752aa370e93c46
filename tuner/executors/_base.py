"""The executor interface: where and how a trial process runs.

An executor owns a fixed set of *slots* (a slot is the devices one trial holds: one GPU, two
NPUs, a share of one device that other slots share too, or a CPU share). The controller asks Optuna for parameters, builds a `TrialSpec`,
and hands it to `Executor.submit` when `Executor.free_slots` is positive. What comes back is a
`TrialHandle` that the controller polls until it yields a `TrialOutcome`.

Threading contract (all implementations):
- `Executor.submit`, `Executor.free_slots`, `Executor.wait`, `Executor.shutdown` and every
  `TrialHandle` method except `TrialHandle.terminate` and `TrialHandle.request_prune` are
  called from one controller thread only.
- `TrialHandle.terminate` and `TrialHandle.request_prune` may be called from any thread
  (signal handlers, the shutdown path) and are idempotent.
- `Executor.wait` may return early for any reason; callers re-poll.

Trial environment contract (what a trial process receives, see docs/design.md and
`tuner._protocol`): the executor adds to `TrialSpec.env` the device variables of its slot
(`tuner._protocol.device_env`) and the attempt's report channel and stop flag
(`tuner._protocol.attempt_env`). The process never runs through a shell and lives in a
process group (or the backend's equivalent) of its own.
"""

from __future__ import annotations

import abc
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner._report import Report

__all__ = [
    "Executor",
    "ExecutorFullError",
    "Placed",
    "Report",
    "TrialHandle",
    "TrialOutcome",
    "TrialSpec",
    "attempt_folder",
]


class ExecutorFullError(RuntimeError):
    """`Executor.submit` was called while `Executor.free_slots` was 0 (a controller bug)."""


@dataclass(frozen=True, kw_only=True)
class TrialSpec:
    """Everything needed to start one attempt of one trial.

    ``argv`` has its ``{param}`` placeholders already substituted (each item is one argument,
    never parsed by a shell). ``env`` holds the variables to add to the executor's own
    environment: the parameters and the lineage run (`tuner._protocol.run_env`) and the
    campaign's ``env``. ``timeout`` (seconds, None = no limit) is enforced by the executor: the
    trial is terminated and its outcome has ``timed_out`` set. ``grace_period`` is the time
    between SIGTERM (or the backend's polite stop) and SIGKILL; it has no default here, the
    campaign config (``trial.grace_period``) is its one home.
    """

    number: int
    attempt: int
    params: Mapping[str, Any]
    argv: Sequence[str]
    grace_period: float
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    timeout: float | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class TrialOutcome:
    """How a trial process ended.

    Exactly one of these describes the end: ``exit_code`` (the process exited by itself),
    ``signal`` (killed by a signal it did not ask for, e.g. OOM killer), ``timed_out``
    (the executor stopped it at ``TrialSpec.timeout``), ``stopped`` (the controller asked
    for it: prune or shutdown; ``exit_code``/``signal`` then tell how it went down), or
    ``launch_error`` (the process never started: command not found, bad workdir).
    """

    exit_code: int | None
    signal: int | None = None
    timed_out: bool = False
    stopped: bool = False
    launch_error: str | None = None
    duration: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    #: The most other trials that ran on its device(s) at once (None: not known).
    neighbours: int | None = None
    #: The most device memory its processes held, in MiB (None: not measured).
    peak_memory_mib: float | None = None
    #: It failed out of device memory while sharing its device: the packing's fault, not
    #: its configuration's; it is retried alone, outside ``trial.retries``.
    packed_oom: bool = False

    @property
    def signal_name(self) -> str | None:
        """``"SIGKILL"`` for ``signal=9``; the number when Python has no name for it."""
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return str(self.signal)

    @property
    def succeeded(self) -> bool:
        return (
            self.exit_code == 0
            and not self.timed_out
            and not self.stopped
            and self.launch_error is None
        )


@dataclass(frozen=True)
class Placed:
    """What an earlier attempt of the campaign left on record of its placement: its trial
    ``number`` and ``params``, its peak device memory (MiB; None: not measured) and whether
    it ran out of device memory beside other trials (`TrialOutcome.packed_oom`)."""

    number: int
    params: Mapping[str, Any]
    peak_memory_mib: float | None = None
    packed_oom: bool = False


class TrialHandle(abc.ABC):
    """A running (or finished) trial attempt, as returned by `Executor.submit`."""

    spec: TrialSpec
    #: Devices of the slot this trial holds, e.g. ``("0",)``; ``()`` for a CPU slot.
    devices: tuple[str, ...]
    #: ``time.time()`` when the process started.
    started_at: float

    @abc.abstractmethod
    def poll(self) -> TrialOutcome | None:
        """The outcome once the process has ended and its output is drained, else None.

        Never blocks. Once an outcome is returned the slot is free again and every later
        call returns the same outcome. Never raises for a trial that failed: a launch
        failure is an outcome with ``launch_error`` set.
        """

    @abc.abstractmethod
    def reports(self) -> list[Report]:
        """Reports the trial wrote through `tuner.trial.report` since the previous call.

        Malformed lines are skipped (a trial cannot crash the controller). Never blocks.
        """

    @abc.abstractmethod
    def output_lines(self) -> list[str]:
        """Lines of stdout and stderr written since the previous call, without newlines."""

    @abc.abstractmethod
    def request_prune(self) -> None:
        """Ask the trial to stop: raise its `tuner.trial.should_prune` flag, send SIGTERM
        to its process group, and SIGKILL after ``grace_period``. Idempotent, thread-safe.
        The outcome then has ``stopped`` set."""

    def go_on(self, step: int) -> None:
        """Tell the trial the controller let it go on past ``step`` (no decision stopped it
        there), so that a trial waiting at a pause step (`tuner.trial.checkpointed`) goes on
        at once. Called from the controller's thread; never raises. Default: nothing, for an
        executor whose trials never wait (they are not given a verdict file)."""
        return None

    @abc.abstractmethod
    def terminate(self) -> None:
        """Stop the trial as `request_prune` does; used on shutdown. Idempotent, thread-safe."""

    @property
    def reported_memory(self) -> float | None:
        """The most device memory (MiB) the trial said it held (`tuner.trial.report_memory`),
        in what `reports` has read so far; None while it said nothing."""
        return None

    def process_info(self) -> Mapping[str, Any]:
        """What `tuner resume` needs to find this process after a controller crash
        (e.g. ``{"pid": .., "pgid": .., "start_time": .., "host": ..}``); may be empty."""
        return {}

    @property
    def elapsed(self) -> float:
        return time.time() - self.started_at

    def device_label(self) -> str:
        """What the records show as the trial's device, e.g. ``gpu:0,1`` or ``cpu#0``."""
        slot = getattr(self, "slot", None)
        if slot is not None and hasattr(slot, "label"):
            return str(slot.label)
        return ",".join(self.devices) if self.devices else "cpu"


class Executor(abc.ABC):
    """Runs trial attempts on a fixed set of slots. See the module docstring for threading."""

    #: Short name recorded on every trial run, e.g. ``"local"`` or ``"ray"``.
    name: str = "executor"

    @property
    @abc.abstractmethod
    def capacity(self) -> int:
        """Number of slots: how many trials may run at once. Constant over the executor's life."""

    @abc.abstractmethod
    def free_slots(self) -> int:
        """Slots a trial may start on now: not held by a running trial (a trial holds its slot
        until `poll` returns), and, where slots share a device by measured memory, on a
        device with room for one more (so it may be 0 while slots are unheld)."""

    @abc.abstractmethod
    def submit(self, spec: TrialSpec) -> TrialHandle:
        """Start one attempt on a free slot and return at once.

        Raises `ExecutorFullError` when no slot is free. A command that cannot be started is
        not an exception: its handle's outcome carries ``launch_error``.
        """

    def wait(self, timeout: float) -> None:
        """Block until some trial may have news (ended, reported, printed) or ``timeout``
        seconds passed. The default sleeps; executors should wake on events instead."""
        time.sleep(timeout)

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Terminate every trial still running, wait for them (within their grace periods)
        and release resources. Idempotent. After it, `submit` must not be called."""

    def recall(self, placed: Sequence[Placed]) -> str | None:
        """Learn from the campaign's earlier attempts (a resumed or re-run campaign) before
        the first `submit`: an executor that packs trials by memory takes their peaks and
        grows as cautious as the out-of-memory failures beside other trials made the one
        before it; the retry of such a failure not yet run again runs alone. Returns a line
        worth showing (None: nothing recalled). The default recalls nothing."""
        del placed
        return None

    def describe(self) -> str:
        """One line for logs and the campaign run, e.g. ``local: 2 slots of 1 gpu``."""
        return f"{self.name}: {self.capacity} slots"


def attempt_folder(run_dir: Path, number: int, attempt: int) -> Path:
    """Where the local executor keeps an attempt's channel and stop flag under ``run_dir``
    (the campaign's ``trials/`` folder)."""
    return run_dir / f"{number:05d}-{attempt}"
