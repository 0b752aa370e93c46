"""A pause costs at most the step it was paused at: under ASHA with ``mode: promote`` a trial
waits, after committing the checkpoint of a rung step, for the controller's verdict on that
step, so a paused trial stops having computed no further step, and its promoted continuation
resumes from that step. Real subprocess trials (cold and forked from a warm parent), real
MLflow SQLite store, Optuna on SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tuner.conftest import trials_of

pytestmark = pytest.mark.slow

#: Nine steps; each computes (a short sleep), reports, saves and commits a checkpoint, then
#: returns once told to stop. A fresh start takes the next value of ``bases`` (the order of
#: the configurations' quality is fixed, whatever the sampler draws); a continuation reads
#: it back from its checkpoint. ``starts`` gets ``number first-step pause-steps`` per start,
#: ``computed`` gets ``number step`` per step computed.
SCRIPT = """
import json, os, pathlib, time
from tuner import trial
resume = trial.resume_from()
if resume is None:
    bases = pathlib.Path("bases").read_text().split()
    base, start = float(bases[0]), 0
    pathlib.Path("bases").write_text(" ".join(bases[1:]))
else:
    base, start = json.loads((resume[0] / "state.json").read_text())["base"], resume[1] + 1
with open("starts", "a") as fh:
    fh.write(f"{trial.number()} {start} {os.environ.get('TUNER_PAUSE_STEPS', '-')}\\n")
for step in range(start, 9):
    time.sleep(0.05)
    with open("computed", "a") as fh:
        fh.write(f"{trial.number()} {step}\\n")
    trial.report(step, loss=base + 1.0 / (step + 1))
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"base": base}))
    trial.checkpointed(step)
    if trial.should_prune():
        break
"""


#: ASHA with promotion, one bracket, rungs at steps 1 and 3 (eta 3, max_resource 9).
RUNGS_AT_1_AND_3 = {
    "name": "asha",
    "mode": "promote",
    "min_resource": 1,
    "max_resource": 9,
    "brackets": 1,
}


def _rows(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line]


@pytest.mark.parametrize("preload", [False, True], ids=["cold", "warm"])
def test_a_paused_trial_computes_no_step_past_its_rung(
    campaign: Any, run_campaign: Any, tmp_path: Path, preload: bool
) -> None:
    # Rungs at steps 1 and 3 (eta 3, max_resource 9). The first configuration goes on; the
    # next ones rank below the top at step 1 and are paused there, the second best is
    # promoted once enough values are in, and its continuation is judged again at step 3.
    (tmp_path / "bases").write_text("1.0 3.0 5.0 6.0 7.0")
    config = campaign(
        SCRIPT,
        budget={"trials": 5},
        scheduler=RUNGS_AT_1_AND_3,
        # A long grace period: the trial's wait for a verdict is bounded by it, and a loaded
        # machine must not end the wait before the controller decided.
        trial={"grace_period": 60, "preload": preload},
        reads_tuner_params=True,
    )
    run_campaign(config)
    trials = trials_of(config)
    paused = [t for t in trials if t.user_attrs.get("tuner.paused_at") is not None]
    assert len(paused) >= 3, [(t.number, t.state.name, t.user_attrs) for t in trials]
    computed: dict[int, list[int]] = {}
    for number, step in _rows(tmp_path / "computed"):
        computed.setdefault(int(number), []).append(int(step))
    for t in paused:
        # The pause costs nothing past the rung: its last computed step is the rung step.
        assert max(computed[t.number]) == t.user_attrs["tuner.paused_at"], (t.number, computed)
        assert t.state.name == "PRUNED"
    starts = {int(r[0]): (int(r[1]), r[2]) for r in _rows(tmp_path / "starts")}
    promoted = [t for t in trials if "tuner.promoted_from" in t.user_attrs]
    assert promoted
    by_number = {t.number: t for t in trials}
    for cont in promoted:
        parent = by_number[cont.user_attrs["tuner.promoted_from"]]
        rung = parent.user_attrs["tuner.paused_at"]
        assert cont.user_attrs["tuner.resumed_step"] == rung
        # It resumes from the step it was paused at, and is told only the rungs after it.
        assert starts[cont.number] == (rung + 1, ",".join(str(r) for r in (1, 3) if r > rung))
    for number, (first, steps) in starts.items():
        if first == 0:
            assert steps == "1,3", (number, steps)


def test_asha_stop_tells_no_trial_of_pause_steps(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    (tmp_path / "bases").write_text("1.0 3.0")
    config = campaign(
        SCRIPT,
        budget={"trials": 2},
        scheduler={"name": "asha", "mode": "stop", "min_resource": 1, "max_resource": 3},
        reads_tuner_params=True,
    )
    run_campaign(config)
    assert [r[2] for r in _rows(tmp_path / "starts")] == ["-", "-"]


@pytest.fixture
def waiting_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The environment of a trial that may be paused at steps 2 and 4 and waits up to a
    minute for a verdict."""
    from lineage import pausing
    from tuner import _protocol as protocol

    files = {
        "control": tmp_path / protocol.CONTROL_FILE,
        "verdict": tmp_path / protocol.VERDICT_FILE,
    }
    monkeypatch.setenv(protocol.CHANNEL, str(tmp_path / protocol.CHANNEL_FILE))
    monkeypatch.setenv(protocol.CONTROL, str(files["control"]))
    monkeypatch.setenv(protocol.VERDICT, str(files["verdict"]))
    monkeypatch.setenv(protocol.CHECKPOINT_DIR, str(tmp_path / "ckpt"))
    monkeypatch.setenv(protocol.PAUSE_STEPS, "2,4")
    monkeypatch.setenv(protocol.PAUSE_WAIT, "60")
    monkeypatch.setattr(pausing, "_reported", None)
    return files


