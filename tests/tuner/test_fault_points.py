"""The fault matrix: a small campaign is killed (SIGKILL) or has a call fail at each named
point of `lineage.faults.POINTS`, `tuner resume` finishes it, and the invariants hold: the
budget counted exactly, no trial RUNNING or WAITING, no process of the campaign left, no
MLflow run RUNNING, every reported step recorded once, no torn checkpoint resumed from, no
chain promoted, exploited or re-run twice.

A sample runs by default; the whole matrix (every point x kind x store) with
``LT_FAULT_MATRIX=all pytest -n 0 tests/tuner/test_fault_points.py``
(``benchmarks/bench_faults.py`` runs it and writes the pass count).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lineage import faults
from tests.tuner.conftest import mlflow_runs, trials_of
from tests.tuner.test_schedulers_asha import SCRIPT as ASHA_SCRIPT
from tests.tuner.test_schedulers_pbt import SCRIPT as PBT_SCRIPT

# Each case runs two or three tuner processes one after another: on a loaded machine that can
# pass the suite's 300 s per-test limit.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: Four steps with a checkpoint after each; a resumed attempt checks that the checkpoint it
#: was given holds the step it was told (a torn one would not) and notes it in ``torn``.
#: While ``fail`` exists, the first attempt to reach its step-1 checkpoint takes it and exits 3
#: (a failure the retry scenario retries once).
#: While ``hold`` exists, trial 0's fresh attempt waits after its step-1 checkpoint (up to
#: 120 s): a process its killed controller left is still running when `tuner resume` comes.
SCRIPT = """
import argparse, json, os, pathlib, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
resume = trial.resume_from()
start = 0
if resume is not None:
    state = json.loads((resume[0] / "state.json").read_text())
    if state["step"] != resume[1]:
        pathlib.Path("torn").write_text(f"{state} at {resume}")
    start = resume[1] + 1
for step in range(start, 4):
    trial.report(step, loss=(x - 0.3) ** 2 + 0.1 / (step + 1))
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"step": step}))
    trial.checkpointed(step)
    if step == 1 and resume is None:
        try:
            os.rename("fail", "failed")  # atomic: one attempt takes the one failure
        except FileNotFoundError:
            pass
        else:
            raise SystemExit(3)
    if step == 1 and resume is None and trial.number() == 0:
        deadline = time.monotonic() + 120
        while pathlib.Path("hold").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
"""

#: The points at which a trial's process runs on after its controller died: the test holds
#: it, so that `tuner resume` must find and end it.
HOLD = {"after-fork-before-launch-record", "supersede-copied-not-marked"}

#: The campaign each point is reached in.
SCENARIO = {
    "asha-pause-recorded-not-told": "asha",
    "asha-promoted-not-started": "asha",
    "pbt-marked-not-enqueued": "pbt",
    "pbt-copied-not-told": "pbt",
    "retry-queued-not-marked": "retry",
}

#: A point reached only while a controller recovers what a killed one left: the campaign is
#: first killed at this other point, then the fault is armed for `tuner resume`.
BEFORE = {"supersede-copied-not-marked": "after-fork-before-launch-record"}

STORES = ("sqlite", "postgresql")

#: The cases every CI run takes (one per window the points closed; ~60 s on two cores).
SAMPLE = {
    ("after-fork-before-launch-record", "kill", "sqlite"),
    ("ended-not-told", "raise", "sqlite"),
}


def _cases() -> Iterator[Any]:
    whole = os.environ.get("LT_FAULT_MATRIX") == "all"
    for name in faults.POINTS:
        for kind in faults.KINDS:
            for store in STORES:
                if not whole and (name, kind, store) not in SAMPLE:
                    continue
                marks = [pytest.mark.postgres] if store == "postgresql" else []
                yield pytest.param(name, kind, store, id=f"{name}-{kind}-{store}", marks=marks)


def _env(fault: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.pop(faults.ENV, None)
    if fault is not None:
        env[faults.ENV] = fault
    return env


def _tuner(cwd: Path, command: str, fault: str | None) -> subprocess.CompletedProcess[str]:
    # Its output goes to files, not pipes: a process the fault leaves behind holds them open.
    with open(cwd / "out.txt", "w+") as out, open(cwd / "err.txt", "w+") as err:
        rc = subprocess.run(
            [sys.executable, "-m", "tuner.cli", command, "campaign.yaml", "--quiet"],
            cwd=cwd,
            env=_env(fault),
            stdout=out,
            stderr=err,
            timeout=280,
        ).returncode
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess([command], rc, out.read(), err.read())


def _campaign_processes(folder: Path) -> list[int]:
    """Live processes (not zombies) working in ``folder``, other than this test's own."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if Path(f"/proc/{entry}/cwd").resolve() != folder.resolve():
                continue
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            found.append(int(entry))
    return found


def _poll(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout}s")
        time.sleep(0.1)


@pytest.fixture
def optuna_pg() -> Iterator[str]:
    """An empty PostgreSQL database for the study (MLflow has its own)."""
    import psycopg

    name = f"lt_faults_{uuid.uuid4().hex[:10]}"
    admin = "postgresql://postgres@127.0.0.1:5432/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


