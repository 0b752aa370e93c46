"""Trials asked of the study ahead of a free executor slot.

While every slot is busy, the controller asks the study for its next trial and keeps it
prepared (parameters sampled, MLflow run reserved), so that a freed slot then waits only for
the trial's process to start. A prepared trial starts on the next free slot; when the
campaign stops launching it is discarded instead: back to WAITING in the study, its run
freed (`tuner.campaign._launch.Launcher.discard`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tuner.records import disk_full

if TYPE_CHECKING:
    from tuner.campaign._launch import Launcher
    from tuner.campaign._running import Prepared, RunningTrial
    from tuner.executors import Executor

__all__ = ["AskAhead"]


class AskAhead:
    """The queue of prepared trials, oldest first.

    ``prepare`` asks the study for the next trial (None: it has none to give, the budget is
    reached or a grid used up); ``started`` receives each trial this queue starts, with the
    controller seconds it took (ask + launch).
    """

    def __init__(
        self,
        launcher: Launcher,
        *,
        prepare: Callable[[], Prepared | None],
        started: Callable[[RunningTrial, float], None],
    ) -> None:
        self._launcher = launcher
        self._prepare = prepare
        self._started = started
        self._prepared: list[Prepared] = []

    def __len__(self) -> int:
        return len(self._prepared)

    def start_waiting(self, executor: Executor) -> None:
        """Start prepared trials on the free slots, asking for no new one."""
        while self._prepared and executor.free_slots():
            self._start(self._prepared.pop(0))

    def fill(self, executor: Executor) -> bool:
        """Start a trial on every free slot, prepared ones first; False when the study has
        no more trial to give."""
        while executor.free_slots() > 0:
            prepared = self._prepared.pop(0) if self._prepared else self._prepare()
            if prepared is None:
                return False
            self._start(prepared)
        return True

    def ask_ahead(self) -> None:
        """Ask for the next trial while the slots are busy, unless one is prepared already."""
        if self._prepared:
            return
        prepared = self._prepare()
        if prepared is not None:
            self._prepared.append(prepared)

    def discard(self) -> None:
        """Every prepared trial goes back to WAITING; their runs are freed."""
        while self._prepared:
            self._launcher.discard(self._prepared.pop(0))

    def forget(self) -> None:
        """Drop the prepared trials without touching the study or the store (a full disk):
        they stay RUNNING in the study, where ``tuner resume`` ends them."""
        self._prepared.clear()

    def drop(self) -> None:
        """`discard` as the campaign stops; on a full disk, `forget` (the store cannot take
        the freed runs; the campaign ends with that one line)."""
        try:
            self.discard()
        except Exception as exc:
            if disk_full(exc) is None:
                raise
            self.forget()

    def _start(self, prepared: Prepared) -> None:
        t0 = time.perf_counter()
        try:
            rt = self._launcher.start(prepared)
        except BaseException:
            self._prepared.insert(0, prepared)  # back to WAITING by the stop that follows
            raise
        self._started(rt, prepared.seconds + time.perf_counter() - t0)
