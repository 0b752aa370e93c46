"""Several trials on one device: fractional slots, packing by measured memory, an
out-of-memory retry that runs alone. Real subprocess trials on the local executor; the CUDA
driver is a fake (`_fake_gpu`): no GPU is needed, and none is claimed by these tests."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _fake_gpu import STATE, install

from tuner.executors import TrialHandle, TrialOutcome, TrialSpec, make_slots
from tuner.executors._local import LocalExecutor
from tuner.executors._packing import SETTLE, Packing, TrialMemory, is_out_of_memory

TRIAL = str(Path(__file__).with_name("_packed_trial.py"))
DEADLINE = 60.0


def _until(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"waited {DEADLINE:g}s for {what}")


@pytest.fixture
def gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One fake GPU of 1000 MiB, its nvidia-smi first on PATH; the trials' folder."""
    bin_dir, state = install(tmp_path, [{"index": 0, "uuid": "GPU-0", "total": 1000}])
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv(STATE, str(state))
    folder = tmp_path / "trials-out"
    folder.mkdir()
    return folder


@pytest.fixture
def executors() -> Iterator[list[LocalExecutor]]:
    made: list[LocalExecutor] = []
    yield made
    for ex in made:
        ex.shutdown()


def _spec(folder: Path, number: int, mib: float, attempt: int = 1) -> TrialSpec:
    return TrialSpec(
        number=number,
        attempt=attempt,
        params={"folder": str(folder), "mib": mib},
        argv=[sys.executable, TRIAL],
        grace_period=5.0,
        env={"TUNER_PARAMS": json.dumps({"folder": str(folder), "mib": mib})},
    )


def _outcome(ex: LocalExecutor, handle: TrialHandle) -> TrialOutcome:
    def ended() -> TrialOutcome | None:
        ex.wait(0.05)
        return handle.poll()

    return _until(ended, f"trial {handle.spec.number} to end")


def _auto(tmp_path: Path, made: list[LocalExecutor], **packing: Any) -> LocalExecutor:
    slots = make_slots("gpu", ["0"], "auto", None)
    ex = LocalExecutor(
        slots, run_dir=tmp_path / "run", packing=Packing(**packing), sample_interval=0.0
    )
    made.append(ex)
    return ex


def test_auto_packs_by_measured_memory_and_records_neighbours_and_peaks(
    gpu: Path, tmp_path: Path, executors: list[LocalExecutor]
) -> None:
    ex = _auto(tmp_path, executors, headroom=0.1, memory_params=[])
    assert ex.free_slots() == 1
    handles = [ex.submit(_spec(gpu, 0, 200))]
    # The first trial runs alone until it has been measured; then each newcomer is measured
    # before the next joins, and 900 MiB (1000 less 10%) holds four trials of 200 MiB.
    assert ex.free_slots() == 0
    for number in range(1, 4):
        _until(lambda: ex.free_slots() > 0, f"room for trial {number}")
        handles.append(ex.submit(_spec(gpu, number, 200)))
    state = Path(os.environ[STATE]) / "procs"
    _until(lambda: len(list(state.iterdir())) == 4, "four trials holding memory")
    for _ in range(SETTLE + 1):  # every trial measured: still no room for a fifth
        assert ex.free_slots() == 0
    (gpu / "release").touch()
    outcomes = [_outcome(ex, h) for h in handles]
    assert all(o.succeeded for o in outcomes), [o.stderr_tail for o in outcomes]
    assert [o.neighbours for o in outcomes] == [3, 3, 3, 3]
    assert [o.peak_memory_mib for o in outcomes] == [200.0] * 4
    envs = [json.loads((gpu / f"env-{n}-1.json").read_text()) for n in range(4)]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["0"] * 4


