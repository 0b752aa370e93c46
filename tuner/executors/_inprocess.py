"""Trials as Python calls in the controller's process: for unit tests and for measuring the
controller's own cost per trial (no process start, no I/O)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from tuner.executors._base import (
    Executor,
    ExecutorFullError,
    Report,
    TrialHandle,
    TrialOutcome,
    TrialSpec,
)

__all__ = ["InProcessExecutor"]

#: ``fn(spec)`` returns intermediate reports ``[(step, {metric: value})]`` and an exit code.
TrialFunction = Callable[[TrialSpec], tuple[list[tuple[int, Mapping[str, float]]], int]]


class InProcessExecutor(Executor):
    """Runs ``fn`` synchronously inside `submit`; the handle is finished at once."""

    name = "inprocess"

    def __init__(self, fn: TrialFunction, *, slots: int = 1) -> None:
        self._fn = fn
        self._slots = slots
        self._busy = 0

    @property
    def capacity(self) -> int:
        return self._slots

    def free_slots(self) -> int:
        return self._slots - self._busy

    def submit(self, spec: TrialSpec) -> TrialHandle:
        if self._busy >= self._slots:
            raise ExecutorFullError(f"all {self._slots} slots are busy")
        self._busy += 1
        return _Handle(self, spec)

    def wait(self, timeout: float) -> None:
        return None

    def shutdown(self) -> None:
        return None


class _Handle(TrialHandle):
    def __init__(self, owner: InProcessExecutor, spec: TrialSpec) -> None:
        self._owner = owner
        self.spec = spec
        self.devices = ()
        self.started_at = time.time()
        t0 = time.monotonic()
        try:
            reports, code = owner._fn(spec)
            error = None
        except Exception as exc:  # the function's error is the trial's failure
            reports, code, error = [], 1, f"{type(exc).__name__}: {exc}"
        self._reports = [
            Report(step=s, metrics=dict(m), timestamp=self.started_at) for s, m in reports
        ]
        self._outcome = TrialOutcome(
            exit_code=code, duration=time.monotonic() - t0, stderr_tail=error or ""
        )
        self._released = False

    def poll(self) -> TrialOutcome | None:
        if not self._released:
            self._released = True
            self._owner._busy -= 1
        return self._outcome

    def reports(self) -> list[Report]:
        out, self._reports = self._reports, []
        return out

    def output_lines(self) -> list[str]:
        return []

    def request_prune(self) -> None:
        return None

    def terminate(self) -> None:
        return None
