"""Ending the active run truthfully however the process ends.

- normal exit / ``with`` block: FINISHED; an exception: FAILED; ``KeyboardInterrupt``: KILLED;
- SIGTERM and SIGINT: the buffer is flushed at once; then the previous handler runs. When that
  was the default action (terminate), the run is ended KILLED and the signal re-raised with
  the default action, so the parent still sees death by that signal; SIGINT's default
  (``KeyboardInterrupt``) unwinds the script, which ends the run KILLED on the way out. A
  handler the program installed earlier is called after the flush; an ignored signal stays
  ignored and touches nothing;
- interpreter exit (atexit) with the run still open: flushed and ended, FAILED when an
  uncaught exception reached ``sys.excepthook``, KILLED after a signal, else FINISHED.

Handlers are installed once, and only from the main thread (Python allows nothing else).
A forked child forgets the parent's runs, so it cannot end or flush them.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, Protocol


class Live(Protocol):
    """What the process hooks need of a run that is recording (``lineage.Run``)."""

    run_id: str
    _signal: int | None

    def _note_exception(self, exc_type: type[BaseException], exc: BaseException | None) -> None: ...

    def _on_signal(self, signum: int) -> None: ...

    def _end_quietly(self, status: str) -> None: ...


_installed = False
_previous: dict[int, Any] = {}
_active: list[Live] = []
_state: dict[str, Any] = {"exc_type": None}
_prev_excepthook: Callable[..., Any] | None = None


def register(run: Live) -> None:
    _active.append(run)
    _install()


def unregister(run: Live) -> None:
    if run in _active:
        _active.remove(run)


def active() -> Live | None:
    return _active[-1] if _active else None


def _forget_in_child() -> None:
    # A forked child (data-loader workers, multiprocessing) shares the parent's run but not its
    # writer thread: it must neither flush nor end the run when it exits.
    _active.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _install() -> None:
    global _installed, _prev_excepthook
    if _installed:
        return
    _installed = True
    atexit.register(_at_exit)
    _prev_excepthook = sys.excepthook
    sys.excepthook = _excepthook
    if threading.current_thread() is not threading.main_thread():
        return  # signal.signal only works in the main thread; atexit still flushes
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            _previous[sig] = signal.getsignal(sig)
            signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            _previous.pop(sig, None)


def _excepthook(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    _state["exc_type"] = exc_type
    for run in list(_active):
        run._note_exception(exc_type, exc)
    if getattr(exc, "said_by_caller", False):
        # A full spool: one line naming the path and the space needed; Python exits 1.
        print(f"lineage: {exc}", file=sys.stderr)
        return
    hook = _prev_excepthook or sys.__excepthook__
    hook(exc_type, exc, tb)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    prev = _previous.get(signum, signal.SIG_DFL)
    if prev is signal.SIG_IGN:
        return
    for run in list(_active):
        run._on_signal(signum)
    if callable(prev):
        prev(signum, frame)
        return
    # The default action: end the runs now, then die of the same signal.
    for run in list(reversed(_active)):
        run._end_quietly("KILLED")
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _at_exit() -> None:
    for run in list(reversed(_active)):
        if run._signal is not None or _state["exc_type"] is KeyboardInterrupt:
            status = "KILLED"
        elif _state["exc_type"] is not None:
            status = "FAILED"
        else:
            status = "FINISHED"
        run._end_quietly(status)
