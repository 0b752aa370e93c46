"""Campaigns end to end: real trial processes, MLflow SQLite lineage, Optuna SQLite study."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.tuner.conftest import mlflow_runs, trials_of
from tuner import BudgetExhausted

pytestmark = pytest.mark.slow


def _by_state(trials: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in trials:
        out[t.state.name] = out.get(t.state.name, 0) + 1
    return out


def test_success_records_parent_and_child_runs(campaign, run_campaign, sqlite_uri):
    config = campaign(budget={"trials": 4}, resources={"parallel": 2}, env={"API_TOKEN": "s3cr3t"})
    result = run_campaign(config)
    assert result.counts == {"COMPLETE": 4, "PRUNED": 0, "FAIL": 0}
    trials = trials_of(config)
    assert _by_state(trials) == {"COMPLETE": 4}
    for t in trials:
        assert t.value == pytest.approx((t.params["x"] - 0.3) ** 2 + 0.1 / 3)
        assert sorted(t.intermediate_values) == [0, 1, 2]
    assert result.best["value"] == min(t.value for t in trials)

    runs = mlflow_runs(sqlite_uri)
    parents = [r for r in runs if r.data.tags.get("lineage.run_type") == "campaign"]
    children = [r for r in runs if r.data.tags.get("lineage.run_type") == "trial"]
    assert len(parents) == 1 and len(children) == 4
    assert not [r for r in runs if r.data.tags.get("lineage.run_type") == "reserved"]
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    by_number = {int(r.data.tags["tuner.trial_number"]): r for r in children}
    assert sorted(by_number) == [t.number for t in trials]
    for t in trials:
        run = by_number[t.number]
        tags = run.data.tags
        assert run.info.status == "FINISHED" and run.info.run_name == f"t-{t.number}"
        assert tags["mlflow.parentRunId"] == parent.info.run_id
        assert float(run.data.params["x"]) == pytest.approx(t.params["x"])
        assert tags["tuner.attempt"] == "1" and tags["tuner.sampler"] == "random"
        assert tags["tuner.state"] == "COMPLETE" and tags["tuner.exit_code"] == "0"
        assert tags["tuner.device"].startswith("cpu")
        assert float(tags["tuner.duration_s"]) > 0
        assert "trial.py --x" in tags["tuner.command"]
        assert tags["tuner.env.API_TOKEN"] == "****"
        assert t.user_attrs["tuner.launch"]["run_id"] == run.info.run_id
        history = client.get_metric_history(run.info.run_id, "loss")
        assert [m.step for m in history] == [0, 1, 2]
        assert history[-1].value == pytest.approx(t.value)
        arts = [a.path for a in client.list_artifacts(run.info.run_id, "tuner")]
        assert arts == ["tuner/output_tail.txt"]


def test_each_trial_gets_its_own_device(campaign, run_campaign, tmp_path):
    script = """
    import os, pathlib, sys, time, json
    from tuner import trial
    start, cuda = time.time(), os.environ["CUDA_VISIBLE_DEVICES"]
    # Each device's first trial runs until the other device's first trial has started too.
    pathlib.Path(f"started-{cuda}").touch()
    deadline = time.monotonic() + 120
    while not pathlib.Path(f"started-{1 - int(cuda)}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(f"dev-{os.getpid()}.json", "w") as f:
        json.dump({"cuda": os.environ["CUDA_VISIBLE_DEVICES"], "start": start, "end": time.time(),
                   "env": {k: os.environ.get(k) for k in ("TUNER_PARAMS", "MLFLOW_RUN_ID",
                   "MLFLOW_EXPERIMENT_ID", "MLFLOW_TRACKING_URI")}}, f)
    print("CUDA_VISIBLE_DEVICES=" + os.environ["CUDA_VISIBLE_DEVICES"])
    trial.report(0, loss=0.5)
    """
    config = campaign(
        script, budget={"trials": 6}, resources={"kind": "gpu", "devices": [0, 1], "parallel": 2}
    )
    run_campaign(config)
    records = [json.loads(p.read_text()) for p in tmp_path.glob("dev-*.json")]
    assert len(records) == 6
    assert {r["cuda"] for r in records} == {"0", "1"}
    for a in records:
        assert all(a["env"].values())
        assert json.loads(a["env"]["TUNER_PARAMS"]).keys() == {"x"}
        for b in records:
            overlap = a is not b and a["start"] < b["end"] and b["start"] < a["end"]
            assert not (overlap and a["cuda"] == b["cuda"]), (a, b)
    # Both devices were busy at once at some point: the slots really ran in parallel.
    # (Whatever the load: each device's first trial waits for the other's to start.)
    assert any(
        a["start"] < b["end"] and b["start"] < a["end"]
        for a in records
        for b in records
        if a is not b
    )


def test_shell_metacharacters_in_values_never_execute(campaign, run_campaign, tmp_path):
    script = """
    import sys
    from tuner import trial
    with open("argv.txt", "a") as f:
        f.write(repr(sys.argv[1:]) + "\\n")
    trial.report(0, loss=1.0)
    """
    evil = ["; touch pwned", "$(touch pwned2)", "`touch pwned3`", "a && touch pwned4"]
    config = campaign(
        script,
        command=["python", "trial.py", "{opt}"],
        parameters={"opt": {"type": "categorical", "choices": evil}},
        budget={"trials": 6},
        sampler={"name": "random", "seed": 3},
    )
    run_campaign(config)
    for name in ("pwned", "pwned2", "pwned3", "pwned4"):
        assert not (tmp_path / name).exists()
    seen = {line for line in (tmp_path / "argv.txt").read_text().splitlines()}
    assert seen and all(eval(line)[0] in evil and len(eval(line)) == 1 for line in seen)


def test_failure_retry_same_params_then_success(campaign, run_campaign, sqlite_uri):
    script = """
    import os, sys
    from tuner import trial
    if os.environ["TUNER_ATTEMPT"] == "1":
        print("boom on first attempt", file=sys.stderr)
        sys.exit(3)
    trial.report(0, loss=0.25)
    """
    config = campaign(script, budget={"trials": 2}, trial={"retries": 1})
    result = run_campaign(config)
    assert result.counts == {"COMPLETE": 2, "PRUNED": 0, "FAIL": 0}
    trials = trials_of(config)
    assert _by_state(trials) == {"FAIL": 2, "COMPLETE": 2}
    fails = [t for t in trials if t.state.name == "FAIL"]
    for f in fails:
        assert f.user_attrs["fail_reason"] == "exit code 3: boom on first attempt"
        retry = next(t for t in trials if t.user_attrs.get("tuner.retry_of") == f.number)
        assert retry.params == f.params and retry.user_attrs["tuner.attempt"] == 2
        assert retry.state.name == "COMPLETE"
    failed_runs = [r for r in mlflow_runs(sqlite_uri) if r.info.status == "FAILED"]
    assert len(failed_runs) == 2
    assert {r.data.tags["tuner.fail_reason"] for r in failed_runs} == {
        "exit code 3: boom on first attempt"
    }


def test_failures_timeouts_nan_missing_count_and_max_failures_stops(
    campaign, run_campaign, sqlite_uri
):
    script = """
    import sys, time, argparse
    from tuner import trial
    ap = argparse.ArgumentParser(); ap.add_argument("--mode"); mode = ap.parse_args().mode
    if mode == "timeout":
        time.sleep(600)
    elif mode == "nan":
        trial.report(0, loss=float("nan"))
    elif mode == "missing":
        trial.report(0, other=1.0)
    elif mode == "signal":
        import os, signal; os.kill(os.getpid(), signal.SIGKILL)
    """
    config = campaign(
        script,
        command=["python", "trial.py", "--mode", "{mode}"],
        parameters={
            "mode": {"type": "categorical", "choices": ["timeout", "nan", "missing", "signal"]}
        },
        sampler={"name": "grid"},
        budget={"trials": 8, "max_failures": 4},
        # Long enough for the other modes to start and end on a loaded machine.
        trial={"timeout": 10, "grace_period": 0.5},
    )
    with pytest.raises(
        BudgetExhausted, match=r"4 failed trial attempt\(s\) reached budget.max_failures=4"
    ):
        run_campaign(config)
    trials = trials_of(config)
    assert "RUNNING" not in _by_state(trials)
    reasons = {
        t.params["mode"]: t.user_attrs["fail_reason"]
        for t in trials
        if t.state.name == "FAIL" and "tuner:stale" not in t.system_attrs
    }
    assert reasons["timeout"] == "timeout: ran longer than trial.timeout=10s"
    assert reasons["nan"] == "target metric 'loss' is nan"
    assert reasons["missing"].startswith("target metric 'loss' was never reported")
    assert reasons["signal"] == "killed by signal SIGKILL"
    runs = mlflow_runs(sqlite_uri)
    assert not [
        r for r in runs if r.info.status == "RUNNING" and r.info.lifecycle_stage == "active"
    ]
    failed = [
        r for r in runs if r.info.status == "FAILED" and r.data.tags["lineage.run_type"] == "trial"
    ]
    assert {r.data.tags.get("tuner.fail_reason") for r in failed} == set(reasons.values())


def test_prune_stops_the_process_and_marks_both_stores(campaign, run_campaign, sqlite_uri):
    script = """
    import argparse, time
    from tuner import trial
    ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
    for step in range(200):
        trial.report(step, loss=x)
        if x > 1:  # the bad trial gives the controller 20 s to prune it, at any load
            time.sleep(0.1)
    """
    config = campaign(
        script,
        command=["python", "trial.py", "--x", "{x}"],
        parameters={"x": {"type": "categorical", "choices": [1.0, 100.0]}},
        sampler={"name": "grid"},
        pruner={"name": "median", "options": {"n_startup_trials": 1, "n_warmup_steps": 2}},
        budget={"trials": 2},
    )
    # The grid has two points; enqueue the good one first so the bad one is pruned.
    import optuna

    from tuner.search import open_storage

    study = optuna.create_study(
        storage=open_storage(config.optuna_storage_url(), exclusive=False), study_name="t"
    )
    study.enqueue_trial({"x": 1.0})
    result = run_campaign(config)
    assert result.counts == {"COMPLETE": 1, "PRUNED": 1, "FAIL": 0}
    pruned = next(t for t in trials_of(config) if t.state.name == "PRUNED")
    assert pruned.params == {"x": 100.0}
    assert pruned.user_attrs["prune_reason"].startswith("pruned by the median pruner at step")
    assert pruned.user_attrs["prune_reason"].endswith("(loss=100)")  # 4 significant digits
    assert max(pruned.intermediate_values) < 199  # stopped early, not after 200 steps
    run = next(r for r in mlflow_runs(sqlite_uri) if r.data.tags.get("tuner.state") == "PRUNED")
    assert run.info.status == "KILLED"
    assert run.data.tags["tuner.prune_reason"] == pruned.user_attrs["prune_reason"]


def test_diagnosis_stops_a_diverging_trial(campaign, run_campaign):
    script = """
    import time
    from tuner import trial
    for step in range(2000):  # stopped by the controller long before, at any load
        trial.report(step, loss=float("nan") if step >= 3 else 1.0 / (step + 1))
        time.sleep(0.05)
    """
    config = campaign(script, budget={"trials": 1}, diagnosis={"early_stop": True})
    result = run_campaign(config)
    assert result.counts["PRUNED"] == 1
    (t,) = trials_of(config)
    assert t.user_attrs["prune_reason"].startswith("stopped early by diagnosis:")
    assert "nan" in t.user_attrs["prune_reason"].lower()


def test_diagnosis_checks_each_ended_trial(campaign, run_campaign, sqlite_uri):
    # With the early stop off, a curve that ends in NaN runs to its end; the checks of
    # ``diagnosis.checks`` then find the runaway (an error, also said in the output) and the
    # learning rate out of any reasonable range (a warning, on the run's tag only).
    script = """
    import argparse
    from tuner import trial
    ap = argparse.ArgumentParser(); ap.add_argument("--lr", type=float); a = ap.parse_args()
    for step in range(4):
        trial.report(step, loss=float("nan") if step == 3 else 1.0 / (step + 1))
    """
    from tuner.campaign import Observer

    class Lines(Observer):
        def __init__(self) -> None:
            self.lines: list[str] = []

        def message(self, text: str) -> None:
            self.lines.append(text)

    observer = Lines()
    config = campaign(
        script,
        command=[sys.executable, "trial.py", "--lr", "{lr}"],
        parameters={"lr": {"type": "float", "low": 20.0, "high": 30.0}},
        budget={"trials": 1},
        diagnosis={"early_stop": False, "checks": ["hyperparameter_range", "loss_runaway"]},
    )
    run_campaign(config, observer=observer)
    (run,) = [r for r in mlflow_runs(sqlite_uri) if r.data.tags.get("lineage.run_type") == "trial"]
    found = run.data.tags["tuner.diagnosis"].split("; ")
    assert [entry.split(":")[0] for entry in found] == [
        "loss_runaway (error)",
        "hyperparameter_range (warning)",
    ]
    assert "lr = 2" in found[1]
    said = [line for line in observer.lines if "diagnosis" in line]
    assert len(said) == 1 and said[0].startswith("trial 0: diagnosis: loss_runaway: "), said


def test_plain_mlflow_script(campaign, run_campaign, sqlite_uri):
    script = """
    import argparse, mlflow
    ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
    with mlflow.start_run():
        for step in range(3):
            mlflow.log_metric("loss", x + step, step=step)
    """
    config = campaign(script, budget={"trials": 1})
    run_campaign(config)
    (t,) = trials_of(config)
    assert t.state.name == "COMPLETE" and t.value == pytest.approx(t.params["x"] + 2)
    trial_runs = [
        r for r in mlflow_runs(sqlite_uri) if r.data.tags.get("lineage.run_type") == "trial"
    ]
    assert len(trial_runs) == 1 and trial_runs[0].data.metrics["loss"] == pytest.approx(t.value)


def test_stdout_only_script_feeds_pruner_and_lineage(campaign, run_campaign, sqlite_uri):
    script = """
    import argparse
    ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
    for step in range(1, 4):
        print(f"epoch: {step} step: 10, loss is {x / step:.4f}")
    print("accuracy = 0.75")
    """
    config = campaign(
        script,
        budget={"trials": 1},
        metrics={
            "loss": {
                "pattern": r"epoch: (?P<step>\d+) step: \d+, loss is (?P<value>[-+.\deE]+|nan|inf)"
            },
            "acc": {"pattern": r"accuracy = ([0-9.]+)"},
        },
        pruner={"name": "median"},
    )
    run_campaign(config)
    (t,) = trials_of(config)
    assert t.state.name == "COMPLETE"
    assert t.value == pytest.approx(round(t.params["x"] / 3, 4))
    assert sorted(t.intermediate_values) == [1, 2, 3]
    run = next(r for r in mlflow_runs(sqlite_uri) if r.data.tags.get("lineage.run_type") == "trial")
    assert run.data.metrics["acc"] == 0.75


def test_status_json_and_cli_exit_codes(campaign, tmp_path, cli):
    campaign(budget={"trials": 2})
    cfg = str(tmp_path / "campaign.yaml")
    rc, _, err = cli("status", cfg, "--format", "json")
    assert rc == 2 and "no campaign 't'" in err
    rc, _, err = cli("run", cfg, "--quiet")
    assert rc == 0, err
    rc, out, err = cli("status", cfg, "--format", "json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["trials"]["COMPLETE"] == 2 and data["trials"]["RUNNING"] == 0
    assert data["budget"] == {"trials": 2, "finished": 2, "steps": None, "device_hours": None}
    assert set(data["best"]) == {"number", "value", "params"}
    assert data["controller"]["alive"] is False and data["running"] == []
    rc, out, _ = cli("status", cfg)
    assert rc == 0 and "2/2 trials" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    rc, _, err = cli("run", str(bad))
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    rc, _, err = cli("resume", str(bad).replace("bad", "nothing"))
    assert rc == 2 and "no such file" in err


def test_max_failures_cli_one_line_exit_1(campaign, tmp_path, cli):
    config = campaign(
        "import sys; sys.exit(1)\n",
        budget={"trials": 5, "max_failures": 2},
        resources={"kind": "cpu", "parallel": 1},
    )
    rc, _, err = cli("run", str(tmp_path / "campaign.yaml"), "--quiet")
    assert rc == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "budget.max_failures=2" in lines[0], err
    # The trial asked for ahead was not started only to be killed when the budget ran out.
    launched = [t for t in trials_of(config) if "tuner.launch" in t.user_attrs]
    assert len(launched) == 2, [(t.number, t.state.name) for t in trials_of(config)]
