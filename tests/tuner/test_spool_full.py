"""A campaign whose tracking server goes away while the spool's disk is full: the controller
stops with one line naming the spool and the space needed (exit 1, no traceback), and
``tuner resume`` finishes the exact budget once the records can be written again.

The server and the full disk are simulated at the write layer (`tests/tuner/_spool_full.py`:
lineage's real spool, whose ``fsync`` raises ENOSPC, in front of a writer that refuses records
once two trial runs are FINISHED); the stores, the trials and the CLI are real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tuner.conftest import mlflow_runs, trials_of, tuner_cli
from tuner.config import load_config

HERE = Path(__file__).parent
TRIAL = HERE.parent / "cluster" / "_trial.py"
BUDGET = 3


def test_a_full_spool_stops_the_campaign_in_one_line_and_it_resumes(
    tmp_path: Path, _sqlite_template: Path
) -> None:
    shutil.copyfile(_sqlite_template, tmp_path / "mlflow.db")
    config = {
        "name": "spool",
        "command": [sys.executable, str(TRIAL), "3", "0.2"],
        "reads_tuner_params": True,
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": BUDGET, "max_failures": 3},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": f"sqlite:///{tmp_path}/mlflow.db", "experiment": "spool"},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    spool = tmp_path / "spool"
    env = {**os.environ, "LINEAGE_SPOOL_DIR": str(spool)}
    env.pop("MLFLOW_TRACKING_URI", None)
    run = subprocess.run(
        [sys.executable, str(HERE / "_spool_full.py"), "run", "c.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output[-3000:]
    assert "Traceback" not in output
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    last = lines[-1]
    assert last.startswith(f"tuner run: error: spool {spool}/"), last
    assert ".jsonl: no space left on the device; needs " in last and "bytes free (has " in last
    assert last.endswith("free space there, then continue with tuner resume"), last
    # Besides that line, only the one warning that the server is away.
    others = lines[:-1]
    assert len(others) <= 1 and all("unreachable" in line for line in others), others
    assert "could not be marked" not in output and "lineage " not in run.stdout, output

    done = tuner_cli("resume", "c.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    counted = [t for t in trials_of(load_config(tmp_path / "c.yaml")) if not _stale(t)]
    assert [t.state.name for t in counted] == ["COMPLETE"] * BUDGET
    runs = mlflow_runs(f"sqlite:///{tmp_path}/mlflow.db", "spool")
    assert "RUNNING" not in [r.info.status for r in runs]
    trial_runs = [r for r in runs if r.data.tags.get("lineage.run_type") == "trial"]
    # The interrupted attempt's run is KILLED; every counted trial has a FINISHED run.
    assert sum(r.info.status == "FINISHED" for r in trial_runs) == BUDGET


def _stale(trial: object) -> bool:
    return "tuner:stale" in getattr(trial, "system_attrs", {})


def test_every_kind_of_full_disk_is_one_campaign_ending_line(tmp_path: Path) -> None:
    import errno
    import sqlite3

    from lineage.recording import SpoolFullError
    from tuner.records import disk_full
    from tuner.search import DiskFull

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert disk_full(RuntimeError("database is locked"), uri) is None
    wrapped = RuntimeError("(sqlite3.OperationalError) database or disk is full")
    wrapped.__cause__ = sqlite3.OperationalError("database or disk is full")
    line = str(disk_full(wrapped, uri))
    assert line.startswith(f"{tmp_path}/mlflow.db: disk full writing the lineage store ("), line
    assert " free on " in line and "need at least" in line and "tuner resume" in line
    log = tmp_path / "trials" / "out.log"
    full = OSError(errno.ENOSPC, "No space left on device", str(log))
    assert str(disk_full(full, uri)).startswith(f"{log}: disk full writing")
    spool = SpoolFullError("spool /s/1.jsonl: no space left on the device; needs 9 bytes free")
    assert str(disk_full(spool)) == f"{spool}; free space there, then continue with tuner resume"
    study = DiskFull("optuna.db: disk full")
    assert disk_full(study, uri) is study


def test_the_controller_stops_on_the_full_disk_its_recorder_met(bare_campaign: Any) -> None:
    """In process (fake recorder, in-process trials): no trial is launched after the full
    disk is seen, none is left RUNNING, and the recorder's error is what `run` raises."""
    from tests.tuner.conftest import trials_of
    from tests.tuner.test_units import _NullRecorder
    from tuner.campaign import Controller
    from tuner.executors._inprocess import InProcessExecutor
    from tuner.search import DiskFull

    full = DiskFull("mlflow.db: disk full writing the lineage store")

    class FullAfterTwo(_NullRecorder):
        fatal: DiskFull | None = None

        def trial_finished(self, run_id: str, **kwargs: Any) -> None:
            super().trial_finished(run_id, **kwargs)
            if len(self.finished) == 2:
                self.fatal = full

    config = bare_campaign(budget={"trials": 8, "max_failures": 3})
    rec = FullAfterTwo()
    ctl = Controller(
        config,
        executor=InProcessExecutor(lambda spec: ([(0, {"loss": spec.params["x"]})], 0)),
        recorder=rec,  # type: ignore[arg-type]
        importance=False,
        handle_signals=False,
        poll_interval=0.0,
    )
    with pytest.raises(DiskFull) as raised:
        ctl.run()
    assert raised.value is full
    states = [t.state.name for t in trials_of(config)]
    assert "RUNNING" not in states and states.count("COMPLETE") <= 3, states