def _config(
    campaign: Callable[..., Any], scenario: str, tmp_path: Path, storage: str | None
) -> Any:
    extra: dict[str, Any] = {"storage": storage} if storage else {}
    if scenario == "asha":
        # As the ASHA test's promotion: three of five configurations paused at rung step 1,
        # the second best promoted once four values are in.
        (tmp_path / "bases").write_text("1.0 3.0 5.0 6.0 7.0")
        (tmp_path / "cut").write_text("3.0 5.0 6.0 7.0")
        scheduler = {"name": "asha", "mode": "promote", "min_resource": 1, "max_resource": 3}
        return campaign(
            ASHA_SCRIPT, budget={"trials": 5}, scheduler=scheduler, reads_tuner_params=True, **extra
        )
    if scenario == "pbt":
        return campaign(
            PBT_SCRIPT,
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
            **extra,
        )
    if scenario == "retry":
        (tmp_path / "fail").touch()
    return campaign(
        SCRIPT,
        budget={"trials": 3},
        resources={"kind": "cpu", "parallel": 2},
        trial={"grace_period": 1, **({"retries": 1} if scenario == "retry" else {})},
        **extra,
    )


@pytest.mark.parametrize(("name", "kind", "store"), list(_cases()))
def test_a_fault_at_a_named_point_is_survived(
    name: str, kind: str, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from tests.tuner.conftest import _maker

    if store == "postgresql":
        uri = request.getfixturevalue("postgres_uri")
        storage = request.getfixturevalue("optuna_pg")
    else:
        uri, storage = request.getfixturevalue("sqlite_uri"), None
    config = _config(_maker(tmp_path, uri), SCENARIO.get(name, "plain"), tmp_path, storage)
    if name in HOLD and kind == "kill":
        (tmp_path / "hold").touch()
    marker = tmp_path / "fault.fired"
    armed = f"{name}:{kind}:{marker}"

    # The campaign runs into the fault (or into the one that leaves what the point needs).
    first = BEFORE.get(name)
    done = _tuner(tmp_path, "run", f"{first}:kill:{tmp_path / 'before.fired'}" if first else armed)
    if first:
        assert (tmp_path / "before.fired").exists(), done.stderr
        done = _tuner(tmp_path, "resume", armed)
    assert marker.exists(), f"the point {name} was not reached: {done.stderr[-2000:]}"
    fired_in = int(marker.read_text().split()[2])
    assert "Traceback" not in done.stderr or kind == "raise", done.stderr[-2000:]

    # Then resumed without faults, as often as it takes to end cleanly (at most twice).
    for _ in range(2):
        done = _tuner(tmp_path, "resume", None)
        if done.returncode == 0:
            break
    assert done.returncode == 0, done.stderr[-3000:]
    _check_invariants(config, uri, tmp_path, SCENARIO.get(name, "plain"), fired_in)


def _check_invariants(config: Any, uri: str, folder: Path, scenario: str, fired_in: int) -> None:
    import optuna

    from tuner.coordination import counted_trials
    from tuner.search import PROMOTED_FROM_ATTR, RERUN_OF_ATTR, RETRY_OF_USER_ATTR

    # No process of the campaign is left (the SIGKILL of an orphan is sent, not awaited).
    _poll(lambda: not _campaign_processes(folder), f"processes left {_campaign_processes(folder)}")
    assert not (folder / "torn").exists(), (folder / "torn").read_text()

    trials = trials_of(config)
    states = Counter(t.state.name for t in trials)
    assert not states["RUNNING"] and not states["WAITING"], states
    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    assert counted_trials(study) == config.budget.trials, states

    # No chain re-run, promoted or exploited twice.
    for attr in (RERUN_OF_ATTR, PROMOTED_FROM_ATTR, RETRY_OF_USER_ATTR):
        values = [t.user_attrs[attr] for t in trials if t.user_attrs.get(attr) is not None]
        assert len(values) == len(set(values)), (attr, values)
    if scenario == "retry":
        assert any(RETRY_OF_USER_ATTR in t.user_attrs for t in trials), states
    replaced = [
        t.user_attrs["tuner.exploit"]["replaces"] for t in trials if "tuner.exploit" in t.user_attrs
    ]
    assert len(replaced) == len(set(replaced)), replaced

    # No run left RUNNING; each run's target curve holds each step once, and a COMPLETE
    # trial's run holds the steps the study holds.
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    runs = [r for r in mlflow_runs(uri) if r.info.lifecycle_stage == "active"]
    assert not [r.info.run_id for r in runs if r.info.status == "RUNNING"]
    by_id = {r.info.run_id: r for r in runs}
    for t in trials:
        run_id = (t.user_attrs.get("tuner.launch") or {}).get("run_id")
        if run_id is None or run_id not in by_id:
            continue
        steps = [m.step for m in client.get_metric_history(run_id, "loss")]
        assert len(steps) == len(set(steps)), (t.number, sorted(steps))
        if t.state.name == "COMPLETE" and scenario != "pbt":
            assert set(steps) == set(t.intermediate_values), (t.number, steps)
    assert fired_in > 0
