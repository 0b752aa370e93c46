"""A campaign's local state directory and its controller lock.

``<config dir>/.tuner/<campaign>/`` holds ``controller.lock`` (an ``flock`` held by the live
controller: the kernel drops it when the process dies, even on kill -9), ``controller.json``
(pid, host, start time, and whether it exited cleanly) and ``trials/`` (per-attempt report
channels and stop flags).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import time
from pathlib import Path
from typing import IO, Any

from tuner._errors import TunerError

__all__ = ["CampaignDir"]


class CampaignDir:
    def __init__(self, base_dir: Path, name: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        self.path = Path(base_dir) / ".tuner" / safe
        self.trials = self.path / "trials"
        self._lock_file: IO[bytes] | None = None

    @property
    def _lock_path(self) -> Path:
        return self.path / "controller.lock"

    @property
    def _info_path(self) -> Path:
        return self.path / "controller.json"

    def acquire(self) -> dict[str, Any]:
        """Take the controller lock; returns what the previous controller left (may be {}).

        Raises `TunerError` when another live controller holds it.
        """
        self.trials.mkdir(parents=True, exist_ok=True)
        f = open(self._lock_path, "a+b")  # noqa: SIM115 - held for the controller's life
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            other = self.previous()
            raise TunerError(
                f"campaign directory {self.path}: another controller is running this campaign "
                f"(pid {other.get('pid', '?')} on {other.get('host', '?')}); "
                "stop it first or wait for it"
            ) from None
        self._lock_file = f
        previous = self.previous()
        self._write(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.time(),
                "clean_exit": False,
            }
        )
        return previous

    def release(self, *, clean: bool) -> None:
        if self._lock_file is None:
            return
        info = self.previous()
        info.update({"clean_exit": clean, "ended": time.time()})
        self._write(info)
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()
        self._lock_file = None

    def previous(self) -> dict[str, Any]:
        try:
            data = json.loads(self._info_path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def controller_alive(self) -> bool:
        """True when some process holds the controller lock now."""
        if not self._lock_path.exists():
            return False
        with open(self._lock_path, "a+b") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    def _write(self, info: dict[str, Any]) -> None:
        tmp = self._info_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(self._info_path)
