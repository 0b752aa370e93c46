"""``devices: auto`` stays inside the devices the controller itself was given."""

from __future__ import annotations

import pytest

from tuner.executors import _devices

SMI = "GPU 0: H200 (UUID: GPU-a)\nGPU 1: H200 (UUID: GPU-b)\nGPU 2: H200 (UUID: GPU-c)\n"


@pytest.fixture
def four_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_devices, "_run", lambda argv: SMI if argv[0] == "nvidia-smi" else "")


def test_all_devices_when_nothing_restricts(
    four_gpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert _devices.detect_devices() == ("gpu", ["0", "1", "2"])


def test_only_the_controllers_own_devices(four_gpus: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,0,7")
    assert _devices.detect_devices("gpu") == ("gpu", ["2", "0"])
    slots = _devices.make_slots("gpu", "auto", 1, None)
    assert [s.env()["CUDA_VISIBLE_DEVICES"] for s in slots] == ["2", "0"]


def test_an_empty_list_means_no_gpu(four_gpus: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert _devices.detect_devices() == ("cpu", [])
