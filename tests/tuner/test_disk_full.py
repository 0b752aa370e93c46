"""A SQLite campaign whose disk fills up: one line naming the file and the space needed,
exit 1, both stores intact (``PRAGMA integrity_check``), and ``tuner resume`` finishes the
exact budget once space is free. A real full file system: a small tmpfs mounted in a
private mount namespace (``unshare``), so nothing stays mounted whatever happens."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

HERE = Path(__file__).parent
TRIAL = HERE.parent / "cluster" / "_trial.py"


def test_full_disk_is_one_line_and_the_campaign_resumes(
    tmp_path: Path, _sqlite_template: Path
) -> None:
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed to mount a small file system"
    proc = subprocess.run(
        [
            *(unshare, "--user", "--map-root-user", "--mount", sys.executable),
            *(str(HERE / "_disk_full.py"), str(tmp_path), str(_sqlite_template), str(TRIAL)),
        ],
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # The campaign stopped with exit 1 and, last, one line: the file, free space, the need.
    assert seen["run_rc"] == 1, seen["run_stderr"][-3000:]
    last = seen["run_stderr"].strip().splitlines()[-1]
    small = seen["small"]
    assert last.startswith(f"tuner run: error: {small}/"), last
    assert "disk full" in last and "free on" in last and "need at least" in last, last
    assert "tuner resume" in last
    # That line is all it says: nothing from the lineage recorder, MLflow or the marking of
    # the trials it stopped, on either stream.
    output = seen["run_stdout"] + seen["run_stderr"]
    assert "Traceback" not in output, output
    assert [ln for ln in seen["run_stderr"].splitlines() if ln.strip()] == [last]
    assert "could not be marked" not in output and "lineage " not in seen["run_stdout"], output
    # Both stores intact.
    assert seen["integrity_mlflow.db"] == [["ok"]]
    assert seen["integrity_optuna.db"] == [["ok"]]
    # Resumed once space was free: exactly the budget, nothing left RUNNING anywhere.
    assert seen["resume_rc"] == 0, seen["resume_stderr"][-3000:]
    assert seen["states"] == ["COMPLETE"] * 6
    assert "RUNNING" not in seen["run_statuses"]
    assert seen["trial_runs_finished"] == 6
