"""The executors under the contract suite: in-process, local subprocesses, and Ray.

Ray runs on the session's one local cluster (`tests/cluster/_services.shared_ray`, the same
cluster the ``tests/cluster`` tests use), started at the first Ray test and stopped at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "cluster"))

from _contract_trial import plan
from _executor_kit import Backend
from _services import shared_ray, stop_shared_ray

from tuner.executors import Executor


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


def _local(tmp: Path, *, warm: bool = False) -> Callable[[int, str], Executor]:
    from tuner.executors import make_slots
    from tuner.executors._local import LocalExecutor

    def make(slots: int, kind: str) -> Executor:
        ids = [str(i) for i in range(slots)] if kind != "cpu" else "auto"
        slot_list = make_slots(kind, ids, 1, slots)
        return LocalExecutor(slot_list, run_dir=tmp / "trials", preload=warm)

    return make


def _ray(address: str) -> Callable[[int, str], Executor]:
    from tuner.executors._ray import RayExecutor

    def make(slots: int, kind: str) -> Executor:
        return RayExecutor(address=address, kind=kind, per_trial=1, parallel=slots)

    return make


_RAY = pytest.param("ray", marks=[pytest.mark.ray, pytest.mark.slow])


def _backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "ray":
        factory = _ray(request.getfixturevalue("ray_cluster_address"))
    elif request.param in ("local", "local-warm"):
        factory = _local(tmp_path, warm=request.param == "local-warm")
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


@pytest.fixture(params=["inprocess", "local", "local-warm", _RAY])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Every executor."""
    yield from _backend(request, tmp_path)


@pytest.fixture(params=["local", "local-warm", _RAY])
def processes_only(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The executors that run a process (signals, timeouts, devices, output): the in-process
    one has none, so these tests are not generated for it rather than skipped."""
    yield from _backend(request, tmp_path)
