"""``trial.preload`` names a module that sits beside the script: the warm parent imports it
(its ``sys.path`` starts with the script's folder, as a cold trial's does), though the
tuner's own interpreter could not import it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from test_executor_contract import drive

from tuner.executors import TrialSpec, make_slots
from tuner.executors._local import LocalExecutor
from tuner.executors._warm import plan

SCRIPT = """\
import json, sys
preloaded = "my_dataset" in sys.modules   # before this script imports it
import my_dataset
json.dump({"preloaded": preloaded, "rows": my_dataset.ROWS}, open(sys.argv[1], "w"))
"""


def _project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "my_dataset.py").write_text("ROWS = 3\n")
    (folder / "train.py").write_text(SCRIPT)
    return folder / "train.py"


def test_a_declared_module_beside_the_script_is_planned(tmp_path: Path) -> None:
    script = _project(tmp_path)
    how, why = plan([sys.executable, str(script)], None, ["my_dataset"])
    assert why is None and how is not None and "my_dataset" in how.modules
    # Not declared, it is not preloaded: a script's own modules may do work at import.
    how, _ = plan([sys.executable, str(script)], None, True)
    assert how is not None and "my_dataset" not in how.modules
    # Nor is a declared module found nowhere.
    how, _ = plan([sys.executable, str(script)], None, ["no_such_module_here"])
    assert how is not None and "no_such_module_here" not in how.modules


def test_the_warm_parent_imports_the_module_beside_the_script(tmp_path: Path) -> None:
    script = _project(tmp_path)
    executor = LocalExecutor(
        make_slots("cpu", "auto", 1, 1), run_dir=tmp_path / "run", preload=["my_dataset"]
    )
    try:
        out = tmp_path / "out.json"
        spec = TrialSpec(
            number=0,
            attempt=1,
            params={},
            argv=[sys.executable, str(script), str(out)],
            grace_period=2,
            workdir=str(tmp_path),
        )
        (result,) = drive(executor, [executor.submit(spec)])
        assert result.outcome.exit_code == 0, result.outcome.stderr_tail
        assert json.loads(out.read_text()) == {"preloaded": True, "rows": 3}
    finally:
        executor.shutdown()
