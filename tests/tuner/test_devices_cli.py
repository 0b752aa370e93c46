"""``tuner devices`` as a user runs it: with no GPU tools, with a faked ``nvidia-smi`` (four
GPUs, a visible list naming one the machine lacks, a failing driver), and a config's slots."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SMI = """#!/bin/sh
if [ -n "$SMI_FAIL" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
  exit 9
fi
for i in 0 1 2 3; do echo "GPU $i: NVIDIA H200 (UUID: GPU-$i)"; done
"""


def _devices(
    tmp_path: Path, *args: str, fake: bool, **env: str
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if fake:
        smi = bin_dir / "nvidia-smi"
        smi.write_text(SMI)
        smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "PATH")
    }
    # Only the test's bin folder and the system's: no real nvidia-smi or npu-smi can answer.
    base["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    base.update(env)
    argv = [sys.executable, "-m", "tuner.cli", "devices", *args]
    return subprocess.run(argv, env=base, capture_output=True, text=True, timeout=120)


def test_without_gpu_tools_cpu_slots_and_no_problem(tmp_path: Path) -> None:
    done = _devices(tmp_path, fake=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "GPUs (nvidia-smi -L): none" in lines
    assert "resources.devices: auto gives CPU slots (no GPU or NPU usable)" in lines
    # A machine without accelerators is meant to lack their tools.
    assert [line for line in lines if line.startswith("problem: ")] == []


def test_faked_gpus_a_visible_list_and_the_slots_of_a_config(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "gpu",
                "command": ["python", "train.py"],
                "target": {"metric": "loss", "goal": "minimize"},
                "parameters": {"x": {"type": "float", "low": 0, "high": 1}},
                "budget": {"trials": 2},
                "resources": {"kind": "gpu", "per_trial": 1, "parallel": 2},
            }
        )
    )
    done = _devices(
        tmp_path, "--config", str(config), "--format", "json", fake=True,
        CUDA_VISIBLE_DEVICES="3,1,7",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [g["id"] for g in doc["gpus"]] == ["0", "1", "2", "3"]
    assert doc["gpus"][0]["name"] == "NVIDIA H200"
    assert doc["usable"] == {"kind": "gpu", "devices": ["3", "1"]}
    assert doc["problems"][0] == (
        "CUDA_VISIBLE_DEVICES=3,1,7 names GPU device(s) 7 that this machine does not have "
        "(found: 0, 1, 2, 3)"
    )
    assert [s["env"]["CUDA_VISIBLE_DEVICES"] for s in doc["config"]["slots"]] == ["3", "1"]


def test_a_failing_driver_is_one_line(tmp_path: Path) -> None:
    done = _devices(tmp_path, fake=True, SMI_FAIL="1")
    assert done.returncode == 0, done.stderr
    assert (
        "problem: no CUDA GPU found: nvidia-smi -L exited with code 9: NVIDIA-SMI has failed "
        "because it couldn't communicate with the NVIDIA driver."
    ) in done.stdout.splitlines()


@pytest.mark.parametrize("config", ["missing.yaml"])
def test_a_bad_config_is_one_line_exit_2(tmp_path: Path, config: str) -> None:
    done = _devices(tmp_path, "--config", str(tmp_path / config), fake=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""
