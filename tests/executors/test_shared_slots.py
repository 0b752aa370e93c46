"""Half a device per trial on local slots and on Ray: two trials run at once on one device's
worth of resources, each seeing exactly one device. Real subprocess trials; Ray is the test
session's local cluster, whose GPUs and NPUs are declared resources (no device is used)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tuner.executors import Executor, TrialSpec

TRIAL = str(Path(__file__).with_name("_packed_trial.py"))
VARIABLE = {"gpu": "CUDA_VISIBLE_DEVICES", "npu": "ASCEND_RT_VISIBLE_DEVICES"}


def _spec(folder: Path, number: int) -> TrialSpec:
    params = {"folder": str(folder), "mib": 0}
    return TrialSpec(
        number=number,
        attempt=1,
        params=params,
        argv=[sys.executable, TRIAL],
        grace_period=5.0,
        env={"TUNER_PARAMS": json.dumps(params)},
    )


def _until(check: Callable[[], Any], what: str, executor: Executor) -> None:
    deadline = time.monotonic() + 120.0
    while not check():
        assert time.monotonic() < deadline, f"waited 120s for {what}"
        executor.wait(0.05)


def _two_halves(executor: Executor, folder: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    """Start two trials; once both run, their handles and the device variables they saw."""
    handles = [executor.submit(_spec(folder, n)) for n in range(2)]
    seen = [folder / f"env-{n}-1.json" for n in range(2)]
    _until(lambda: all(p.exists() for p in seen), "both trials to run", executor)
    return handles, [json.loads(p.read_text()) for p in seen]


def _finish(executor: Executor, folder: Path, handles: list[Any]) -> None:
    (folder / "release").touch()
    _until(lambda: all(h.poll() is not None for h in handles), "both trials to end", executor)
    assert all(h.poll().succeeded for h in handles)


def test_local_half_slots_share_one_device(tmp_path: Path) -> None:
    from tuner.executors import make_slots
    from tuner.executors._local import LocalExecutor

    executor = LocalExecutor(make_slots("npu", ["3"], 0.5, None), run_dir=tmp_path / "run")
    try:
        assert executor.capacity == 2 and executor.free_slots() == 2
        handles, envs = _two_halves(executor, tmp_path)
        assert [(e["ASCEND_RT_VISIBLE_DEVICES"], e["DEVICE_ID"]) for e in envs] == [("3", "0")] * 2
        assert executor.free_slots() == 0
        _finish(executor, tmp_path, handles)
        assert [h.poll().neighbours for h in handles] == [1, 1]
    finally:
        executor.shutdown()


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpu", "npu"])
def test_ray_tasks_ask_for_half_a_device(
    ray_cluster_address: str, tmp_path: Path, kind: str
) -> None:
    import ray

    from tuner.executors._ray import RayExecutor

    executor = RayExecutor(address=ray_cluster_address, kind=kind, per_trial=0.5, parallel=2)
    resource = kind.upper()
    try:
        total = ray.cluster_resources()[resource]
        handles, envs = _two_halves(executor, tmp_path)
        for env in envs:
            assert len(env[VARIABLE[kind]].split(",")) == 1  # one device each
        # Both run, and together they hold one device's worth of the resource.
        assert ray.available_resources().get(resource, 0.0) == pytest.approx(total - 1.0)
        _finish(executor, tmp_path, handles)
    finally:
        executor.shutdown()
        if ray.is_initialized():
            ray.shutdown()
