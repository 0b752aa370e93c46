"""What the executor contract tests share: the trial's spec and the backend under test.

A module of its own (not ``conftest``): test modules import it by this unique name, where
``from conftest import ...`` would find whichever directory's conftest was loaded first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.executors import Executor, TrialSpec

__all__ = ["TRIAL", "Backend", "spec"]

TRIAL = str(Path(__file__).with_name("_contract_trial.py"))


def spec(number: int, *args: str, attempt: int = 1, **kw: Any) -> TrialSpec:
    """A spec running the contract trial with ``args``; 10 s between SIGTERM and SIGKILL (its
    SIGTERM handler writes its dump: a loaded machine can take seconds to run it)."""
    return TrialSpec(
        number=number,
        attempt=attempt,
        params={},
        argv=[sys.executable, TRIAL, *args],
        grace_period=10.0,
        **kw,
    )


@dataclass
class Backend:
    """One executor kind under test. ``make(slots, kind)`` builds an executor that is shut
    down after the test; ``processes`` is False for the in-process executor, which runs no
    process (so it has no output, devices, signals or timeouts to test)."""

    name: str
    processes: bool
    _factory: Callable[[int, str], Executor]
    _made: list[Executor] = field(default_factory=list)

    def make(self, slots: int = 1, kind: str = "cpu") -> Executor:
        executor = self._factory(slots, kind)
        self._made.append(executor)
        return executor

    def close(self) -> None:
        for executor in self._made:
            executor.shutdown()