def _later(action: Any) -> None:
    import threading
    import time

    def run() -> None:
        time.sleep(0.2)
        action()

    threading.Thread(target=run, daemon=True).start()


def test_the_wait_at_a_pause_step_ends_on_the_verdict_or_the_stop_flag(
    waiting_trial: dict[str, Path],
) -> None:
    from tuner import _protocol as protocol
    from tuner import trial

    trial.report(2, loss=1.0)
    _later(lambda: protocol.write_verdict(str(waiting_trial["verdict"]), 2))
    trial.checkpointed(2)  # returns once told to go on (the bound is a minute)
    assert not trial.should_prune()
    trial.report(4, loss=1.0)
    _later(waiting_trial["control"].touch)
    trial.checkpointed(4)  # the verdict on step 2 does not count: the stop flag ends it
    assert trial.should_prune()


def test_every_multiple_of_pause_every_is_a_pause_step(
    waiting_trial: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lineage import pausing
    from tuner import _protocol as protocol
    from tuner import trial

    monkeypatch.delenv(protocol.PAUSE_STEPS)
    monkeypatch.setenv(protocol.PAUSE_EVERY, "3")
    trial.report(7, loss=1.0)
    trial.checkpointed(4)  # not a multiple: no wait (the bound is a minute)
    _later(lambda: protocol.write_verdict(str(waiting_trial["verdict"]), 6))
    trial.checkpointed(6)  # waits for the verdict
    assert not trial.should_prune()
    assert pausing.is_pause_step(9, None, "3") and pausing.is_pause_step(3, "5", "3")
    assert pausing.is_pause_step(5, "5", "3") and not pausing.is_pause_step(0, None, "3")
    for every in ("0", "-3", "three", "", None):
        assert not pausing.is_pause_step(6, None, every), every
    assert protocol.pause_env((), wait=5, every=3) == {
        protocol.PAUSE_EVERY: "3",
        protocol.PAUSE_WAIT: "5",
    }
    assert protocol.pause_env((), wait=5) == {}


def test_no_wait_where_no_pause_can_come(
    waiting_trial: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuner import _protocol as protocol
    from tuner import trial

    # Nothing answers in any of these: each call returning is the check (the bound is a
    # minute, and the test suite's own timeout would end a wait).
    trial.checkpointed(2)  # not reported yet: the controller has nothing to judge
    trial.report(3, loss=1.0)
    trial.checkpointed(3)  # not a pause step
    monkeypatch.setenv("RANK", "1")
    trial.checkpointed(2)  # not rank 0
    monkeypatch.delenv("RANK")
    monkeypatch.delenv(protocol.VERDICT)
    trial.checkpointed(2)  # an executor that cannot write the verdict (Ray)
    monkeypatch.setenv(protocol.VERDICT, str(waiting_trial["verdict"]))
    monkeypatch.setenv(protocol.PAUSE_WAIT, "0")
    trial.checkpointed(2)  # the bound passed: it goes on
    assert not trial.should_prune()
