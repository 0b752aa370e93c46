"""Small things `tuner status` and the closing messages say: a continuation's attempt in its
chain, no elapsed time for a trial process known to have ended, pruned runs called pruned."""

from __future__ import annotations

import subprocess
import sys

from lineage.importance import training_runs
from lineage.store import RunRecord
from lineage.trials import TrialRecord
from tuner.executors import known_ended
from tuner.executors._procs import identity
from tuner.status import chain_attempts


def test_a_continuation_is_one_attempt_after_the_trial_it_continues() -> None:
    trials = [
        TrialRecord(2, "COMPLETE", {"tuner.attempt": 1}),
        # Started by `tuner resume`: its own record says attempt 1.
        TrialRecord(5, "FAIL", {"tuner.attempt": 1, "tuner.parent_trial": 2}),
        TrialRecord(7, "RUNNING", {"tuner.launch": {"attempt": 1}, "tuner.parent_trial": 5}),
        TrialRecord(8, "RUNNING", {}),
    ]
    assert chain_attempts(trials) == {2: 1, 5: 2, 7: 3, 8: 1}


def test_a_process_is_known_ended_only_on_this_machine_once_gone() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    info = identity(proc.pid)
    assert not known_ended(info)  # still running
    assert not known_ended({**info, "boot_id": "another-machine"})
    assert not known_ended({})  # never launched
    proc.communicate(b"")
    assert known_ended(info)


def _run(status: str, state: str | None) -> RunRecord:
    tags = {"lineage.run_type": "trial"} | ({"tuner.state": state} if state else {})
    return RunRecord("r", "1", "e", "n", status, 0, 1, {}, {}, tags, "")


def test_pruned_trials_are_left_out_as_pruned_not_killed() -> None:
    runs = [_run("FINISHED", "COMPLETE"), _run("KILLED", "PRUNED"), _run("KILLED", None)]
    kept, excluded = training_runs(runs)
    assert len(kept) == 1
    assert excluded == {"pruned runs": 1, "killed runs": 1}
