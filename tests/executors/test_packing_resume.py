"""The packing's caution outlives its controller: a campaign whose trial ran out of device
memory beside another is killed (kill -9) and resumed with ``tuner resume``; the resumed
campaign recalls the failure from the trials' records, so its memory estimates stay grown, the
failed trial's retry still runs alone, and the failure is not counted against
``budget.max_failures``. Real CLI processes, real subprocess trials, MLflow
and Optuna on SQLite, a fake CUDA driver (`_fake_gpu`; no GPU is used or claimed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from _fake_gpu import STATE, install

from lineage.trials import FAILED_ATTEMPT, RETRY_OF_USER_ATTR
from tuner.executors._packing import SETTLE
from tuner.search import ATTEMPT_ATTR

pytestmark = pytest.mark.slow

HERE = str(Path(__file__).parent)

#: Before the kill: the first trial takes 300 MiB of the 1000 and holds it; one placed beside
#: it takes 800 and runs out of memory. After it (``phase2``): each trial takes 400 MiB, says
#: whether another trial ever held memory beside it, and ends when the test releases it.
SCRIPT = f"""
import os, sys, time
from pathlib import Path
sys.path.insert(0, {HERE!r})
from _fake_gpu import allocate, held_by_others, wait_measured
from tuner import trial
number = os.environ["TUNER_TRIAL_NUMBER"]
Path("who").mkdir(exist_ok=True)
(Path("who") / str(os.getpid())).write_text(number)
if not Path("phase2").exists():
    allocate(800 if held_by_others() > 0 else 300)
    while True:
        time.sleep(0.05)  # held until the controller is killed and the orphan ended
allocate(400)
while not Path(f"release-{{number}}").exists():
    if held_by_others() > 0:
        Path(f"beside-{{number}}").touch()
    time.sleep(0.02)
trial.report(0, loss=1.0)
"""


def _until(check: Callable[[], Any], what: str, timeout: float = 180.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"waited {timeout:g}s for {what}"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_caution_after_out_of_memory_survives_kill_and_resume(
    tmp_path: Path, sqlite_uri: str
) -> None:
    import optuna

    from tuner.config import load_config

    bin_dir, state = install(tmp_path, [{"index": 0, "uuid": "GPU-0", "total": 1000}])
    (tmp_path / "trial.py").write_text(SCRIPT)
    data = {
        "name": "t",
        "command": [sys.executable, "trial.py", "--x", "{x}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        # One failure would stop the campaign: running out of memory beside another trial
        # is the packing's fault, not a failure, for the resumed controller too.
        "budget": {"trials": 3, "max_failures": 1},
        "trial": {"grace_period": 1, "timeout": 300, "retries": 0, "preload": False},
        "sampler": {"name": "random", "seed": 3},
        "resources": {"kind": "gpu", "per_trial": "auto", "memory_params": []},
        "lineage": {"tracking_uri": sqlite_uri},
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    config = load_config(path)
    env = {k: v for k, v in os.environ.items() if not k.endswith("VISIBLE_DEVICES")}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.update(PATH=f"{bin_dir}:{os.environ['PATH']}", **{STATE: str(state)})

    def tuner(command: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "tuner.cli", command, str(path)]
        return subprocess.Popen(argv, cwd=tmp_path, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip

    def trials() -> list[Any]:
        try:
            study = optuna.load_study(
                study_name=config.study_name, storage=config.optuna_storage_url()
            )
        except KeyError:  # not created yet
            return []
        return list(study.get_trials(deepcopy=False))

    def packed_oom() -> bool:  # on record, and its retry enqueued
        now = trials()
        return any(
            (t.user_attrs.get("tuner.placement") or {}).get("packed_oom") for t in now
        ) and any(t.user_attrs.get(ATTEMPT_ATTR) == 2 for t in now)

    controller = tuner("run")
    try:
        _until(packed_oom, "a trial out of memory beside the first, on record and retried")
    finally:
        controller.kill()
        controller.communicate(timeout=60)
    first = [p for p in (tmp_path / "who").iterdir() if _alive(int(p.name))]
    assert len(first) == 1  # the first trial outlived its controller; its retry waits

    (tmp_path / "phase2").touch()
    resumed = tuner("resume")
    try:
        # The first trial's orphan holds its memory until the resume ends it: not counted.
        done = {p.name for p in first}

        def holding() -> list[tuple[int, str]]:
            procs = [int(p.name) for p in (state / "procs").iterdir()]
            return [(p, (tmp_path / "who" / str(p)).read_text())
                    for p in procs if _alive(p) and str(p) not in done]  # fmt: skip

        def asked() -> int:  # how often the controller asked the driver what trials hold
            return len((state / "queries").read_text().splitlines())

        while resumed.poll() is None:  # the trials after the kill, one at a time
            running = _until(lambda: holding() or resumed.poll() is not None,
                             "a trial holding its memory, or the campaign's end")  # fmt: skip
            if running is True:
                break
            ((pid, number),) = running
            # Measured at 400 MiB: a newcomer estimated at 400 would fit beside it in the
            # 900 MiB packing may use; at 400 x 1.5 it does not. The controller samples the
            # driver once a second: let it look several times past the settling samples.
            until = asked() + SETTLE + 3
            _until(lambda until=until: asked() >= until, "the driver to be asked several times")
            assert len(holding()) == 1, "a trial joined one that should run alone"
            (tmp_path / f"release-{number}").touch()
            done.add(str(pid))
        out, _ = resumed.communicate(timeout=60)
    finally:
        if resumed.poll() is None:
            resumed.kill()
            resumed.communicate(timeout=60)
    assert resumed.returncode == 0, out
    assert (
        "packing: 1 earlier trial(s) ran out of device memory beside others; "
        "memory estimates x1.50" in out
    ), out
    assert not list(tmp_path.glob("beside-*"))
    after = [t for t in trials() if t.state.name == "COMPLETE"]
    assert len(after) == 3, out
    assert all(t.user_attrs["tuner.placement"]["neighbours"] == 0 for t in after)
    # The retry of the trial that ran out of memory ran after the kill, alone.
    assert sum(RETRY_OF_USER_ATTR in t.user_attrs for t in after) == 1
    (oom,) = [t for t in trials() if (t.user_attrs.get("tuner.placement") or {}).get("packed_oom")]
    assert oom.state.name == "FAIL" and FAILED_ATTEMPT not in oom.system_attrs
