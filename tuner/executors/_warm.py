"""Warm parents: one per slot, each starts trials as forks of a process that already imported
the framework (``trial.preload``), so a trial no longer pays its imports.

`plan` decides whether a command can start warm (a Python script or ``-m`` module run by the
tuner's own interpreter) and which modules to preload: those of a known fork-safe set that
the script imports (found by reading its source, never by running it), MLflow's client and
SQL store where the script records (lineage imports them only when a run starts), plus the
ones the config declares. Anything else starts cold, with one line that
says why. `WarmParent.launch` returns an object with the part of `subprocess.Popen` that the
local executor uses, so a warm trial is supervised (prune, timeout, SIGTERM, SIGKILL on its
process group) exactly as a cold one.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["Plan", "WarmChild", "WarmParent", "WarmStartError", "plan"]

# Top-level packages known to be safe to fork after import (no Python threads, no device
# context until first use), checked again at run time by the parent itself.
_FORK_SAFE = frozenset(
    {
        "lineage",
        "lightning",
        "mindspore",
        "mlflow",
        "numpy",
        "pandas",
        "pytorch_lightning",
        "scipy",
        "sklearn",
        "torch",
        "tuner",
        "torchvision",
        "transformers",
    }
)
# What lineage imports only when a run starts: its recording modules, the MLflow client and
# its SQL store (SQLAlchemy's SQLite dialect, what the store checks its schema with).
_LINEAGE_LAZY = (
    "lineage._recording",
    "lineage.store",
    "mlflow",
    "mlflow.store.tracking.sqlalchemy_store",
    "mlflow.store.tracking.sqlalchemy_workspace_store",
    "sqlalchemy.dialects.sqlite",
    "alembic.command",
)
# What a framework imports only as it compiles its first network (gradient definitions).
_FRAMEWORK_LAZY = {"mindspore": ("mindspore.ops._grad_experimental",)}
# What a framework recorder of lineage imports only as it draws its first figure (the data
# sample, the input pipeline): matplotlib's Agg canvas and lineage's figure modules.
_FIGURES = ("matplotlib.figure", "matplotlib.backends.backend_agg", "matplotlib.table")
_RECORDER_FIGURES = {
    "lineage.mindspore": (
        *_FIGURES,
        "lineage.mindspore._sample_figures",
        "lineage.mindspore._pipeline_figure",
    ),
    "lineage.pytorch": (*_FIGURES, "lineage.pytorch._sample"),
}
_READY_TIMEOUT = 300.0
_MAX_MESSAGE = 1 << 20


class WarmStartError(RuntimeError):
    """The warm parent cannot start trials (it died, or its preload was unsafe)."""


@dataclass(frozen=True)
class Plan:
    """How to start a command warm: ``target`` is a script path (or a module name when
    ``module``), ``args`` the trial's own arguments, ``modules`` what the parent imports."""

    target: str
    module: bool
    args: tuple[str, ...]
    modules: tuple[str, ...]
    #: First on the parent's ``sys.path``, as on a cold trial's: the script's folder, or the
    #: working directory for ``-m``.
    path0: str = ""


