"""ASHA on local slots with real subprocess trials: a trial below the cut at a rung is
paused at its checkpoint and later promoted (resumed from it as a continuation), or stopped
for good with ``mode: stop``. Real MLflow SQLite store, Optuna on SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from tests.tuner.conftest import mlflow_runs, trials_of

pytestmark = pytest.mark.slow

#: Nine steps, a checkpoint after each. A fresh start takes the next value of ``bases`` (so
#: the order of the configurations' quality is fixed, whatever the sampler draws); a
#: continuation reads it back from its checkpoint. Each start appends ``number step`` to
#: ``starts``. A configuration listed in ``cut`` waits after its step-1 checkpoint until the
#: scheduler stops it (a real training is slower than the controller's decision; this one
#: would otherwise finish first).
SCRIPT = """
import json, pathlib, time
from tuner import trial
cut = pathlib.Path("cut").read_text().split()
resume = trial.resume_from()
if resume is None:
    bases = pathlib.Path("bases").read_text().split()
    base, start = float(bases[0]), 0
    pathlib.Path("bases").write_text(" ".join(bases[1:]))
else:
    base, start = json.loads((resume[0] / "state.json").read_text())["base"], resume[1] + 1
with open("starts", "a") as fh:
    fh.write(f"{trial.number()} {start}\\n")
for step in range(start, 9):
    trial.report(step, loss=base + 1.0 / (step + 1))
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"base": base}))
    trial.checkpointed(step)
    if step == 1 and resume is None and str(base) in cut:
        deadline = time.monotonic() + 240
        while not trial.should_prune() and time.monotonic() < deadline:
            time.sleep(0.02)
        if trial.should_prune():
            break
