"""``resources.per_trial`` as a fraction or ``auto``, and ``tuner devices [CONFIG]``, as a user
meets them: the CLI in a subprocess (exit codes, one line per error), a fake ``nvidia-smi``
with whole GPUs and MIG instances, and a machine with no GPU tool at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from _fake_gpu import install

from tuner.executors._devices import parse_gpus

MIG_GPUS = [
    {"index": 0, "uuid": "GPU-a", "total": 40960,
     "mig": [{"profile": "3g.20gb", "n": 0, "uuid": "MIG-aa"},
             {"profile": "3g.20gb", "n": 1, "uuid": "MIG-ab"}]},
    {"index": 1, "uuid": "GPU-b", "total": 81920},
]  # fmt: skip


def _config(tmp_path: Path, resources: dict[str, Any]) -> Path:
    resources = dict(resources)
    executor = resources.pop("executor", {"name": "local"})
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "shared",
                "command": ["python", "train.py"],
                "target": {"metric": "loss", "goal": "minimize"},
                "parameters": {"x": {"type": "float", "low": 0, "high": 1}},
                "budget": {"trials": 2},
                "resources": resources,
                "executor": executor,
            }
        )
    )
    return path


def _tuner(
    tmp_path: Path, *args: str, gpus: list[dict[str, Any]] | None = None
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith("VISIBLE_DEVICES")}
    if gpus is not None:
        bin_dir, state = install(tmp_path, gpus)
        env["FAKE_GPU_STATE"] = str(state)
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"  # no real nvidia-smi or npu-smi can answer
    argv = [sys.executable, "-m", "tuner.cli", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("resources", "rule"),
    [
        (
            {"per_trial": 0.3},
            "resources.per_trial must be a whole number of devices (1, 2, ...), a fraction 1/k "
            "of one device (0.5, 0.25, ...) or auto, got 0.3.",
        ),
        (
            {"per_trial": 1.5},
            "resources.per_trial must be a whole number of devices (1, 2, ...), a fraction 1/k "
            "of one device (0.5, 0.25, ...) or auto, got 1.5.",
        ),
        (
            {"per_trial": 0.5, "kind": "cpu"},
            "resources.per_trial must be a whole number with kind: cpu (CPU slots share no "
            "device; resources.parallel says how many trials run at once), got 0.5.",
        ),
        (
            {"per_trial": 0.25, "devices": [0, 1], "parallel": 9},
            "resources.parallel must be <= 8 (2 devices listed, 4 trials per device at "
            "per_trial: 0.25), got 9.",
        ),
        (
            {"per_trial": "auto", "memory_params": ["y"]},
            "resources.memory_params[0] must name a parameter of the campaign, got 'y'.",
        ),
    ],
)
def test_bad_resources_are_refused_in_one_line(
    tmp_path: Path, resources: dict[str, Any], rule: str
) -> None:
    path = _config(tmp_path, resources)
    done = _tuner(tmp_path, "validate", str(path))
    assert done.returncode == 2
    assert done.stderr == f"tuner validate: error: {path}: {rule}\n"


def test_parallel_defaults_to_what_fits() -> None:
    from tuner.config import ResourcesConfig

    assert ResourcesConfig(per_trial=0.25, devices=[0, 1]).parallel == 8
    assert ResourcesConfig(per_trial=1.0).per_trial == 1
    assert ResourcesConfig(per_trial="auto", devices=[0]).parallel == 8
    assert ResourcesConfig(per_trial=0.5, parallel=3).parallel == 3
    assert ResourcesConfig().parallel == 1
    half = ResourcesConfig(per_trial=0.5)
    assert (half.devices_per_trial, half.trials_per_device, half.parallel_given) == (1, 2, False)


def test_mig_instances_are_devices_of_their_own() -> None:
    listing = (
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-a)\n"
        "  MIG 3g.20gb     Device  0: (UUID: MIG-aa)\n"
        "  MIG 3g.20gb     Device  1: (UUID: MIG-ab)\n"
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)\n"
    )
    assert parse_gpus(listing) == [
        {"id": "MIG-aa", "name": "MIG 3g.20gb on GPU 0"},
        {"id": "MIG-ab", "name": "MIG 3g.20gb on GPU 0"},
        {"id": "1", "name": "NVIDIA H100 80GB HBM3"},
    ]


def test_devices_lists_mig_instances_and_cuts_shared_slots(tmp_path: Path) -> None:
    path = _config(tmp_path, {"kind": "gpu", "per_trial": 0.5})
    done = _tuner(tmp_path, "devices", str(path), "--format", "json", gpus=MIG_GPUS)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [g["id"] for g in doc["gpus"]] == ["MIG-aa", "MIG-ab", "1"]
    assert doc["usable"] == {"kind": "gpu", "devices": ["MIG-aa", "MIG-ab", "1"]}
    assert doc["problems"] == []
    slots = doc["config"]["slots"]
    # Each device once before any twice; the MIG UUID is what CUDA_VISIBLE_DEVICES takes.
    assert [s["env"]["CUDA_VISIBLE_DEVICES"] for s in slots] == ["MIG-aa", "MIG-ab", "1"] * 2
    assert {s["share"] for s in slots} == {2}
    # --config still works, and the table says how many trials share a device.
    table = _tuner(tmp_path, "devices", "--config", str(path), gpus=MIG_GPUS)
    assert table.returncode == 0, table.stderr
    assert f"{path}: 6 slot(s) of kind gpu, up to 2 trials per device (per_trial: 0.5)" in (
        table.stdout
    )


def test_no_gpu_tool_is_a_problem_only_for_a_config_that_asks_for_gpus(tmp_path: Path) -> None:
    cpu = _tuner(tmp_path, "devices", str(_config(tmp_path, {"kind": "auto"})))
    assert cpu.returncode == 0, cpu.stderr
    assert "resources.devices: auto gives CPU slots (no GPU or NPU usable)" in cpu.stdout
    assert "c.yaml: 1 slot(s) of kind cpu" in cpu.stdout
    assert "problem:" not in cpu.stdout
    gpu = _tuner(tmp_path, "devices", str(_config(tmp_path, {"kind": "gpu", "devices": [0]})))
    assert gpu.returncode == 0, gpu.stderr
    assert "problem: no CUDA GPU found: nvidia-smi not found on PATH" in gpu.stdout.splitlines()
