"""The node side of the Ray executor: the task that runs one trial attempt on a node.

`run_trial` starts the trial command as a subprocess of the Ray worker (own session, killed with
the worker through ``PR_SET_PDEATHSIG``), follows its report channel and its stdout/stderr, and
yields them back to the driver in small batches; its last item is the outcome. On a shared
device (``payload["memory_interval"]``) it also measures the trial's device memory every so
often (`tuner.executors._packing.read_memory`, with the tool found on the trial's ``PATH``)
and yields it. Everything here runs on the node, so it imports only the standard library,
``ray``, the trial protocol, `tuner.executors._procs` and, to measure, the memory reader.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import IO, Any

from tuner import _protocol as protocol
from tuner.executors import _procs

__all__ = ["RESOURCE", "follow_trial", "run_trial", "start_cold"]

#: The Ray resource each ``resources.kind`` requests.
RESOURCE = {"gpu": "GPU", "npu": "NPU", "cpu": "CPU"}

# Exec shim: the trial dies with the Ray worker that started it (kill -9, force-cancel, node
# loss), and its argv[0] is looked up on the node's PATH from the trial's environment.
_SHIM = (
    "import ctypes,os,signal,sys\n"
    "ctypes.CDLL(None).prctl(1,signal.SIGKILL)\n"
    "if os.getppid()!=int(sys.argv[1]):os._exit(137)\n"
    "try:os.execvp(sys.argv[2],sys.argv[2:])\n"
    "except OSError as e:\n"
    " sys.stderr.write('tuner-launch-error: cannot start %r: %s\\n'%(sys.argv[2],e.strerror or e))\n"
    " os._exit(127)\n"
)
_TAIL_BYTES = 16_384


def _tail(path: str) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - _TAIL_BYTES))
        return f.read().decode("utf-8", "replace")


class _Follow:
    """New bytes of a file since the previous read."""

    def __init__(self, path: str) -> None:
        self._f = open(path, "a+b")  # noqa: SIM115 - closed by close()
        self._f.seek(0)

    def read(self) -> bytes:
        return self._f.read()

    def close(self) -> None:
        self._f.close()


def run_trial(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The Ray task of a cold trial: the command starts as a fresh process."""
    yield from follow_trial(payload, start_cold)


def channel_rest(path: str, offset: int) -> bytes:
    """The Ray task, pinned to a dead attempt's node, that reads what the trial wrote to its
    channel past ``offset`` (the bytes the controller got before the attempt's worker died)
    and removes the attempt's folder, which the dead worker could not clean up."""
    import shutil

    folder = os.path.dirname(path)
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read()
    except OSError:
        return b""
    finally:
        if os.path.basename(folder).startswith(_FOLDER_PREFIX):
            shutil.rmtree(folder, ignore_errors=True)


#: How the folder of an attempt on a node begins (`follow_trial`).
_FOLDER_PREFIX = "tuner-trial-"


def start_cold(payload: dict[str, Any], env: dict[str, str], out: IO[bytes], err: IO[bytes]) -> Any:
    """Starts the command as a fresh process through the exec shim."""
    import subprocess
    import sys

    argv = [sys.executable, "-I", "-S", "-c", _SHIM, str(os.getpid()), *payload["argv"]]
    return subprocess.Popen(
        argv, cwd=payload["workdir"] or None, env=env, stdin=subprocess.DEVNULL,
        stdout=out, stderr=err, start_new_session=True, close_fds=True,
    )  # fmt: skip


#: ``start(payload, env, stdout, stderr)`` starts the trial and returns an object with
#: ``pid``, ``poll()`` and ``wait()`` (a `subprocess.Popen`, or a warm parent's child).
Start = Callable[[dict[str, Any], dict[str, str], IO[bytes], IO[bytes]], Any]


