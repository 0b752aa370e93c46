"""What a campaign's MLflow runs say about its trials (names, tags, statuses, and the
``{trial}``/``{run_id}`` placeholders): real trial processes, a real MLflow SQLite store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.tuner.conftest import mlflow_runs, trials_of, tuner_cli

pytestmark = pytest.mark.slow

#: Records the process's own start and end (time.time()) and sleeps about half a second.
TIMED = """
import json, os, sys, time
t0 = time.time()
from tuner import trial
time.sleep(0.5)
trial.report(0, loss=float(sys.argv[-1]))
with open(f"times-{os.environ['TUNER_TRIAL_NUMBER']}.json", "w") as f:
    json.dump({"start": t0, "end": time.time()}, f)
"""


def _trial_runs(uri: str) -> dict[int, Any]:
    return {
        int(r.data.tags["tuner.trial_number"]): r
        for r in mlflow_runs(uri)
        if r.data.tags.get("lineage.run_type") == "trial"
    }


def test_trial_run_times_are_the_process_own(campaign, run_campaign, sqlite_uri, tmp_path):
    """One slot, three trials of ~0.5 s: the runs of trials 1 and 2 were reserved when the
    campaign started, one and two trials before their process did. Each run must still start
    when its process was launched and last as long as the process."""
    config = campaign(
        TIMED,
        command=["python", "trial.py", "{x}"],
        budget={"trials": 3},
        resources={"parallel": 1},
    )
    run_campaign(config)
    runs = _trial_runs(sqlite_uri)
    assert sorted(runs) == [0, 1, 2]
    for t in trials_of(config):
        run = runs[t.number]
        launched_ms = int(t.user_attrs["tuner.launch"]["started"] * 1000)
        own = json.loads((tmp_path / f"times-{t.number}.json").read_text())
        # Launch precedes the script's first line; the run starts at the launch.
        assert launched_ms <= run.info.start_time <= own["start"] * 1000
        assert run.info.end_time >= own["end"] * 1000 - 1
        recorded = float(run.data.tags["tuner.duration_s"])
        shown = (run.info.end_time - run.info.start_time) / 1000
        # The process's duration as the executor measured it, within a generous margin (the
        # end is when its output was drained); a run reserved early shows 2-3 times as much.
        assert abs(shown - recorded) <= 0.25 * recorded + 0.01, (t.number, shown, recorded)
        assert shown >= own["end"] - own["start"]


def test_run_names_retries_and_experiment_kind(campaign, run_campaign, sqlite_uri):
    from mlflow.tracking import MlflowClient

    script = """
    import os, sys
    from tuner import trial
    if os.environ["TUNER_ATTEMPT"] == "1" and os.environ["TUNER_TRIAL_NUMBER"] == "1":
        sys.exit(3)
    trial.report(0, loss=0.5)
    """
    config = campaign(script, budget={"trials": 3}, trial={"retries": 1})
    run_campaign(config)
    runs = mlflow_runs(sqlite_uri)
    trials = trials_of(config)
    retry = next(t for t in trials if t.user_attrs.get("tuner.retry_of") == 1)
    expected = {"t"} | {
        f"t-{t.number}" + (f"-retry{t.user_attrs['tuner.attempt'] - 1}" if t is retry else "")
        for t in trials
    }
    assert {r.info.run_name for r in runs} == expected
    run = next(r for r in runs if r.info.run_name == f"t-{retry.number}-retry1")
    assert run.data.tags["tuner.retry_of"] == "1" and run.data.tags["tuner.attempt"] == "2"
    # The experiment opens on its runs in the MLflow UI, not on the GenAI traces view.
    exp = MlflowClient(tracking_uri=sqlite_uri).get_experiment_by_name("t")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"


def test_placeholders_trial_and_run_id_reach_the_command(campaign, tmp_path, sqlite_uri):
    """`{trial}` and `{run_id}` in the command: `tuner run` fills them (it used to stop with
    "command placeholder {trial} has no value")."""
    script = """
    import os, sys
    from tuner import trial
    number, run_id, x = sys.argv[1:]
    assert number == os.environ["TUNER_TRIAL_NUMBER"], (number, os.environ["TUNER_TRIAL_NUMBER"])
    assert run_id == os.environ["MLFLOW_RUN_ID"], (run_id, os.environ["MLFLOW_RUN_ID"])
    open(f"seen-{number}.txt", "w").write(run_id)
    trial.report(0, loss=float(x))
    """
    config = campaign(
        script,
        command=["python", "trial.py", "{trial}", "{run_id}", "{x}"],
        budget={"trials": 2},
    )
    proc = tuner_cli("run", str(tmp_path / "campaign.yaml"), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    runs = _trial_runs(sqlite_uri)
    for t in trials_of(config):
        assert t.state.name == "COMPLETE"
        assert (tmp_path / f"seen-{t.number}.txt").read_text() == runs[t.number].info.run_id


def test_parent_description_links_the_importance_analysis(campaign, run_campaign, sqlite_uri):
    config = campaign(budget={"trials": 8}, resources={"parallel": 2})
    result = run_campaign(config, importance=True)
    assert "analysis run" in (result.importance or ""), result.importance
    runs = mlflow_runs(sqlite_uri)
    (parent,) = [r for r in runs if r.data.tags.get("lineage.run_type") == "campaign"]
    (analysis,) = [r for r in runs if r.data.tags.get("lineage.run_type") == "analysis"]
    note = parent.data.tags["mlflow.note.content"]
    link = (
        f"#/experiments/{parent.info.experiment_id}/runs/{analysis.info.run_id}"
        "?workflowType=machine_learning"
    )
    assert f"]({link})" in note
    trials = (
        f"#/experiments/{parent.info.experiment_id}/runs?viewStateShareKey=lineage-trials"
        "&workflowType=machine_learning"
    )
    assert f"[The trials]({trials})" in note
    assert "importance of each parameter for `loss` (minimize)" in note
    assert "scatter plot per parameter" in note and "Best trial: #" in note
    # The campaign report is in the analysis run's artifacts; the description
    # links its views.
    from mlflow.tracking import MlflowClient

    from tests.report._report_helpers import check_png

    client = MlflowClient(tracking_uri=sqlite_uri)
    logged = {a.path for a in client.list_artifacts(analysis.info.run_id, "report")}
    for name in ("report.html", "history.png", "parallel.png", "slice.png", "intermediate.png"):
        assert f"report/{name}" in logged, logged
    local = client.download_artifacts(analysis.info.run_id, "report/history.png", "dl")
    check_png(Path(local))
    # Each view's link opens its picture, which MLflow's artifact viewer draws; the
    # interactive page is named as a download.
    for name in ("history.png", "parallel.png", "slice.png", "intermediate.png"):
        assert f"runs/{analysis.info.run_id}/artifactPath/report/{name}" in note
    assert "`report/report.html`" in note and "download it" in note


def test_run_prints_the_config_warnings(campaign, tmp_path):
    campaign(
        parameters={
            "x": {"type": "float", "low": 0.0, "high": 1.0},
            "unused": {"type": "int", "low": 1, "high": 3},
        },
        budget={"trials": 1},
    )
    proc = tuner_cli("run", str(tmp_path / "campaign.yaml"), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1
    assert warning[0].startswith("tuner run: warning: ")
    assert "parameter unused appears in no command placeholder" in warning[0]


def test_configs_shipped_validate_without_warnings(repo_root: Path):
    """The configs in configs/ use {name?} for conditional parameters (or say that the script
    reads TUNER_PARAMS): `tuner validate` has nothing to warn about."""
    from tuner.config import load_config

    for path in sorted((repo_root / "configs").glob("*.yaml")):
        assert load_config(path).warnings() == [], path.name