"""


def _starts(tmp_path: Path) -> dict[int, int]:
    lines = (tmp_path / "starts").read_text().split("\n")
    return dict(tuple(map(int, line.split())) for line in lines if line)  # type: ignore[misc]


def _run(
    campaign: Any,
    run_campaign: Any,
    tmp_path: Path,
    mode: str,
    bases: str,
    cut: str,
    **scheduler: Any,
) -> Any:
    (tmp_path / "bases").write_text(bases)
    (tmp_path / "cut").write_text(cut)
    n = len(bases.split())
    config = campaign(
        SCRIPT,
        budget={"trials": n},
        scheduler={
            "name": "asha",
            "mode": mode,
            "min_resource": 1,
            "max_resource": 3,
            "brackets": 1,
            **scheduler,
        },
        reads_tuner_params=True,
    )
    messages: list[str] = []

    class Listen:
        def update(self, controller: Any) -> None:
            pass

        def message(self, text: str) -> None:
            messages.append(text)

    result = run_campaign(config, observer=Listen())
    return config, result, messages


def test_a_paused_trial_is_promoted_and_resumes_from_its_checkpoint(
    campaign: Any, run_campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    # Rung at step 1, eta 3. The first configuration goes on; the next three rank below the
    # top ceil(n/3) and are paused; once four values are in, the top two go on, so the
    # second configuration (second best) is promoted. The fifth is paused too.
    config, result, messages = _run(
        campaign, run_campaign, tmp_path, "promote", "1.0 3.0 5.0 6.0 7.0", "3.0 5.0 6.0 7.0"
    )
    trials = trials_of(config)
    from tuner.coordination import counted_trials

    promoted = [t for t in trials if "tuner.promoted_from" in t.user_attrs]
    assert len(promoted) == 1, [(t.number, t.state.name, t.user_attrs) for t in trials]
    cont = promoted[0]
    paused = trials[cont.user_attrs["tuner.promoted_from"]]
    # The promoted trial: paused at the rung, its slot freed, then resumed by its copy.
    assert paused.state.name == "PRUNED" and paused.user_attrs["tuner.paused_at"] == 1
    assert "paused by the asha scheduler at rung step 1" in paused.user_attrs["prune_reason"]
    assert cont.state.name == "COMPLETE"
    assert cont.user_attrs["tuner.parent_trial"] == paused.number
    assert cont.user_attrs["tuner.first_trial"] == paused.number
    resumed = cont.user_attrs["tuner.resumed_step"]
    assert resumed == 1
    starts = _starts(tmp_path)
    assert starts[paused.number] == 0 and starts[cont.number] == resumed + 1
    # One curve: the paused trial's reports up to its checkpoint, then the continuation's.
    assert sorted(cont.intermediate_values) == list(range(9))
    assert cont.value == pytest.approx(3.0 + 1.0 / 9)
    # The other configurations below the cut stay paused; none was promoted twice.
    still = [t for t in trials if t.user_attrs.get("tuner.paused_at") == 1 and t is not paused]
    assert len(still) == 3 and all(t.state.name == "PRUNED" for t in still)
    # The chain counts once: five configurations, exactly the budget.
    study = _study(config)
    assert counted_trials(study) == 5
    assert result.counts == {"COMPLETE": 2, "PRUNED": 3, "FAIL": 0}
    assert any(f"trial {paused.number}: promoted from rung step 1" in m for m in messages)

    # MLflow: the paused run says so; the continuation's run names what it continues and
    # holds one continuous curve.
    runs = {r.data.tags.get("tuner.trial_number"): r for r in mlflow_runs(sqlite_uri)}
    assert runs[str(paused.number)].data.tags["tuner.paused_at"] == "1"
    tags = runs[str(cont.number)].data.tags
    assert tags["tuner.promoted_from"] == str(paused.number)
    assert tags["tuner.resumed_step"] == str(resumed)
    client = MlflowClient(tracking_uri=sqlite_uri)
    history = client.get_metric_history(runs[str(cont.number)].info.run_id, "loss")
    assert sorted(m.step for m in history) == list(range(9))
    assert all(r.info.status != "RUNNING" for r in mlflow_runs(sqlite_uri))

    # tuner status and lineage runs tell paused, promoted and finished trials apart.
    import subprocess
    import sys

    from tuner.status import collect

    status = collect(config)
    assert status["trials"]["PAUSED"] == 3 and status["trials"]["PROMOTED"] == 1
    assert status["trials"]["COMPLETE"] == 2 and status["trials"]["PRUNED"] == 0
    assert status["budget"]["finished"] == 5
    (entry,) = [c for c in status["continued"] if c["number"] == cont.number]
    assert entry["promoted_from"] == paused.number
    shown = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "status", "campaign.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "PAUSED 3  PROMOTED 1" in shown.stdout
    assert (
        f"trial {cont.number} (attempt 2, COMPLETE) promoted: continues paused trial "
        f"{paused.number} from step 1" in shown.stdout
    )
    listed = subprocess.run(
        [sys.executable, "-m", "lineage.cli", "runs", "--tracking-uri", sqlite_uri,
         "--experiment", "t", "--columns", "run_name,status"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    # Three paused runs, and the promoted one apart (its continuation's run continues it).
    assert listed.stdout.count("PAUSED") == 3 and listed.stdout.count("PROMOTED") == 1
    assert "PRUNED" not in listed.stdout


def test_asha_stop_prunes_below_the_cut_for_good(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    config, result, _ = _run(campaign, run_campaign, tmp_path, "stop", "1.0 3.0 5.0 2.0", "3.0 5.0")
    trials = trials_of(config)
    assert [t.state.name for t in trials] == ["COMPLETE", "PRUNED", "PRUNED", "COMPLETE"]
    for t in trials[1:3]:
        assert "stopped by the asha scheduler at rung step 1" in t.user_attrs["prune_reason"]
        assert "tuner.paused_at" not in t.user_attrs
    assert not any("tuner.promoted_from" in t.user_attrs for t in trials)
    assert result.counts == {"COMPLETE": 2, "PRUNED": 2, "FAIL": 0}


def test_with_brackets_a_chain_is_judged_later_and_only_against_its_bracket(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    # Rungs at steps 1 and 3 (max_resource 9), two brackets: trials 1 and 4 join bracket 1,
    # whose first rung is step 3; the others join bracket 0 (rungs 1 and 3). Trial 1 is the
    # worst of all at step 1, which alone (brackets: 1) would stop it there; in bracket 1
    # it is first judged at step 3, against trial 4 alone.
    config, result, _ = _run(
        campaign, run_campaign, tmp_path, "stop", "1.0 9.0 3.0 5.0 2.0", "3.0 5.0",
        max_resource=9, brackets=2,
    )  # fmt: skip
    trials = trials_of(config)
    assert [t.state.name for t in trials] == [
        "COMPLETE", "COMPLETE", "PRUNED", "PRUNED", "COMPLETE"
    ], [(t.number, t.user_attrs.get("prune_reason")) for t in trials]  # fmt: skip
    assert sorted(trials[1].intermediate_values) == list(range(9))
    for t in trials[2:4]:
        reason = t.user_attrs["prune_reason"]
        assert "stopped by the asha scheduler at rung step 1" in reason
        assert "in bracket 0; the top 1/3 go on" in reason
    assert result.counts == {"COMPLETE": 3, "PRUNED": 2, "FAIL": 0}


def _study(config: Any) -> Any:
    import optuna

    return optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())


def test_resume_after_kill9_promotes_nothing_twice_and_loses_no_paused_trial(
    campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    # A continuation (a promoted trial) holds at each step while ``hold`` exists.
    script = SCRIPT.replace(
        "    trial.checkpointed(step)\n",
        "    trial.checkpointed(step)\n"
        "    while resume is not None and pathlib.Path('hold').exists():\n"
        "        __import__('time').sleep(0.02)\n",
    )
    (tmp_path / "bases").write_text("1.0 3.0 5.0 6.0 7.0")
    (tmp_path / "cut").write_text("3.0 5.0 6.0 7.0")
    (tmp_path / "hold").touch()
    config = campaign(
        script,
        budget={"trials": 5},
        scheduler={"name": "asha", "min_resource": 1, "max_resource": 3},
        reads_tuner_params=True,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    argv = [sys.executable, "-m", "tuner.cli"]
    proc = subprocess.Popen(
        [*argv, "run", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not (tmp_path / "starts").exists() or not any(
        step > 0 for step in _starts(tmp_path).values()
    ):
        assert proc.poll() is None and time.monotonic() < deadline, "no promotion started"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # the promoted continuation is running
    proc.wait()
    (tmp_path / "hold").unlink()
    done = subprocess.run(
        [*argv, "resume", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trials = trials_of(config)
    promoted = [t for t in trials if "tuner.promoted_from" in t.user_attrs]
    assert len(promoted) == 1, [(t.number, t.state.name, t.user_attrs) for t in trials]
    (cont,) = promoted
    paused = trials[cont.user_attrs["tuner.promoted_from"]]
    # The interrupted continuation was re-run from its chain's checkpoint and finished.
    assert cont.state.name == "FAIL" and "tuner:stale" in cont.system_attrs
    rerun = [t for t in trials if t.user_attrs.get("tuner.parent_trial") == cont.number]
    assert len(rerun) == 1 and rerun[0].state.name == "COMPLETE"
    assert rerun[0].user_attrs["tuner.first_trial"] == paused.number
    assert sorted(rerun[0].intermediate_values) == list(range(9))
    # Every other paused trial is still paused; the budget holds exactly.
    still = [t for t in trials if t.user_attrs.get("tuner.paused_at") == 1 and t is not paused]
    assert len(still) == 3 and all(t.state.name == "PRUNED" for t in still)
    from tuner.coordination import counted_trials

    assert counted_trials(_study(config)) == 5
    assert not [t.number for t in trials if t.state.name in ("RUNNING", "WAITING")]
    assert all(r.info.status != "RUNNING" for r in mlflow_runs(sqlite_uri))
