"""``resources.per_trial: auto`` on Ray: each trial asks Ray for the share of a device its
measured memory implies, Ray puts trials whose shares fit on one device, and a trial that
runs out of memory beside another is retried asking for a whole device; a whole campaign
configured so records each trial's peak memory and plans for the cluster's devices. Ray is the test
session's local cluster (its 2 GPUs are declared resources); the memory is a fake CUDA driver
(`_fake_gpu`) that the trials' tasks find on the trials' ``PATH``. No GPU is used or claimed."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _fake_gpu import STATE, install

from tuner.executors import TrialHandle, TrialOutcome, TrialSpec

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TRIAL = str(Path(__file__).with_name("_packed_trial.py"))


def _until(check: Callable[[], Any], what: str, ex: Any) -> Any:
    deadline = time.monotonic() + 120.0
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"waited 120s for {what}"
        ex.wait(0.05)


def test_auto_on_ray_asks_for_the_share_its_memory_implies(
    ray_cluster_address: str, tmp_path: Path
) -> None:
    import ray

    from tuner.executors._packing import Packing
    from tuner.executors._ray import RayExecutor

    gpus = [{"index": i, "uuid": f"GPU-{i}", "total": 1000} for i in range(2)]
    bin_dir, state = install(tmp_path, gpus)
    folder = tmp_path / "out"
    folder.mkdir()
    trial_env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", STATE: str(state)}

    def spec(number: int, mib: float, attempt: int = 1) -> TrialSpec:
        params = {"folder": str(folder), "mib": mib, "n": number}
        return TrialSpec(number=number, attempt=attempt, params=params,
                         argv=[sys.executable, TRIAL], grace_period=5.0,
                         env={"TUNER_PARAMS": json.dumps(params), **trial_env})  # fmt: skip

    ex = RayExecutor(address=ray_cluster_address, kind="gpu", per_trial="auto", parallel=None,
                     packing=Packing(memory_params=[]), sample_interval=0.1)  # fmt: skip
    hold = None
    try:
        assert ex.capacity == 16  # 2 GPUs in the cluster, up to 8 trials on each

        def outcome(handle: TrialHandle) -> TrialOutcome:
            return _until(handle.poll, f"trial {handle.spec.number} to end", ex)

        def holds(handle: TrialHandle) -> bool:
            handle.reports()
            pid = handle.process_info().get("pid")
            return pid is not None and (state / "procs" / str(pid)).exists()

        def free_gpu(share: float) -> None:  # Ray's view of what is held settles shortly
            _until(lambda: abs(ray.available_resources().get("GPU", 0.0) - share) < 2e-4,
                   f"{share:g} GPU to be free in Ray's accounting", ex)  # fmt: skip

        def queries() -> int:
            path = state / "queries"
            return len(path.read_text().splitlines()) if path.exists() else 0

        # Nothing measured yet: the first trial asks for a whole GPU and runs alone.
        first = ex.submit(spec(0, 300))
        _until(lambda: holds(first), "the first trial to hold its memory", ex)
        free_gpu(1.0)
        asked = queries()
        _until(lambda: queries() >= asked + 2, "its task to measure it", ex)
        (folder / "release-0").touch()
        done = outcome(first)
        assert done.succeeded and done.neighbours == 0 and done.peak_memory_mib == 300.0

        # Another job holds the other GPU: what follows shares the one that is left.
        @ray.remote(num_gpus=1, num_cpus=0)
        class Hold:
            def ready(self) -> bool:
                return True

        hold = Hold.remote()  # type: ignore[attr-defined]
        ray.get(hold.ready.remote())

        # 300 MiB measured, in the 900 packing may use: each asks for 0.334 of a GPU, and
        # Ray puts both on the free one. The second takes 800 beside the first's 300.
        _until(lambda: ex.free_slots() > 0, "room for a trial", ex)
        small = ex.submit(spec(1, 300))
        _until(lambda: holds(small), "trial 1 to hold its memory", ex)
        _until(lambda: ex.free_slots() > 0, "room for another", ex)
        greedy = ex.submit(spec(2, 800))
        failed = outcome(greedy)
        assert failed.exit_code == 1 and failed.packed_oom and failed.neighbours == 1
        seen = [json.loads((folder / f"env-{n}-1.json").read_text()) for n in (1, 2)]
        assert seen[0]["CUDA_VISIBLE_DEVICES"] == seen[1]["CUDA_VISIBLE_DEVICES"]

        # Its retry asks for a whole GPU: it waits for trial 1 to leave, then runs alone.
        _until(lambda: ex.free_slots() > 0, "room for the retry", ex)
        retry = ex.submit(spec(2, 800, attempt=2))
        assert ex.free_slots() == 0  # nothing is sent while a request waits to be placed
        free_gpu(1 - 0.334)  # the other job's GPU and trial 1's share are held
        (folder / "release-1").touch()
        assert outcome(small).neighbours == 1
        _until(lambda: holds(retry), "the retry to hold its memory", ex)
        free_gpu(0.0)
        asked = queries()
        _until(lambda: queries() >= asked + 2, "its task to measure it", ex)
        (folder / "release-2").touch()
        again = outcome(retry)
        assert again.succeeded and again.neighbours == 0 and again.peak_memory_mib == 800.0
    finally:
        ex.shutdown()
        if hold is not None:
            ray.kill(hold)
        if ray.is_initialized():
            ray.shutdown()


#: Takes 100 MiB, stays until its task measured it twice, and reports.
SMALL = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from _fake_gpu import allocate, wait_measured
from tuner import trial
allocate(100)
wait_measured()
trial.report(0, loss=1.0)
"""


def test_a_campaign_at_auto_on_ray_records_what_its_trials_held(
    ray_cluster_address: str, tmp_path: Path, sqlite_uri: str
) -> None:
    # The config as a user writes it: per_trial: auto with executor ray, the fake driver on the
    # trials' PATH through env:. The campaign plans for the cluster's 2 GPUs x 8 trials.
    import ray
    import yaml
    from mlflow.tracking import MlflowClient

    from tuner.campaign import Controller
    from tuner.config import load_config

    bin_dir, state = install(tmp_path, [{"index": i, "uuid": f"GPU-{i}", "total": 1000}
                                        for i in range(2)])  # fmt: skip
    (tmp_path / "trial.py").write_text(SMALL)
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({
        "name": "t",
        "command": [sys.executable, str(tmp_path / "trial.py")],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 2},
        "trial": {"timeout": 120, "preload": False},
        "resources": {"kind": "gpu", "per_trial": "auto"},
        "executor": {"name": "ray", "address": ray_cluster_address},
        "env": {"PATH": f"{bin_dir}:{os.environ['PATH']}", STATE: str(state)},
        "lineage": {"tracking_uri": sqlite_uri},
    }))  # fmt: skip
    config = load_config(path)
    try:
        result = Controller(config, importance=False, handle_signals=False).run()
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert result.counts["COMPLETE"] == 2
    assert config.resources.parallel == 16
    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.get_experiment_by_name("t")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    trials = [r for r in runs if r.data.tags.get("tuner.trial_number") is not None]
    assert [r.data.tags["tuner.device.peak_memory_mib"] for r in trials] == ["100", "100"]
    (parent,) = [r for r in runs if r.data.tags.get("tuner.trial_number") is None]
    assert parent.data.params["resources.parallel"] == "16"
