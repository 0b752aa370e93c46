"""Trials as local processes, one per device slot."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from tuner import _protocol as protocol
from tuner.executors import _procs
from tuner.executors._base import (
    Executor,
    ExecutorFullError,
    Placed,
    Report,
    TrialHandle,
    TrialOutcome,
    TrialSpec,
    attempt_folder,
)
from tuner.executors._devices import Slot
from tuner.executors._packing import Packing
from tuner.executors._placement import Placement
from tuner.executors._warm import Plan, WarmChild, WarmParent, WarmStartError, plan

__all__ = ["LocalExecutor"]

_TAIL_LINES = 200
_PENDING_LINES = 20_000


class LocalExecutor(Executor):
    """Each trial is a child process in a session (process group) of its own, on one slot.

    ``run_dir`` receives one small directory per attempt (report channel, stop flag).
    ``base_env`` is the environment trials inherit (default: this process's).
    ``preload`` (``trial.preload``): True or a list of modules starts Python trials as forks
    of one warm parent per slot that imported them once (`tuner.executors._warm`); False
    starts every trial as a fresh process.
    ``packing``: the memory policy of slots that share a device under ``per_trial: auto``
    (`tuner.executors._packing`); ``sample_interval``: seconds between memory samples.
    """

    name = "local"

    def __init__(
        self,
        slots: Sequence[Slot],
        *,
        run_dir: str | os.PathLike[str],
        base_env: Mapping[str, str] | None = None,
        preload: bool | Sequence[str] = False,
        packing: Packing | None = None,
        sample_interval: float = 1.0,
    ) -> None:
        if not slots:
            raise ValueError("LocalExecutor needs at least one slot")
        self._slots = list(slots)
        self._free: list[Slot] = list(slots)
        self._run_dir = Path(run_dir)
        self._base_env = dict(os.environ if base_env is None else base_env)
        self._wake = threading.Event()
        self._handles: list[_LocalHandle] = []
        self._closed = False
        self._preload = preload
        self._parents: dict[int, WarmParent] = {}
        self._said: set[str] = set()
        self._placement = Placement(self._slots, packing, interval=sample_interval)

    def warm_up(self, argv: Sequence[str], workdir: str | None) -> None:
        """Start every slot's warm parent now for trials of ``argv`` (placeholders may stay
        unfilled: only the interpreter and the script matter), so that their imports overlap
        whatever the caller does before its first trial. Does nothing when ``argv`` would
        start cold; `submit` then says why."""
        how, _ = plan(argv, workdir, self._preload)
        if how is not None:
            self._start_parents(how, None)

    def _start_parents(self, how: Plan, slot: Slot | None) -> None:
        """A parent for ``slot`` (replacing its own) and for every slot without one yet. One
        of them imports; the others with the same environment are forked from it once it is
        ready (the imports are paid once, not once per slot on the same cores)."""
        first: tuple[WarmParent, dict[str, str]] | None = None
        for other in self._slots:
            if other is slot or other.index not in self._parents:
                old = self._parents.get(other.index)
                if old is not None:
                    old.close()
                env = {**self._base_env, **other.env()}
                if first is not None and first[1] == env:
                    self._parents[other.index] = first[0].sibling()
                else:
                    first = (WarmParent(how.modules, env, path0=how.path0), env)
                    self._parents[other.index] = first[0]

    def _warm_parent(self, spec: TrialSpec, slot: Slot) -> tuple[WarmParent | None, Any]:
        how, why = plan(spec.argv, spec.workdir, self._preload)
        if how is not None:
            parent = self._parents.get(slot.index)
            if (
                parent is None
                or not parent.alive
                or (parent.modules, parent.path0) != (how.modules, how.path0)
            ):
                self._start_parents(how, slot)
                parent = self._parents[slot.index]
            try:
                why = parent.wait_ready()
            except WarmStartError as exc:
                why = str(exc)
            if why is None:
                return parent, how
        if why is not None and why not in self._said:
            self._said.add(why)
            print(f"tuner: trials start cold: {why}", file=sys.stderr)
        return None, None

    @property
    def capacity(self) -> int:
        return len(self._slots)

    def free_slots(self) -> int:
        return self._placement.free(self._free)

    def recall(self, placed: Sequence[Placed]) -> str | None:
        return self._placement.recall(placed)

    def submit(self, spec: TrialSpec) -> TrialHandle:
        if self._closed:
            raise RuntimeError("LocalExecutor.submit after shutdown")
        if not self._free:
            raise ExecutorFullError(f"all {self.capacity} slots are busy")
        slot, alone = self._placement.choose(self._free, spec.params)
        self._free.remove(slot)
        trial_dir = attempt_folder(self._run_dir, spec.number, spec.attempt)
        trial_dir.mkdir(parents=True, exist_ok=True)
        parent, how = self._warm_parent(spec, slot)
        handle = _LocalHandle(
            spec, slot, trial_dir, self._base_env, self._wake, self._release, parent, how
        )
        self._placement.started(handle, slot, handle.pid, alone)
        self._handles = [h for h in self._handles if not h.finished] + [handle]
        return handle

    def _release(self, handle: _LocalHandle, outcome: TrialOutcome) -> TrialOutcome:
        self._free.append(handle.slot)
        self._free.sort(key=lambda s: s.index)
        return self._placement.ended(handle, outcome)

    def wait(self, timeout: float) -> None:
        self._placement.sample()
        self._wake.wait(timeout)
        self._wake.clear()

    def shutdown(self) -> None:
        self._closed = True
        for handle in self._handles:
            handle.terminate()
        for handle in self._handles:
            handle.join(handle.spec.grace_period + 5.0)
        for parent in self._parents.values():
            parent.close()
        self._parents.clear()

    def describe(self) -> str:
        slot = self._slots[0]
        if slot.kind == "cpu":
            return f"local: {self.capacity} cpu slot(s)"
        if slot.share > 1:
            devices = len({s.devices for s in self._slots})
            return f"local: up to {self.capacity} trial(s) on {devices} shared {slot.kind}"
        return f"local: {self.capacity} slot(s) of {len(slot.devices)} {slot.kind}"


class _LocalHandle(TrialHandle):
    def __init__(
        self,
        spec: TrialSpec,
        slot: Slot,
        trial_dir: Path,
        base_env: Mapping[str, str],
        wake: threading.Event,
        release: Any,
        parent: WarmParent | None = None,
        how: Any = None,
    ) -> None:
        self.spec = spec
        self.slot = slot
        self.devices = slot.devices
        self._wake = wake
        self._release = release
        self._lock = threading.Lock()
        self._tails: dict[str, collections.deque[str]] = {
            "stdout": collections.deque(maxlen=_TAIL_LINES),
            "stderr": collections.deque(maxlen=_TAIL_LINES),
        }
        self._pending: collections.deque[str] = collections.deque(maxlen=_PENDING_LINES)
        self._channel_path = trial_dir / protocol.CHANNEL_FILE
        self._control_path = trial_dir / protocol.CONTROL_FILE
        self._verdict_path = trial_dir / protocol.VERDICT_FILE
        self._channel_path.write_bytes(b"")
        for stale in (self._control_path, self._verdict_path):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        self._verdict_step = -1
        self._channel: IO[bytes] | None = None
        self._reader = protocol.ChannelReader()
        self._late: list[Report] = []  # read when the channel was closed, not yet delivered
        self._stopping = False
        self._stopped_at = 0.0
        self._timed_out = False
        self._outcome: TrialOutcome | None = None
        self._delivered = False
        self._info: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self._launch_error: str | None = None
        self.pid: int | None = None

        env = self._env(base_env)
        self.started_at = time.time()
        self._t0 = time.monotonic()
        self._proc: subprocess.Popen[bytes] | WarmChild | None = None
        if parent is not None:
            self._proc = self._warm(env, parent, how)
        try:
            if self._proc is None:
                self._proc = self._cold(env)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self._launch_error = f"cannot start {spec.argv[0]!r}: {reason}"
            self._outcome = TrialOutcome(exit_code=None, launch_error=self._launch_error)
            wake.set()
            return
        self.pid = self._proc.pid
        self._info = _procs.identity(self._proc.pid)
        # Every trial leads a session of its own (a cold one from `start_new_session`, a warm
        # child by calling setsid first thing), so its group is its pid, even when a warm
        # child has not reached its setsid by the time /proc is read.
        self._info["pgid"] = self._proc.pid
        self._info["channel"] = str(self._channel_path)  # finds processes that left the group
        for name, stream in (("stdout", self._proc.stdout), ("stderr", self._proc.stderr)):
            self._start(self._read, name, stream)
        self._start(self._watch)

    def _env(self, base_env: Mapping[str, str]) -> dict[str, str]:
        """The attempt's environment: the base one, unbuffered output, the trial's own, its
        slot's devices, then the attempt's channel and control files."""
        env = dict(base_env)
        env.setdefault(protocol.UNBUFFERED, "1")
        env.update(self.spec.env)
        env.update(self.slot.env())
        env.update(
            protocol.attempt_env(
                channel=str(self._channel_path),
                control=str(self._control_path),
                number=self.spec.number,
                attempt=self.spec.attempt,
                verdict=str(self._verdict_path),
            )
        )
        return env

    def _warm(self, env: dict[str, str], parent: WarmParent, how: Any) -> WarmChild | None:
        """The attempt as a fork of the slot's warm parent; None (said once per trial) when
        the parent cannot start it."""
        spec = self.spec
        try:
            return parent.launch(how.target, how.module, how.args, spec.workdir, env)
        except WarmStartError as exc:
            print(f"tuner: trial {spec.number} starts cold: {exc}", file=sys.stderr)
            return None

    def _cold(self, env: dict[str, str]) -> subprocess.Popen[bytes]:
        """The attempt as a fresh process in a session of its own; `OSError` when its program
        cannot be started."""
        return subprocess.Popen(
            list(self.spec.argv),
            cwd=self.spec.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )

    def _start(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(
            target=target, args=args, daemon=True, name=f"trial-{self.spec.number}"
        )
        thread.start()
        self._threads.append(thread)

    # ----- threads -------------------------------------------------------------------------

    def _read(self, name: str, stream: IO[bytes]) -> None:
        tail = self._tails[name]
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            tail.append(line)
            self._pending.append(line)
            self._wake.set()
        stream.close()

    def _watch(self) -> None:
        proc = self._proc
        assert proc is not None
        timeout = self.spec.timeout
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._timed_out = True
            self._stop()
            proc.wait()
        # Orphans of the trial (background workers) go with it, also those a launcher moved
        # out of its group (msrun's workers): given the grace period when it was stopped.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        strays = _procs.attempt_processes(str(self._channel_path))
        if strays and self._stopping:
            deadline = self._stopped_at + self.spec.grace_period
            while strays and time.monotonic() < deadline:
                time.sleep(0.05)
                strays = _procs.attempt_processes(str(self._channel_path))
        _procs.signal_all(strays, signal.SIGKILL)
        for thread in self._threads[:2]:
            thread.join(5.0)
        rc = proc.wait()
        self._outcome = TrialOutcome(
            exit_code=rc if rc >= 0 else None,
            signal=-rc if rc < 0 else None,
            timed_out=self._timed_out,
            stopped=self._stopping and not self._timed_out,
            duration=time.monotonic() - self._t0,
            stdout_tail="\n".join(self._tails["stdout"]),
            stderr_tail="\n".join(self._tails["stderr"]),
        )
        self._wake.set()

    def _stop(self) -> None:
        with self._lock:
            if self._stopping or self._proc is None:
                return
            self._stopping = True
            self._stopped_at = time.monotonic()
        with contextlib.suppress(OSError):
            self._control_path.touch()
        pid = self._proc.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        _procs.signal_all(_procs.attempt_processes(str(self._channel_path)), signal.SIGTERM)
        timer = threading.Timer(self.spec.grace_period, self._kill)
        timer.daemon = True
        timer.start()

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)

    # ----- TrialHandle ---------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self._delivered

    def poll(self) -> TrialOutcome | None:
        if self._outcome is not None and not self._delivered:
            self._delivered = True
            self._outcome = self._release(self, self._outcome)
        return self._outcome

    def reports(self) -> list[Report]:
        if self._channel is None:
            try:
                self._channel = open(self._channel_path, "rb")  # noqa: SIM115
            except OSError:
                return []
        if self._channel.closed:  # drained by `join` at shutdown
            out, self._late = self._late, []
            return out
        return self._reader.feed(self._channel.read())

    @property
    def reported_memory(self) -> float | None:
        return self._reader.memory

    def output_lines(self) -> list[str]:
        out = []
        pending = self._pending
        while pending:
            try:
                out.append(pending.popleft())
            except IndexError:
                break
        return out

    def request_prune(self) -> None:
        self._stop()

    def go_on(self, step: int) -> None:
        # Only a trial told where it may be paused waits for a verdict: no file otherwise.
        if step <= self._verdict_step or not protocol.pauses(self.spec.env):
            return
        try:
            protocol.write_verdict(str(self._verdict_path), step)
        except OSError:
            return  # the trial's wait is bounded: it goes on when it ends
        self._verdict_step = step

    def terminate(self) -> None:
        self._stop()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._channel is not None and self._outcome is not None and not self._channel.closed:
            self._late = self._reader.feed(self._channel.read())
            self._channel.close()

    def process_info(self) -> Mapping[str, Any]:
        return dict(self._info)
