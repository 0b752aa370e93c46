"""The executors under the contract suite: in-process, local subprocesses, and Ray.

Ray runs on the session's one local cluster (`tests/cluster/_services.shared_ray`, the same
cluster the ``tests/cluster`` tests use), started at the first Ray test and stopped at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "cluster"))

from _contract_trial import plan
from _services import shared_ray, stop_shared_ray

from tuner.executors import Executor, TrialSpec

TRIAL = str(Path(__file__).with_name("_contract_trial.py"))


def spec(number: int, *args: str, attempt: int = 1, **kw: Any) -> TrialSpec:
    """A spec running the contract trial with ``args``; 2 s between SIGTERM and SIGKILL."""
    return TrialSpec(
        number=number,
        attempt=attempt,
        params={},
        argv=[sys.executable, TRIAL, *args],
        grace_period=2.0,
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


@pytest.fixture(scope="session")
def ray_cluster_address() -> Iterator[str]:
    patch = pytest.MonkeyPatch()
    patch.setenv("RAY_AUTH_MODE", "disabled")  # this process is the cluster's driver
    try:
        yield shared_ray().wait_ready().address
    finally:
        patch.undo()
        stop_shared_ray()


def _inprocess(_tmp: Path) -> Callable[[int, str], Executor]:
    from tuner.executors._inprocess import InProcessExecutor

    def make(slots: int, kind: str) -> Executor:
        del kind  # no devices in-process
        return InProcessExecutor(lambda s: plan(list(s.argv)[2:]), slots=slots)

    return make


def _local(tmp: Path) -> Callable[[int, str], Executor]:
    from tuner.executors._devices import make_slots
    from tuner.executors._local import LocalExecutor

    def make(slots: int, kind: str) -> Executor:
        ids = [str(i) for i in range(slots)] if kind != "cpu" else "auto"
        return LocalExecutor(make_slots(kind, ids, 1, slots), run_dir=tmp / "trials")

    return make


def _ray(address: str) -> Callable[[int, str], Executor]:
    from tuner.executors._ray import RayExecutor

    def make(slots: int, kind: str) -> Executor:
        return RayExecutor(address=address, kind=kind, per_trial=1, parallel=slots)

    return make


@pytest.fixture(
    params=[
        "inprocess",
        "local",
        pytest.param("ray", marks=[pytest.mark.ray, pytest.mark.slow]),
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "ray":
        factory = _ray(request.getfixturevalue("ray_cluster_address"))
    elif request.param == "local":
        factory = _local(tmp_path)
    else:
        factory = _inprocess(tmp_path)
    backend = Backend(request.param, request.param != "inprocess", factory)
    try:
        yield backend
    finally:
        backend.close()
        if request.param == "ray":
            import ray

            if ray.is_initialized():
                ray.shutdown()


@pytest.fixture
def processes_only(backend: Backend) -> Backend:
    if not backend.processes:
        pytest.skip("the in-process executor runs no process: nothing to signal or watch")
    return backend