def follow_trial(
    payload: dict[str, Any],
    start: Start,
    stop_requested: Callable[[], bool] | None = None,
    cold: Callable[[], str | None] | None = None,
    cleared: Callable[[], int | None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Runs one attempt on this node and yields its items (start, io..., end).

    ``cleared()`` (polled, as ``stop_requested``): the highest step the controller let the
    trial go on past, which this node writes to the trial's verdict file for a trial waiting
    at a pause step (`tuner.trial.checkpointed`). Without it the trial is given no verdict
    file and never waits: a plain Ray task has no way to hear the controller's verdicts.

    Stopping: ``stop_requested`` (polled) or, in a Ray task, ``KeyboardInterrupt`` or
    ``GeneratorExit`` from ``ray.cancel``; either way the trial gets its stop flag and SIGTERM,
    then SIGKILL after the grace period. ``cold()``: why a warm slot started this trial cold.
    """
    import shutil
    import socket
    import tempfile

    import ray

    kind = payload["kind"]
    ctx = ray.get_runtime_context()
    devices = list(ctx.get_accelerator_ids().get(RESOURCE[kind], [])) if kind != "cpu" else []
    env = _node_env(kind, payload["env"])
    tmp = tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{payload['number']}-{payload['attempt']}-")
    channel = os.path.join(tmp, protocol.CHANNEL_FILE)
    control = os.path.join(tmp, protocol.CONTROL_FILE)
    verdict = os.path.join(tmp, protocol.VERDICT_FILE) if cleared is not None else None
    out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
    env.update(
        protocol.attempt_env(
            channel=channel,
            control=control,
            number=payload["number"],
            attempt=payload["attempt"],
            verdict=verdict,
        )
    )
    open(channel, "wb").close()
    t0 = time.monotonic()
    proc: Any = None
    followers: list[_Follow] = []
    try:
        workdir = payload["workdir"]
        if workdir and not os.path.isdir(workdir):
            yield _end_item(t0, launch_error=f"workdir {workdir!r} does not exist on this node")
            return
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = start(payload, env, out, err)
        followers = [_Follow(channel), _Follow(out_path), _Follow(err_path)]
        yield {
            "type": "start",
            "host": socket.gethostname(),
            "node_ip": ray.util.get_node_ip_address(),
            "node_id": ctx.get_node_id(),
            "pid": proc.pid,
            "devices": devices,
            "started_at": time.time(),
            "cold": cold() if cold is not None else None,
            "channel": channel,
        }
        sampler = _Sampler(kind, devices, env.get("PATH"), payload.get("memory_interval"))
        told = _Verdicts(verdict, cleared) if verdict is not None and cleared else None
        rc, timed_out = yield from _watch(
            proc, followers, payload, control, t0, stop_requested, sampler, told
        )
        yield _ended(rc, timed_out, t0, out_path, err_path)
    except (KeyboardInterrupt, GeneratorExit):
        # ray.cancel(force=False), for a prune or a shutdown, arrives as KeyboardInterrupt while
        # the task runs, or closes the generator (GeneratorExit) when it waits at a yield: the
        # trial gets its stop flag and SIGTERM with the grace period either way, not SIGKILL.
        if proc is not None:
            _stop(proc, control, payload["grace_period"])
    finally:
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            _procs.signal_all(_procs.attempt_processes(channel), signal.SIGKILL)
        for follower in followers:
            follower.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _node_env(kind: str, own: Mapping[str, str]) -> dict[str, str]:
    """The attempt's environment on this node: the node's, unbuffered output, the devices
    Ray gave the task, then the trial's own (``own``)."""
    env = dict(os.environ)
    env.setdefault(protocol.UNBUFFERED, "1")
    if kind == "cpu":
        env.update(protocol.device_env("cpu", ()))
    elif kind == "npu":
        # Ray restricted the visible NPUs already; the first of them is logical device 0.
        env[protocol.DEVICE_ID] = "0"
    env.update(own)
    # The controller's verdict file is on its own machine: `follow_trial` names one on this
    # node when it can hear the verdicts, else none (the trial then never waits).
    env.pop(protocol.VERDICT, None)
    return env


class _Verdicts:
    """Writes the steps the controller cleared (``cleared()``) to the trial's verdict file."""

    def __init__(self, path: str, cleared: Callable[[], int | None]) -> None:
        self._path = path
        self._cleared = cleared
        self._written = -1

    def poll(self) -> None:
        step = self._cleared()
        if step is None or step <= self._written:
            return
        with contextlib.suppress(OSError):  # the trial's wait is bounded: it goes on anyway
            protocol.write_verdict(self._path, step)
            self._written = step


class _Sampler:
    """The device memory of one trial on this node, every ``interval`` seconds (None: never):
    an item with the MiB the tool attributes to the trial's session (0: none) and the size
    of its smallest device, or None when it is not time or the tool said nothing."""

    def __init__(
        self, kind: str, devices: list[str], path: str | None, interval: float | None
    ) -> None:
        self._kind, self._devices, self._path = kind, devices, path
        self._interval = interval
        self._last = float("-inf")

    def sample(self, session: int) -> dict[str, Any] | None:
        now = time.monotonic()
        if self._interval is None or not self._devices or now - self._last < self._interval:
            return None
        self._last = now
        from tuner.executors._packing import held_by_session, read_memory

        memory = read_memory(self._kind, self._devices, path=self._path)
        if not memory:
            return None
        mib = held_by_session(memory).get(session, 0.0)
        return {"type": "memory", "mib": mib, "total": min(m.total for m in memory.values())}


def _watch(
    proc: Any,
    followers: list[_Follow],
    payload: dict[str, Any],
    control: str,
    t0: float,
    stop_requested: Callable[[], bool] | None,
    sampler: _Sampler | None = None,
    told: _Verdicts | None = None,
) -> Generator[dict[str, Any], None, tuple[int, bool]]:
    """Yield the attempt's io items (and its memory, with a ``sampler``) until its process
    exits, stopping it past its timeout or on request; returns ``(exit status, whether it
    timed out)``."""
    timed_out = False
    partial = [b"", b""]
    while True:
        rc = proc.poll()
        item = _io_item(followers, partial, final=rc is not None)
        if item is not None:
            yield item
        memory = sampler.sample(proc.pid) if sampler is not None and rc is None else None
        if memory is not None:
            yield memory
        if rc is not None:
            return int(rc), timed_out
        if told is not None:
            told.poll()
        timeout = payload["timeout"]
        if timeout is not None and time.monotonic() - t0 > timeout:
            timed_out = True
            _stop(proc, control, payload["grace_period"])
        elif stop_requested is not None and stop_requested():
            _stop(proc, control, payload["grace_period"])
        else:
            time.sleep(payload["poll_interval"])


def _ended(rc: int, timed_out: bool, t0: float, out_path: str, err_path: str) -> dict[str, Any]:
    """The end item: the exit code or signal with the output's tails, or the launch error
    the launcher wrapper reported (exit status 127 and its marker line)."""
    stderr_tail = _tail(err_path)
    if rc == 127 and "tuner-launch-error: " in stderr_tail:
        message = stderr_tail.split("tuner-launch-error: ", 1)[1].strip().splitlines()[0]
        return _end_item(t0, launch_error=message)
    return _end_item(
        t0,
        exit_code=rc if rc >= 0 else None,
        signal=-rc if rc < 0 else None,
        timed_out=timed_out,
        stdout_tail=_tail(out_path),
        stderr_tail=stderr_tail,
    )


def _io_item(
    followers: list[_Follow], partial: list[bytes], *, final: bool
) -> dict[str, Any] | None:
    channel = followers[0].read()
    lines: list[str] = []
    for i, follower in enumerate(followers[1:]):
        data = partial[i] + follower.read()
        chunks = data.split(b"\n")
        rest = chunks.pop()
        if final and rest:
            chunks.append(rest)
            rest = b""
        partial[i] = rest
        lines.extend(c.decode("utf-8", "replace").rstrip("\r") for c in chunks)
    if not channel and not lines:
        return None
    return {"type": "io", "channel": channel, "lines": lines}


def _end_item(t0: float, **fields: Any) -> dict[str, Any]:
    fields.setdefault("exit_code", None)
    fields["duration"] = time.monotonic() - t0
    return {"type": "end", "outcome": fields}


def _stop(proc: Any, control: str, grace: float) -> None:
    with contextlib.suppress(OSError):
        open(control, "w").close()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    # Processes a launcher moved out of the group (msrun's workers) get the SIGTERM too.
    channel = os.path.join(os.path.dirname(control), protocol.CHANNEL_FILE)
    _procs.signal_all(_procs.attempt_processes(channel), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and (
        proc.poll() is None or _procs.attempt_processes(channel)
    ):
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