def test_a_packed_trial_out_of_memory_is_retried_alone_and_packing_grows_cautious(
    gpu: Path, tmp_path: Path, executors: list[LocalExecutor]
) -> None:
    ex = _auto(tmp_path, executors, memory_params=[])
    first = ex.submit(_spec(gpu, 0, 300))
    _until(lambda: ex.free_slots() > 0, "the first trial measured")
    # Measured at 300 MiB and said not to depend on its parameters, the second is placed
    # beside it; it takes 800 and runs out of memory.
    greedy = ex.submit(_spec(gpu, 1, 800))
    failed = _outcome(ex, greedy)
    assert failed.exit_code == 1 and failed.packed_oom and failed.neighbours == 1
    assert is_out_of_memory(failed.stderr_tail)
    # Its retry must run alone: no slot while the first still holds the device.
    for _ in range(SETTLE + 1):
        assert ex.free_slots() == 0
    (gpu / "release-0").touch()
    assert _outcome(ex, first).succeeded
    assert ex.free_slots() == 1
    retry = ex.submit(_spec(gpu, 2, 800, attempt=2))
    held = Path(os.environ[STATE]) / "procs" / str(retry.pid)
    _until(held.exists, "the retry to hold its memory")
    for _ in range(SETTLE + 1):  # nobody joins a trial that runs alone
        assert ex.free_slots() == 0
    (gpu / "release-2").touch()
    done = _outcome(ex, retry)
    assert done.succeeded and done.neighbours == 0 and not done.packed_oom
    assert done.peak_memory_mib == 800.0


