"""SIGTERM, SIGHUP and Ctrl-C stop a controller; a second one ends it at once.

A signal is not turned into an exception wherever the main thread happens to be: one raised
in the middle of a database read (an MLflow ``get_run``, an Optuna query) leaves that read's
statement open in the traceback's frames, and on SQLite its shared lock then blocks the
lineage writer thread's commits while the controller waits for that thread to drain. So the
first signal is *deferred*: the handler notes it, and the controller raises it at its next
safe point (`raise_pending`, or at once while it sleeps in `interruptible`). Should the main
thread not reach one within `FORCE_AFTER_S` (a call stuck on a store), the signal is
delivered again and raised wherever it lands. During cleanup a first signal is ignored and
a second ends the process at once (exit code 128 + the signal's number), whatever is left:
`tuner resume` ends what it leaves.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = [
    "FORCE_AFTER_S",
    "Interrupted",
    "cleanup_shielded",
    "interruptible",
    "raise_pending",
    "release_frames",
    "terminate_interrupts",
]

#: Seconds a deferred signal waits for a safe point before it is raised wherever it lands.
FORCE_AFTER_S = 3.0

_STOPS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Interrupted(BaseException):
    """SIGTERM/SIGHUP to the controller: stop like Ctrl-C."""


class _State:
    pending: int | None = None  # the signal noted, not raised yet
    redelivered = False  # the watchdog delivers the pending signal again
    safe = False  # the main thread sleeps in `interruptible`
    received = 0  # stop signals since `terminate_interrupts` was entered


_state = _State()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


def _deferred(signum: int, _frame: Any) -> None:
    if _state.redelivered:  # no safe point came in time: raised where it lands
        _state.redelivered = False
        if _state.pending is not None:
            _state.pending = None
            raise _exception(signum)
        return
    _state.received += 1
    if _state.received > 1:
        _exit_now(signum)
    _state.pending = signum
    if _state.safe:
        _state.pending = None
        raise _exception(signum)
    timer = threading.Timer(FORCE_AFTER_S, _force, args=(signum,))
    timer.daemon = True
    timer.start()


def _force(signum: int) -> None:
    if _state.pending is not None:
        _state.redelivered = True
        signal.pthread_kill(threading.main_thread().ident or 0, signum)


def _exit_now(signum: int) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(
            f"tuner: {signal.Signals(signum).name} again: exiting now; "
            "tuner resume ends the trials and runs left behind\n"
        )
        sys.stderr.flush()
    os._exit(128 + signum)


def release_frames(exc: BaseException) -> None:
    """Clear the finished frames ``exc`` and the exceptions chained to it went through, so
    that what they held (an open cursor, its database lock) is let go now, not when the
    exception is."""
    import traceback

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if exc.__traceback__ is not None:
            traceback.clear_frames(exc.__traceback__)
        exc = exc.__context__  # type: ignore[assignment]


def raise_pending() -> None:
    """Raise the signal the handler deferred, if any (`KeyboardInterrupt` for Ctrl-C,
    `Interrupted` for SIGTERM/SIGHUP): call where no store operation is under way."""
    signum = _state.pending
    if signum is not None:
        _state.pending = None
        raise _exception(signum)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While inside (a sleep, a wait on trial processes), a stop signal raises at once."""
    raise_pending()
    _state.safe = True
    try:
        yield
    finally:
        _state.safe = False


@contextlib.contextmanager
def terminate_interrupts(enabled: bool) -> Iterator[None]:
    """While inside, SIGTERM, SIGHUP and SIGINT are deferred to the next safe point (main
    thread only); outside, the handlers found before are back."""
    old: dict[signal.Signals, Any] = {}
    _state.pending, _state.redelivered, _state.safe, _state.received = None, False, False, 0
    try:
        if enabled and _main_thread():
            for sig in _STOPS:
                old[sig] = signal.signal(sig, _deferred)
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        _state.pending = None


def _during_cleanup(signum: int, _frame: Any) -> None:
    if _state.redelivered:  # the watchdog's copy of the signal being handled
        _state.redelivered = False
        return
    _state.received += 1
    if _state.received > 1:
        _exit_now(signum)


@contextlib.contextmanager
def cleanup_shielded(*, second_exits: bool = False) -> Iterator[None]:
    """Signals during cleanup must not leave trials RUNNING: ignore them inside; with
    ``second_exits``, the second stop signal since `terminate_interrupts` ends the process
    at once. The handlers they had before come back afterwards (Ctrl-C works again, and a
    library caller's own handlers are its own again)."""
    old: dict[signal.Signals, Any] = {}
    if _main_thread():
        handler = _during_cleanup if second_exits else signal.SIG_IGN
        for sig in _STOPS:
            old[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)
