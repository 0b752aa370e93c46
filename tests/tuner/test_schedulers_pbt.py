"""Population-based training on local slots with real subprocess trials: the worst member
copies a top member's checkpoint (exploit) and goes on with its parameters perturbed
(explore), as a continuation whose records tell the story. Real MLflow SQLite store, Optuna
on SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from tests.tuner.conftest import mlflow_runs, trials_of

pytestmark = pytest.mark.slow

#: Eight steps of a little work each, a checkpoint after each. The loss ranks members by
#: ``lr`` alone (higher is better), whatever step each is at. The checkpoint carries the
#: number of the trial whose fresh start made it (``origin``) and the ``x`` it was trained
#: with; each start appends ``number start origin differs changed`` to ``starts``: whether
#: its ``x`` differs from the checkpoint's, and the tuner's ``TUNER_RESUME_CHANGED``. Fresh
#: starts wait until all members (``MEMBERS``, default four) have started, so that every
#: member has a value to be ranked against. With ``CAMPAIGN`` (the campaign file) set, the
#: first decision is made on events, however late the controller reads the reports: the
#: member with the lowest ``x`` reports its step 2 once the study holds a value of every
#: member, and the others wait after their step-2 checkpoint (running, so one can be its
#: donor) until it has been told to stop (``judged``).
SCRIPT = """
import argparse, json, os, pathlib, time
from tuner import trial
members = int(os.environ.get("MEMBERS", "4"))
campaign = os.environ.get("CAMPAIGN")
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); lr = ap.parse_args().x

def wait_for(condition):
    deadline = time.monotonic() + 120
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)

def started():
    return [line.split() for line in pathlib.Path("started").read_text().splitlines() if line]

def every_member_reported():
    import optuna
    from tuner.config import load_config
    from tuner.schedulers import member_of
    from tuner.search._study import open_storage
    config = load_config(campaign)
    storage = open_storage(config.optuna_storage_url(), exclusive=False)
    study = optuna.load_study(study_name=config.study_name, storage=storage)
    return lambda: len({member_of(t) for t in study.get_trials() if t.intermediate_values}) >= members

resume = trial.resume_from()
changed = os.environ.get("TUNER_RESUME_CHANGED", "[]").replace(" ", "")
if resume is None:
    start, origin, held = 0, trial.number(), lr
    with open("started", "a") as fh:
        fh.write(f"{origin} {lr}\\n")
    wait_for(lambda: len(started()) >= members)
else:
    start = resume[1] + 1
    state = json.loads((resume[0] / "state.json").read_text())
    origin, held = state["origin"], state["x"]
worst = campaign and resume is None and lr <= min(float(line[1]) for line in started())
if worst:  # its stop comes as a SIGTERM: the others go on once it is here
    import signal, sys
    signal.signal(signal.SIGTERM, lambda *_: (pathlib.Path("judged").touch(), sys.exit(0)))
with open("starts", "a") as fh:
    fh.write(f"{trial.number()} {start} {origin} {int(held != lr)} {changed}\\n")
for step in range(start, 8):
    if worst and step == 2:
        wait_for(every_member_reported())
    elif worst and step == 3:
        wait_for(trial.should_prune)
        pathlib.Path("judged").touch()
    elif campaign and resume is None and step == 3:
        wait_for(lambda: pathlib.Path("judged").exists() or trial.should_prune())
    if trial.should_prune():
        break
    time.sleep(0.15)  # the training's work
    trial.report(step, loss=1.0 - lr + 0.001 * step)
    state = {"origin": origin, "x": lr}
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps(state))
    trial.checkpointed(step)
