"""A warm parent: imports a campaign's heavy modules once, then forks each trial from itself.

Run as ``python -P -m tuner.executors._forkserver_main FD MODULES_JSON PATH0 [--die-with-owner]``
(``-P``: no working directory on ``sys.path``; ``PATH0``, the script's folder or, for a
module, the trial's working directory, goes first, as in a cold trial's ``sys.path``) where
``FD`` is one end of a ``SOCK_SEQPACKET`` socket pair held by the controller or, on a Ray node,
by the slot's actor (see `tuner.executors._warm`).

Messages, one JSON object per packet:

- parent -> controller, once: ``{"ready": true, "unsafe": null | "why", "seconds": s}``
- controller -> parent: ``{"target": ..., "module": bool, "args": [...], "cwd": ...,
  "env": {...}}`` with the trial's stdout and stderr pipe ends attached (``SCM_RIGHTS``)
- parent -> controller: ``{"pid": n}`` once the child is forked, then ``{"returncode": rc}``
  (negative: killed by that signal, as `subprocess.Popen.returncode`) when it ends.
- controller -> parent: ``{"sibling": true}`` with one end of a new socket pair attached: the
  parent forks a copy of itself (its imports done) that serves that socket as a parent of
  its own, for another slot. The copy stays this process's child, and so in the controller's
  process tree (`_reap_copies` collects it once it ends). The copy sends its ready message
  there (with its ``"pid"``); the parent answers nothing.

The parent serves one trial at a time (it belongs to one device slot) and exits when the
controller closes its end. A trial ends (SIGKILL) when this parent dies, so a parent that dies
between a fork and its ``{"pid": n}`` leaves no trial beside the cold start that replaces it;
a trial outlives its controller as a cold one does. With ``--die-with-owner`` (Ray, where a
trial must not outlive the worker that runs it) a trial also ends, with SIGKILL to its process
group, when its owner's end of the socket closes while it runs. A trial records its identity
in its attempt folder before any trial code runs (`tuner.executors._procs.record_self`): its
``/proc`` environment is this parent's, so its report channel does not find it. The parent
never runs trial code itself: everything a trial changes
(globals, module state, the framework's context, ``os.environ``) lives in the forked child
and dies with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import random
import runpy
import select
import signal
import socket
import sys
import threading
import time
from typing import Any

from lineage import faults
from tuner import _protocol as protocol
from tuner.executors._procs import record_self

_MAX_MESSAGE = 1 << 20
_PR_SET_PDEATHSIG = 1


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        # The controller is gone (killed, say): nobody is left to tell; end quietly.
        raise SystemExit(0) from None


def _preload(modules: list[str]) -> str | None:
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # any failure means: start cold
            return f"importing {name} failed: {type(exc).__name__}: {exc}"
    # A Python thread running at fork time may hold a lock the child then waits on forever.
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if others:
        return f"importing {', '.join(modules)} started Python threads ({', '.join(others)})"
    return None


def _child(
    request: dict[str, Any], fds: list[int], sock: socket.socket, parent: int | None
) -> None:
    """Become the trial: never returns, ends in SystemExit so the interpreter's own shutdown
    (atexit handlers, non-daemon threads, stream flushes) runs as for a cold start.
    ``parent``: the pid of the warm parent, which the trial must not outlive."""
    sock.close()
    _take_title(request)
    if parent is not None:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(137)
    os.setsid()
    channel = request["env"].get(protocol.CHANNEL)
    if channel:  # before any trial code: a controller dying now finds this fork by it
        record_self(channel)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in (devnull, *fds):
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()
    target, args = request["target"], request["args"]
    if request["module"]:
        sys.argv = [target, *args]
        sys.path[0] = os.getcwd()
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")
    sys.exit(0)


def _take_title(request: dict[str, Any]) -> None:
    """Show the trial's own command line in ``ps``, ``top`` and ``/proc/PID/cmdline`` (a fork
    keeps its parent's), so that ``ps aux | grep train.py`` finds a warm trial as a cold one."""
    import setproctitle

    head = [sys.executable, "-m"] if request["module"] else [sys.executable]
    setproctitle.setproctitle(" ".join([*head, request["target"], *request["args"]]))


def _wait(pid: int, sock: socket.socket | None) -> int:
    """The child's wait status; with ``sock``, ends the child (and this process) as soon as
    the owner's end of ``sock`` closes."""
    if sock is None:
        return os.waitpid(pid, 0)[1]
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            readable, _, _ = select.select([pidfd, sock.fileno()], [], [])
            if pidfd in readable:
                return os.waitpid(pid, 0)[1]
            if not sock.recv(1, socket.MSG_PEEK):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise SystemExit(0)
    finally:
        os.close(pidfd)


def _reap_copies(copies: set[int]) -> None:
    """Collect the copies of this parent (other slots' parents, its children) that ended.
    They are forked once, not twice: a copy forked twice would be nobody's child, adopted by
    PID 1 and outside the controller's process tree."""
    for pid in list(copies):
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                continue
        except ChildProcessError:
            pass
        copies.discard(pid)


def main(fd: int, modules: list[str], path0: str, die_with_owner: bool = False) -> None:
    sock = socket.socket(fileno=fd)
    # Terminal signals are for the controller; this process ends when its socket closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    started = time.monotonic()
    sys.path.insert(0, path0)  # what a cold trial finds first; the child keeps it there
    import setproctitle  # noqa: F401  (imported once here, so that no trial pays for it)

    unsafe = _preload(modules)
    gc.collect()
    gc.freeze()  # keeps the children's copy-on-write pages shared
    ready = {"ready": True, "unsafe": unsafe, "seconds": time.monotonic() - started}
    _send(sock, {**ready, "pid": os.getpid()})
    if unsafe:
        return
    me = os.getpid()
    copies: set[int] = set()
    while True:
        _reap_copies(copies)
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 2)
        except OSError:
            return
        if not data:
            return
        request = json.loads(data)
        pid = os.fork()
        if pid == 0 and request.get("sibling"):
            sock.close()
            sock = socket.socket(fileno=fds[0])
            me = os.getpid()
            copies = set()
            _send(sock, {"ready": True, "unsafe": None, "seconds": 0.0, "pid": me})
            continue
        if pid == 0:
            # A fork never outlives its warm parent: one that dies before saying it forked
            # (the controller then starts the trial cold) takes the fork with it.
            _child(request, fds, sock, me)
        for descriptor in fds:
            os.close(descriptor)
        if request.get("sibling"):
            copies.add(pid)
            continue
        faults.point("warm-forked-not-reported")
        _send(sock, {"pid": pid})
        status = _wait(pid, sock if die_with_owner else None)
        _send(sock, {"returncode": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    main(int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], "--die-with-owner" in sys.argv[4:])