def test_fractional_slots_put_two_trials_on_each_device(
    tmp_path: Path, executors: list[LocalExecutor]
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    slots = make_slots("gpu", ["0", "1"], 0.5, None)
    assert [(s.devices, s.share) for s in slots] == [(("0",), 2), (("1",), 2)] * 2
    ex = LocalExecutor(slots, run_dir=tmp_path / "run")
    executors.append(ex)
    assert ex.free_slots() == 4
    handles = [ex.submit(_spec(folder, n, 0)) for n in range(4)]
    assert ex.free_slots() == 0
    (folder / "release").touch()
    outcomes = [_outcome(ex, h) for h in handles]
    assert all(o.succeeded for o in outcomes)
    seen = [json.loads((folder / f"env-{n}-1.json").read_text()) for n in range(4)]
    assert sorted(e["CUDA_VISIBLE_DEVICES"] for e in seen) == ["0", "0", "1", "1"]
    assert [o.neighbours for o in outcomes] == [1, 1, 1, 1]


def test_the_estimate_scales_with_the_named_parameters() -> None:
    packing = Packing(headroom=0.0, memory_params=["batch"])
    assert packing.estimate({"batch": 32}) is None  # nothing measured: only empty devices
    packing.measured(0, {"batch": 32, "lr": 0.1}, 1000.0)
    assert packing.estimate({"batch": 32, "lr": 0.1}) == 1000.0
    assert packing.estimate({"batch": 64, "lr": 0.5}) == 2000.0
    unnamed = Packing(headroom=0.0)
    unnamed.measured(0, {"batch": 32}, 1000.0)
    assert unnamed.estimate({"batch": 16}) == 1250.0  # any parameter may matter: a margin
    from tuner.executors._packing import DeviceMemory

    device = DeviceMemory(total=4000.0, used=1000.0)
    settled = [TrialMemory({"batch": 32, "lr": 0.1}, peak=1000.0, samples=SETTLE)]
    assert packing.admits(device, settled, {"batch": 64, "lr": 0.2})  # 1000 + 2000 <= 4000
    assert not packing.admits(device, settled, {"batch": 128, "lr": 0.2})  # + 4000
    packing.ran_out()
    assert not packing.admits(device, settled, {"batch": 64, "lr": 0.2})  # 1500 + 3000


def test_the_warm_parent_code_imports_no_framework_that_takes_a_device() -> None:
    # A warm parent imports the script's framework and nothing of its own that would open a
    # device, so it holds no device memory before a trial is forked (the trials' memory is
    # what `Placement` measures, by session, and each trial leads its own).
    import subprocess

    code = (
        "import sys, tuner.executors._forkserver_main, tuner.executors._warm\n"
        "grab = {'torch', 'mindspore', 'tensorflow', 'jax', 'cupy', 'pycuda', 'numba', 'acl'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in grab))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


NPU_SMI = """+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.rc2                 Version: 23.0.rc2                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.2        37                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3167 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 90.1        36                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          5000 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 4242          | python                   | 2345                    |
+===========================+===============+====================================================+
| 1       0                 | 4343          | python                   | 4100                    |
+===========================+===============+====================================================+
"""


def test_ascend_memory_is_read_from_npu_smi_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuner.executors._packing import read_memory

    (tmp_path / "npu-smi.txt").write_text(NPU_SMI)
    smi = tmp_path / "npu-smi"
    smi.write_text(f'#!/bin/sh\n[ "$1" = info ] && [ -z "$2" ] && cat {tmp_path}/npu-smi.txt\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    memory = read_memory("npu", ["0", "1", "7"])
    assert sorted(memory) == ["0", "1"]
    assert (memory["0"].total, memory["0"].used) == (65536.0, 3167.0)
    assert (memory["1"].total, memory["1"].used) == (65536.0, 5000.0)
    assert memory["0"].by_pid == {4242: 2345.0, 4343: 4100.0}


def test_a_mig_instance_is_as_large_as_its_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuner.executors._packing import read_memory

    gpus = [{"index": 0, "uuid": "GPU-a", "total": 40960,
             "mig": [{"profile": "3g.20gb", "n": 0, "uuid": "MIG-aa"}]}]  # fmt: skip
    bin_dir, _ = install(tmp_path, gpus)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    memory = read_memory("gpu", ["MIG-aa", "0"])
    assert memory["MIG-aa"].total == 20 * 1024
    assert memory["0"].total == 40960


def test_where_the_driver_hides_processes_the_trials_own_figure_places_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executors: list[LocalExecutor]
) -> None:
    # As in a container: nvidia-smi gives each device's size and use but lists no process, so
    # the tuner cannot tell which trial holds what. A trial that says nothing of its memory is
    # never measured and nobody joins it; trials that report it (tuner.trial.report_memory,
    # from their framework's count) are packed by that figure.
    bin_dir, state = install(tmp_path, [{"index": 0, "uuid": "GPU-0", "total": 1000}],
                             hide_pids=True)  # fmt: skip
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv(STATE, str(state))
    folder = tmp_path / "out"
    folder.mkdir()
    ex = _auto(tmp_path, executors, headroom=0.1, memory_params=[])

    def spec(number: int, say: bool) -> TrialSpec:
        params = {"folder": str(folder), "mib": 200, "say_memory": say}
        return TrialSpec(number=number, attempt=1, params=params, argv=[sys.executable, TRIAL],
                         grace_period=5.0, env={"TUNER_PARAMS": json.dumps(params)})  # fmt: skip

    def room(handles: list[TrialHandle]) -> bool:
        for handle in handles:
            handle.reports()  # the controller reads each trial's channel as it runs
        ex.wait(0.02)
        return ex.free_slots() > 0

    silent = ex.submit(spec(0, say=False))
    _until((state / "procs" / str(silent.pid)).exists, "the silent trial to hold its memory")

    def asked() -> int:  # how often the driver was asked what processes hold
        queries = state / "queries"
        return len(queries.read_text().splitlines()) if queries.exists() else 0

    before = asked()
    while asked() < before + SETTLE + 2:
        assert not room([silent]), "a trial the driver never measured was joined"
    (folder / "release-0").touch()
    assert _outcome(ex, silent).peak_memory_mib is None

    handles = [ex.submit(spec(1, say=True))]
    for number in range(2, 5):
        _until(lambda: room(handles), f"room for trial {number}")
        handles.append(ex.submit(spec(number, say=True)))
    _until(lambda: len(list((state / "procs").iterdir())) == 4, "four trials holding memory")
    before = asked()
    while asked() < before + SETTLE + 1:
        assert not room(handles), "a fifth trial of 200 MiB in 900"
    (folder / "release").touch()
    outcomes = [_outcome(ex, h) for h in handles]
    assert all(o.succeeded for o in outcomes), [o.stderr_tail for o in outcomes]
    assert [o.peak_memory_mib for o in outcomes] == [200.0] * 4
    assert [o.neighbours for o in outcomes] == [3] * 4


def test_report_memory_travels_on_the_channel_beside_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    from tuner import _protocol as protocol

    channel = tmp_path / "channel.jsonl"
    monkeypatch.setenv(protocol.CHANNEL, str(channel))
    trial = importlib.reload(importlib.import_module("tuner.trial"))
    trial.report_memory(300 * 2**20)
    trial.report(0, loss=1.0)
    trial.report_memory(200 * 2**20)  # the largest figure counts
    with pytest.raises(TypeError, match="must be a number, got 'x'"):
        trial.report_memory("x")
    reader = protocol.ChannelReader()
    assert reader.memory is None
    data = channel.read_bytes()
    reports = reader.feed(data[:7]) + reader.feed(data[7:])  # lines split across reads
    assert [(r.step, dict(r.metrics)) for r in reports] == [(0, {"loss": 1.0})]
    assert reader.memory == 300.0
    # A reader that knows only reports skips the memory lines as malformed.
    assert [protocol.parse_report(line) is None for line in data.splitlines()] == [
        True, False, True
    ]  # fmt: skip