"""


def test_the_worst_member_copies_a_top_member_and_explores(
    campaign: Any, run_campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    config = campaign(
        SCRIPT,
        env={"CAMPAIGN": str(tmp_path / "campaign.yaml")},
        budget={"trials": 4},
        parameters={"x": {"type": "float", "low": 0.1, "high": 0.9}},
        resources={"kind": "cpu", "parallel": 4},
        scheduler={
            "name": "pbt",
            "population": 4,
            "interval": 2,
            "perturb": {"x": {"factor": [0.8, 1.2]}},
        },
    )
    result = run_campaign(config)
    trials = trials_of(config)
    by_number = {t.number: t for t in trials}
    exploits = [t for t in trials if "tuner.exploit" in t.user_attrs]
    assert exploits, [(t.number, t.state.name, t.params) for t in trials]
    starts = {}
    for line in (tmp_path / "starts").read_text().split("\n"):
        if line:
            number, start, origin, differs = map(int, line.split()[:4])
            starts[number] = (start, origin)
            # The tuner names x exactly when the script's x is not the checkpoint's.
            assert json.loads(line.split()[4]) == (["x"] if differs else []), line
    client = MlflowClient(tracking_uri=sqlite_uri)
    runs = {r.data.tags.get("tuner.trial_number"): r for r in mlflow_runs(sqlite_uri)}
    for cont in exploits:
        info = cont.user_attrs["tuner.exploit"]
        donor, replaced = by_number[info["donor"]], by_number[info["replaces"]]
        # The segment it replaces: stopped at an interval step, superseded, PRUNED.
        assert replaced.state.name == "PRUNED" and "tuner:stale" in replaced.system_attrs
        assert replaced.user_attrs["tuner.exploited_at"] == info["step"]
        assert info["step"] >= 2 and info["from_step"] >= 0  # past a multiple of interval
        member = replaced.user_attrs.get("tuner.member", replaced.number)
        assert cont.user_attrs["tuner.member"] == info["member"] == member
        # It started from the donor's checkpoint: parent, step, and the state it carried.
        assert cont.user_attrs["tuner.parent_trial"] == donor.number != replaced.number
        resumed = cont.user_attrs["tuner.resumed_step"]
        assert resumed == info["from_step"]  # the checkpoint the decision saw, copied then
        assert starts[cont.number] == (resumed + 1, starts[_root(by_number, donor)][1])
        for step in range(resumed + 1):
            assert cont.intermediate_values[step] == donor.intermediate_values[step]
        # Explore: the donor's x times 0.8 or 1.2, within the range.
        x = donor.params["x"]
        assert cont.params["x"] in {min(max(x * f, 0.1), 0.9) for f in (0.8, 1.2)}
        assert info["perturbed"] in ({"x": [x, cont.params["x"]]}, {})
        # MLflow: one curve, and the parameter's schedule as a metric series.
        run = runs[str(cont.number)]
        loss = client.get_metric_history(run.info.run_id, "loss")
        hparam = sorted(
            ((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "hparam/x")),
            key=lambda point: point[0],
        )
        assert len({step for step, _ in hparam}) == len(hparam)  # one value per step
        assert hparam[0] == (0, pytest.approx(_first_x(by_number, donor)))
        assert hparam[-1] == (resumed + 1, pytest.approx(cont.params["x"]))
        if cont.state.name == "COMPLETE":
            assert sorted(m.step for m in loss) == list(range(8))
        # Its params: the explored values it trains with, as its Optuna trial says.
        assert float(run.data.params["x"]) == cont.params["x"]
        assert run.data.tags["tuner.member"] == str(info["member"])
    # Four members, each counted once; each member's last segment completed.
    import optuna

    from tuner.coordination import counted_trials

    study = optuna.load_study(study_name="t", storage=config.optuna_storage_url())
    assert counted_trials(study) == 4
    from tuner.status import collect

    status = collect(config)
    assert status["trials"]["EXPLOITED"] == len(exploits)
    assert status["trials"]["COMPLETE"] == 4 and status["budget"]["finished"] == 4
    assert {c["number"] for c in status["continued"] if "exploit" in c} == {
        t.number for t in exploits
    }
    assert result.counts["COMPLETE"] == 4 and result.counts["PRUNED"] == 0
    assert all(r.info.status != "RUNNING" for r in mlflow_runs(sqlite_uri))

    # Warm start from this campaign imports finished trials with one configuration only:
    # the segments that went on from another member's checkpoint are skipped.
    from tuner.config import parse_config
    from tuner.history import HistoryContext, load_history

    data = config.model_dump(mode="json", exclude_none=True, exclude={"scheduler", "workdir"})
    data.update(name="next", warm_start={"from": [{"experiment": "t"}]}, budget={"trials": 2})
    plan = load_history(HistoryContext.of(parse_config(data, base_dir=tmp_path)))
    assert plan.skipped["parameters changed during training"] == len(exploits)
    kept = {t.number for t in trials if t.state.name == "COMPLETE"} - {t.number for t in exploits}
    assert len(plan.trials) == len(kept)


def _root(by_number: dict[int, Any], trial: Any) -> int:
    while trial.user_attrs.get("tuner.parent_trial") is not None:
        trial = by_number[trial.user_attrs["tuner.parent_trial"]]
    return int(trial.number)


def _first_x(by_number: dict[int, Any], trial: Any) -> float:
    return float(by_number[_root(by_number, trial)].params["x"])


def test_resume_after_kill9_continues_the_population_without_duplicates(
    campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    config = campaign(
        SCRIPT,
        env={"CAMPAIGN": str(tmp_path / "campaign.yaml")},
        budget={"trials": 4},
        parameters={"x": {"type": "float", "low": 0.1, "high": 0.9}},
        resources={"kind": "cpu", "parallel": 4},
        scheduler={
            "name": "pbt",
            "population": 4,
            "interval": 2,
            "perturb": {"x": {"factor": [0.8, 1.2]}},
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    argv = [sys.executable, "-m", "tuner.cli"]
    proc = subprocess.Popen(
        [*argv, "run", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    starts = tmp_path / "starts"
    # Killed once an exploit's continuation has started (it resumes from a checkpoint).
    while not starts.exists() or not any(
        int(line.split()[1]) > 0 for line in starts.read_text().split("\n") if line
    ):
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.skip("no exploit happened before the campaign ended; nothing to interrupt")
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = subprocess.run(
        [*argv, "resume", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trials = trials_of(config)
    exploits = [t.user_attrs["tuner.exploit"] for t in trials if "tuner.exploit" in t.user_attrs]
    assert exploits
    replaced = [e["replaces"] for e in exploits]
    assert len(replaced) == len(set(replaced)), f"a segment replaced twice: {replaced}"
    import optuna

    from tuner.coordination import counted_trials
    from tuner.schedulers import member_of

    study = optuna.load_study(study_name="t", storage=config.optuna_storage_url())
    assert counted_trials(study) == 4
    assert not [t.number for t in trials if t.state.name in ("RUNNING", "WAITING")]
    # Every member goes on to the end: its newest trial completed, its curve whole.
    newest: dict[int, Any] = {}
    for t in trials:
        newest[member_of(t)] = t
    assert sorted(newest) == [0, 1, 2, 3]
    for member, t in newest.items():
        assert t.state.name == "COMPLETE", (member, t.number, t.state.name)
        assert sorted(t.intermediate_values) == list(range(8))
    assert all(r.info.status != "RUNNING" for r in mlflow_runs(sqlite_uri))
