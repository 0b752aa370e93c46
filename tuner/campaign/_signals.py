"""SIGTERM and SIGHUP stop a controller like Ctrl-C; signals during cleanup are ignored."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Interrupted", "cleanup_shielded", "terminate_interrupts"]


class Interrupted(BaseException):
    """SIGTERM/SIGHUP to the controller: stop like Ctrl-C."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise(signum: int, _frame: Any) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def terminate_interrupts(enabled: bool) -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise `Interrupted` (main thread only)."""
    old: dict[signal.Signals, Any] = {}
    try:
        if enabled and _main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                old[sig] = signal.signal(sig, _raise)
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def cleanup_shielded() -> Iterator[None]:
    """Further signals during cleanup must not leave trials RUNNING: ignore them inside;
    the handlers they had before come back afterwards (Ctrl-C works again, and a library
    caller's own handlers are its own again)."""
    old: dict[signal.Signals, Any] = {}
    if _main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            old[sig] = signal.signal(sig, signal.SIG_IGN)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
