"""Decisions and their precedence: which of a turn's decisions wins (`strongest`), and how
the controller's one place of applying them (`Decisions`) treats a later decision, on a real
Optuna study and checkpoint folder, with the in-process executor's handle."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from lineage import checkpoints
from tuner.campaign import RunningTrial
from tuner.campaign._decide import Decisions
from tuner.executors import TrialSpec
from tuner.executors._inprocess import InProcessExecutor
from tuner.schedulers import KEEP, Continue, Pause, Stop, strongest
from tuner.search import PAUSED_ATTR


def test_continue_beats_pause_beats_stop_beats_keep_and_ties_go_to_the_first() -> None:
    stop_a, stop_b = Stop("scheduler"), Stop("diagnosis")
    pause, cont = Pause(3, "at rung step 3"), Continue(7, "exploited")
    assert strongest() is KEEP and strongest(KEEP, KEEP) is KEEP
    assert strongest(KEEP, stop_a, stop_b) is stop_a
    assert strongest(stop_b, stop_a) is stop_b
    assert strongest(stop_a, pause, KEEP) is pause
    assert strongest(pause, cont, stop_a) is cont


def _attempt(study: optuna.Study, pruned: list[int]) -> RunningTrial:
    trial = study.ask()
    executor = InProcessExecutor(lambda spec: ([], 0))
    handle = executor.submit(
        TrialSpec(number=trial.number, attempt=1, params={}, argv=["x"], grace_period=5)
    )
    handle.request_prune = lambda: pruned.append(trial.number)  # type: ignore[method-assign]
    return RunningTrial(trial, handle, {}, 1, None, [], "cpu")


@pytest.fixture
def study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study()


def test_the_first_stop_applied_is_final(study: optuna.Study, tmp_path: Path) -> None:
    pruned: list[int] = []
    decisions = Decisions(study, folder=lambda t: tmp_path, grace=5, message=lambda s: None)
    rt = _attempt(study, pruned)
    decisions.apply(rt, KEEP)
    assert rt.decided is None and pruned == []
    decisions.apply(rt, Stop("pruned by the median pruner", {"k": 1}))
    decisions.apply(rt, Continue(9, "exploited"))
    assert rt.prune_reason == "pruned by the median pruner" and rt.end_attrs == {"k": 1}
    assert rt.counted and pruned == [rt.number]


def test_a_pause_waits_for_its_checkpoint_and_a_later_stop_gives_way(
    study: optuna.Study, tmp_path: Path
) -> None:
    pruned: list[int] = []
    messages: list[str] = []
    decisions = Decisions(study, folder=lambda t: tmp_path, grace=60, message=messages.append)
    rt = _attempt(study, pruned)
    decisions.apply(rt, Pause(2, "at rung step 2 (loss=1, rank 2 of 2)"))
    # Marked in the study at once; the process goes on until the checkpoint of step 2.
    assert study.trials[rt.number].user_attrs[PAUSED_ATTR] == 2
    assert rt.decided is None and pruned == []
    decisions.apply(rt, Stop("stopped early by diagnosis: runaway"))
    assert rt.decided is None
    decisions.tick(rt)
    assert rt.decided is None  # no checkpoint of step 2 yet
    folder = checkpoints.step_dir(tmp_path, 2)
    (folder / "weights").write_text("w")
    checkpoints.commit(folder, 2)
    decisions.tick(rt)
    assert rt.prune_reason == "paused by the asha scheduler at rung step 2 (loss=1, rank 2 of 2)"
    assert rt.end_attrs == {PAUSED_ATTR: 2} and pruned == [rt.number]
    assert messages == [f"trial {rt.number}: paused at rung step 2 (loss=1, rank 2 of 2)"]


def test_a_continue_makes_the_successor_count_instead(study: optuna.Study, tmp_path: Path) -> None:
    pruned: list[int] = []
    decisions = Decisions(study, folder=lambda t: tmp_path, grace=5, message=lambda s: None)
    rt = _attempt(study, pruned)
    decisions.apply(rt, Continue(4, "exploited by pbt at step 2", {"tuner.exploited_at": 2}))
    assert not rt.counted and rt.end_attrs == {"tuner.exploited_at": 2}
    assert pruned == [rt.number]