def plan(
    argv: Sequence[str], cwd: str | None, preload: bool | Sequence[str]
) -> tuple[Plan | None, str | None]:
    """``(plan, None)`` when ``argv`` can start warm, else ``(None, why)``; ``why`` is None
    when preloading is simply off."""
    if preload is False:
        return None, None
    if not argv:
        return None, "the command is empty"
    exe = os.path.abspath(shutil.which(argv[0]) or argv[0])
    ours = sys.executable
    # Same binary and same bin folder: a virtual environment's python links to its base one.
    if os.path.dirname(exe) != os.path.dirname(ours) or not _same_file(exe, ours):
        return None, f"its command {argv[0]!r} is not the tuner's Python ({sys.executable})"
    rest = list(argv[1:])
    while rest and rest[0] == "-u":
        rest.pop(0)
    if rest[:1] == ["-m"] and len(rest) >= 2:
        target, module, args = rest[1], True, rest[2:]
        spec = _find_spec(target)
        source = spec.origin if spec is not None else None
    elif rest and not rest[0].startswith("-"):
        target, module, args = rest[0], False, rest[1:]
        source = os.path.join(cwd or os.getcwd(), target)
    else:
        return None, f"its Python options {' '.join(rest[:1])!r} are not ones it can start warm"
    if source is None or not os.path.isfile(source):
        return None, f"it cannot read the script {target!r}"
    declared = [] if preload is True else list(preload)
    found = [m for m in _imports(source) if m.split(".")[0] in _FORK_SAFE]
    if any(m.split(".")[0] in ("lineage", "mlflow") for m in found):
        found += _LINEAGE_LAZY
    for framework, lazy in _FRAMEWORK_LAZY.items():
        if any(m.split(".")[0] == framework for m in found):
            found += lazy
    for recorder, figures in _RECORDER_FIGURES.items():
        if any(m == recorder or m.startswith(recorder + ".") for m in found):
            found += figures
    path0 = os.path.abspath(cwd or os.getcwd())
    if not module:
        path0 = os.path.dirname(os.path.abspath(source))
    # A declared module may sit beside the script: the parent finds it there (path0 is first
    # on its sys.path), though the tuner's own interpreter does not.
    modules = [
        m
        for m in dict.fromkeys([*found, *declared])
        if _installed(m) or (m in declared and _beside(m, path0))
    ]
    return Plan(target, module, tuple(args), tuple(modules), path0), None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _find_spec(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _beside(name: str, folder: str) -> bool:
    try:
        return importlib.machinery.PathFinder.find_spec(name.split(".")[0], [folder]) is not None
    except (ImportError, ValueError):
        return False


def _installed(name: str) -> bool:
    from tuner.config import module_installed

    return module_installed(name)


def _imports(path: str) -> list[str]:
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            # ``from tuner import trial``: the name may be a module (kept if it is one).
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


class WarmParent:
    """One warm parent process for one slot; `launch` starts one trial at a time.

    Not thread-safe: the executor calls `launch` from its own thread, one trial per slot.
    """

    def __init__(
        self,
        modules: Sequence[str],
        env: Mapping[str, str],
        *,
        die_with_owner: bool = False,
        fork_of: WarmParent | None = None,
        path0: str = "",
    ) -> None:
        self.modules = tuple(modules)
        self.path0: str = fork_of.path0 if fork_of is not None else path0 or os.getcwd()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        self.unsafe: str | None = None
        self.ready_seconds: float | None = None
        self._ready = False
        self._pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        if fork_of is not None:
            # A copy of a parent that is importing (or has imported) the same modules: it
            # costs a fork once that parent is ready, not a second round of imports.
            try:
                message = json.dumps({"sibling": True}).encode()
                socket.send_fds(fork_of._sock, [message], [theirs.fileno()])
            except OSError:
                pass  # that parent is gone: this one ends at once, and `wait_ready` says so
            theirs.close()
            return
        # -P: a folder or module in the controller's working directory named like an
        # installed package (tuner/, numpy.py) must not shadow it in the parent.
        cmd = [sys.executable, "-P", "-m", "tuner.executors._forkserver_main"]
        cmd += [str(theirs.fileno()), json.dumps(list(self.modules)), self.path0]
        if die_with_owner:
            # A trial ends with this process (its owner): a Ray worker's trial never outlives
            # the worker, as a cold one does not.
            cmd.append("--die-with-owner")
        self._proc = subprocess.Popen(
            cmd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        self._pid = self._proc.pid
        theirs.close()

    def sibling(self) -> WarmParent:
        """A parent for another slot with the same environment, forked from this one as soon
        as its imports are done."""
        return WarmParent(self.modules, {}, fork_of=self)

    def _recv(self, timeout: float | None) -> dict[str, Any]:
        self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(_MAX_MESSAGE)
        except (TimeoutError, OSError) as exc:
            raise WarmStartError(f"the warm parent did not answer: {exc}") from None
        if not data:
            raise WarmStartError("the warm parent ended")
        message: dict[str, Any] = json.loads(data)
        return message

    def wait_ready(self) -> str | None:
        """Blocks until the parent has imported its modules; returns why it is unsafe."""
        if not self._ready:
            message = self._recv(_READY_TIMEOUT)
            self._ready = True
            self.unsafe = message.get("unsafe")
            self.ready_seconds = message.get("seconds")
            self._pid = message.get("pid", self._pid)
        return self.unsafe

    @property
    def alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        # A forked sibling is no child of ours: alive while its process runs (not a zombie
        # left to an init that does not reap).
        if self._pid is None:
            return True
        try:
            with open(f"/proc/{self._pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def launch(
        self,
        target: str,
        module: bool,
        args: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str],
        outputs: tuple[int, int] | None = None,
    ) -> WarmChild:
        """Forks the trial; its stdout and stderr are new pipes (`WarmChild.stdout`,
        `WarmChild.stderr`), or the two open descriptors ``outputs`` (then those are None)."""
        if self.wait_ready():
            raise WarmStartError(self.unsafe or "unsafe")
        if outputs is None:
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
        else:
            out_r, err_r = -1, -1
            out_w, err_w = os.dup(outputs[0]), os.dup(outputs[1])
        request = {
            "target": target,
            "module": module,
            "args": list(args),
            "cwd": cwd or os.getcwd(),
            "env": dict(env),
        }
        try:
            socket.send_fds(self._sock, [json.dumps(request).encode()], [out_w, err_w])
            pid = int(self._recv(60.0)["pid"])
        except (OSError, WarmStartError) as exc:
            for fd in (out_r, err_r):
                if fd >= 0:
                    os.close(fd)
            raise WarmStartError(f"the warm parent did not start the trial: {exc}") from None
        finally:
            os.close(out_w)
            os.close(err_w)
        if outputs is not None:
            return WarmChild(pid, None, None, self)
        return WarmChild(pid, os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"), self)

    def close(self) -> None:
        self._sock.close()
        if self._proc is None:
            deadline = time.monotonic() + 10.0
            while self.alive and self._pid is not None and time.monotonic() < deadline:
                time.sleep(0.02)
            if self._pid is not None and self.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._pid, signal.SIGKILL)
            return
        try:
            self._proc.wait(10.0)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class WarmChild:
    """The part of `subprocess.Popen` the local executor uses, for a forked trial."""

    def __init__(
        self, pid: int, stdout: IO[bytes] | None, stderr: IO[bytes] | None, parent: WarmParent
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._parent = parent
        self._done = threading.Event()
        threading.Thread(target=self._wait_status, daemon=True, name=f"warm-{pid}").start()

    def _wait_status(self) -> None:
        try:
            self.returncode = int(self._parent._recv(None)["returncode"])
        except WarmStartError:
            # The parent died under its child: wait for the orphan to end; its exit status
            # is lost with the parent.
            while os.path.exists(f"/proc/{self.pid}"):
                time.sleep(0.2)
            self.returncode = -signal.SIGKILL
        self._done.set()

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired([str(self.pid)], timeout or 0.0)
        assert self.returncode is not None
        return self.returncode
