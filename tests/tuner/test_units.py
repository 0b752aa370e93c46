"""Unit tests: lifecycle, device slots, collectors, trial API, cached storage, /proc
identities, campaign lock, and the controller's budget accounting with in-process trials."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tuner import BudgetExhausted, ConfigError, TunerError
from tuner.campaign import IllegalTransition, TrialState


def test_trial_state_transitions():
    assert TrialState.WAITING.to(TrialState.RUNNING) is TrialState.RUNNING
    assert TrialState.RUNNING.to(TrialState.PRUNED).mlflow_status == "KILLED"
    assert TrialState.WAITING.can_become(TrialState.FAIL)
    with pytest.raises(IllegalTransition, match="cannot move from COMPLETE to RUNNING"):
        TrialState.COMPLETE.to(TrialState.RUNNING)
    with pytest.raises(IllegalTransition, match="from WAITING to COMPLETE"):
        TrialState.WAITING.to(TrialState.COMPLETE)
    assert all(s.is_final for s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL))


def test_slots_and_device_environment(tmp_path, monkeypatch):
    from tuner.executors import detect_devices, make_slots

    slots = make_slots("gpu", [0, 1, 2, 3], 2, 2)
    assert [s.devices for s in slots] == [("0", "1"), ("2", "3")]
    assert slots[1].env() == {"CUDA_VISIBLE_DEVICES": "2,3"}
    npu = make_slots("npu", ["4", "5"], 1, None)
    assert npu[1].env() == {"ASCEND_RT_VISIBLE_DEVICES": "5", "DEVICE_ID": "0"}
    cpu = make_slots("cpu", "auto", 1, 3)
    assert len(cpu) == 3 and cpu[0].env() == {"CUDA_VISIBLE_DEVICES": ""}
    with pytest.raises(ConfigError, match=r"resources.parallel must be <= 1 .* got 2"):
        make_slots("gpu", [0, 1], 2, 2)
    fake = tmp_path / "bin"
    fake.mkdir()
    smi = fake / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: a)'\necho 'GPU 1: NVIDIA H100 (UUID: b)'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    assert detect_devices() == ("gpu", ["0", "1"])
    assert [s.devices for s in make_slots("gpu", "auto", 1, None)] == [("0",), ("1",)]


class _Handle:
    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def output_lines(self) -> list[str]:
        out, self._lines = self._lines, []
        return out


def test_stdout_collector_steps_and_values():
    import re

    from tuner.collectors import StdoutCollector

    c = StdoutCollector(
        {
            "loss": re.compile(r"epoch: (?P<step>\d+) step: \d+, loss is (?P<value>\S+)"),
            "acc": re.compile(r"acc=([0-9.]+)"),
        }
    )
    reports = c.collect(
        _Handle(
            [
                "epoch: 1 step: 10, loss is 0.53",
                "noise",
                "acc=0.5 acc=0.6",
                "epoch: 2 step: 10, loss is nan",
            ]
        )  # type: ignore[arg-type]
    )
    got = [(r.step, dict(r.metrics)) for r in reports]
    assert got[0] == (1, {"loss": 0.53})
    assert got[1:3] == [(0, {"acc": 0.5}), (1, {"acc": 0.6})]
    assert got[3][0] == 2 and math.isnan(got[3][1]["loss"])
    assert c.collect(_Handle(["acc=oops"])) == []  # type: ignore[arg-type]


def test_trial_api_channel_and_flag(tmp_path, monkeypatch):
    import importlib

    from tuner._protocol import parse_report

    trial = importlib.reload(importlib.import_module("tuner.trial"))
    assert trial.params() == {} and not trial.should_prune() and not trial.is_tuning()
    trial.report(0, loss=1.0)  # outside a campaign: nothing happens
    monkeypatch.setenv("TUNER_PARAMS", json.dumps({"lr": 0.1, "opt": "sgd"}))
    monkeypatch.setenv("TUNER_CHANNEL", str(tmp_path / "ch.jsonl"))
    monkeypatch.setenv("TUNER_CONTROL", str(tmp_path / "stop"))
    trial = importlib.reload(trial)
    assert trial.params() == {"lr": 0.1, "opt": "sgd"} and trial.is_tuning()
    trial.report(3, loss=0.5, acc=float("nan"))
    with pytest.raises(TypeError, match="step must be an int"):
        trial.report(1.5, loss=1.0)  # type: ignore[arg-type]
    lines = (tmp_path / "ch.jsonl").read_bytes().splitlines()
    report = parse_report(lines[0])
    assert report is not None and report.step == 3 and report.metrics["loss"] == 0.5
    assert math.isnan(report.metrics["acc"])
    assert parse_report(b"{broken") is None
    assert not trial.should_prune()
    (tmp_path / "stop").touch()
    assert trial.should_prune()


class _CountingFile:
    def __init__(self, f: Any) -> None:
        self.f, self.writes, self.flushes = f, 0, 0

    def write(self, text: str) -> int:
        self.writes += 1
        return int(self.f.write(text))

    def flush(self) -> None:
        self.flushes += 1
        self.f.flush()


def test_trial_api_is_cheap_per_step(tmp_path, monkeypatch):
    """Cheap enough for every step, counted rather than timed (a loaded machine cannot make
    it flake): one open for the whole run, one write and one flush per report, one stat per
    should_prune, and nothing else touched."""
    import builtins
    import importlib

    monkeypatch.setenv("TUNER_CHANNEL", str(tmp_path / "ch.jsonl"))
    monkeypatch.setenv("TUNER_CONTROL", str(tmp_path / "stop"))
    trial = importlib.reload(importlib.import_module("tuner.trial"))
    opened: list[_CountingFile] = []

    def counting_open(*args: Any, **kwargs: Any) -> _CountingFile:
        opened.append(_CountingFile(builtins.open(*args, **kwargs)))  # noqa: SIM115
        return opened[-1]

    stats: list[str] = []
    real_exists = os.path.exists

    def counting_exists(path: Any) -> bool:
        stats.append(str(path))
        return real_exists(path)

    monkeypatch.setattr(trial, "open", counting_open, raising=False)
    monkeypatch.setattr(os.path, "exists", counting_exists)
    for i in range(500):
        trial.report(i, loss=1.0 / (i + 1))
        assert not trial.should_prune()
    monkeypatch.undo()
    assert len(opened) == 1
    assert opened[0].writes == 500 and opened[0].flushes == 500
    assert stats == [str(tmp_path / "stop")] * 500
    opened[0].f.close()
    assert len((tmp_path / "ch.jsonl").read_text().splitlines()) == 500


def test_exclusive_cache_writes_through(tmp_path):
    import optuna

    from tuner.search import open_storage

    url = f"sqlite:///{tmp_path / 's.db'}"
    study = optuna.create_study(
        storage=open_storage(url, exclusive=True),
        study_name="s",
        sampler=optuna.samplers.TPESampler(seed=0, n_startup_trials=3),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=1),
    )
    study.enqueue_trial({"x": 0.5, "c": "b"}, user_attrs={"tuner.attempt": 2})
    for i in range(12):
        trial = study.ask()
        x = trial.suggest_float("x", 0, 1)
        trial.suggest_categorical("c", ["a", "b"])
        trial.report(x, 0)
        trial.set_user_attr("i", i)
        if i == 5:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, x**2)
    fresh = optuna.load_study(study_name="s", storage=url).get_trials()
    cached = study.get_trials()
    assert len(fresh) == 12
    for a, b in zip(cached, fresh, strict=True):
        assert (a.number, a.state, a.values, a.params) == (b.number, b.state, b.values, b.params)
        assert a.user_attrs == b.user_attrs and a.intermediate_values == b.intermediate_values
    assert fresh[0].params == {"x": 0.5, "c": "b"} and fresh[0].user_attrs["tuner.attempt"] == 2


def test_proc_identity_and_group_end():
    from tuner.executors import _procs

    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)",
        ],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(_procs.group_members(_procs.identity(proc.pid))) < 2:  # the child started
            assert time.monotonic() < deadline, "the trial's child did not start"
            time.sleep(0.05)
        info = _procs.identity(proc.pid)
        assert info["pgid"] == proc.pid and _procs.is_alive(info)
        assert len(_procs.group_members(info)) == 2  # the trial and its child
        impostor = {**info, "start_ticks": info["start_ticks"] - 1_000_000}
        assert not _procs.is_alive(impostor)
        assert _procs.end_group({**info, "boot_id": "another-boot"}, grace=2) == 0
        assert _procs.end_group(info, grace=2) == 2
        proc.wait(60)
        deadline = time.monotonic() + 60  # a SIGKILL is delivered, not awaited
        while _procs.group_members(info):
            assert time.monotonic() < deadline, _procs.group_members(info)
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_group_end_reaches_the_attempts_processes_that_left_its_group(tmp_path):
    # As msrun does: the trial starts its worker in a session of its own.
    from tuner.executors import _procs

    channel = str(tmp_path / "channel.jsonl")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(60)'], start_new_session=True); time.sleep(60)",
        ],
        start_new_session=True,
        env={**os.environ, "TUNER_CHANNEL": channel},
    )
    try:
        info = _procs.identity(proc.pid)
        deadline = time.monotonic() + 120
        # Until the worker left the group (setsid), it is found as a member too.
        while len(_procs.attempt_processes(channel)) < 2 or len(_procs.group_members(info)) > 1:
            assert time.monotonic() < deadline, "the trial's worker did not start"
            time.sleep(0.05)
        assert _procs.end_group({**info, "channel": channel}, grace=2) == 2
        proc.wait(60)
        deadline = time.monotonic() + 60  # a SIGKILL after the grace is sent, not awaited
        while _procs.attempt_processes(channel):
            assert time.monotonic() < deadline, _procs.attempt_processes(channel)
            time.sleep(0.05)
    finally:
        _procs.signal_all(_procs.attempt_processes(channel), signal.SIGKILL)


def test_campaign_lock(tmp_path):
    from tuner.coordination import CampaignDir

    one, two = CampaignDir(tmp_path, "c/x"), CampaignDir(tmp_path, "c/x")
    assert not one.controller_alive()
    one.acquire()
    assert two.controller_alive()
    with pytest.raises(TunerError, match=r"another controller is running this campaign \(pid"):
        two.acquire()
    one.release(clean=True)
    assert not two.controller_alive() and two.acquire()["clean_exit"] is True
    two.release(clean=False)


class _NullRecorder:
    experiment_id = "0"
    parent_run_id = "p"

    def __init__(self) -> None:
        self.finished: list[tuple[str, str, dict[str, str]]] = []
        self.errors: dict[str, str] = {}
        self._n = 0

    def start(self, **_: Any) -> None: ...

    def reserve_run(self) -> str:
        self._n += 1
        return f"r{self._n}"

    def release_run(self, _run_id: str) -> None: ...

    def trial_started(self, *_: Any, **__: Any) -> None: ...

    def trial_metrics(self, *_: Any, **__: Any) -> None: ...

    def trial_finished(
        self, run_id: str, *, status: str, tags: Any, output_tail: str, **_: Any
    ) -> None:
        self.finished.append((run_id, status, dict(tags)))

    def latest_metrics(self, _run_id: str) -> dict[str, float]:
        return {}

    def call(self, _fn: Any) -> None: ...

    def close(self, *_: Any, **__: Any) -> None: ...


def _controller(campaign: Any, fn: Any, coordination: Any = None, **over: Any) -> Any:
    from tuner.campaign import Controller
    from tuner.coordination import StudySite
    from tuner.executors._inprocess import InProcessExecutor

    config = campaign(**over)
    rec = _NullRecorder()
    ctl = Controller(
        config,
        coordination=coordination(StudySite.of(config)) if coordination else None,
        executor=InProcessExecutor(fn, slots=2),
        recorder=rec,  # type: ignore[arg-type]
        importance=False,
        handle_signals=False,
        poll_interval=0.0,
    )
    return ctl, rec, config


def test_budget_is_exact_with_retries(bare_campaign):
    from tests.tuner.conftest import trials_of

    def fn(spec: Any) -> Any:
        if spec.number % 3 == 0 and spec.attempt == 1:
            return [], 1
        if spec.number % 5 == 4:
            return [], 2  # fails every attempt
        return [(0, {"loss": spec.params["x"]})], 0

    ctl, rec, config = _controller(
        bare_campaign, fn, budget={"trials": 12, "max_failures": 50}, trial={"retries": 1}
    )
    result = ctl.run()
    trials = trials_of(config)
    counted = [t for t in trials if "tuner:stale" not in t.system_attrs]
    assert len(counted) == 12 == result.finished
    assert result.counts["FAIL"] == sum(t.state.name == "FAIL" for t in counted)
    assert all(t.state.name in ("COMPLETE", "FAIL") for t in trials)
    for t in trials:
        if "tuner:stale" in t.system_attrs:  # a retried attempt: its copy has the same params
            copy = next(c for c in trials if c.user_attrs.get("tuner.retry_of") == t.number)
            assert copy.params == t.params and copy.user_attrs["tuner.attempt"] == 2
    assert {s for _, s, _ in rec.finished} <= {"FINISHED", "FAILED"}
    assert len(rec.finished) == len(trials)


def test_max_failures_raises_after_cleanup(bare_campaign):
    from tests.tuner.conftest import trials_of

    ctl, _, config = _controller(
        bare_campaign, lambda spec: ([], 1), budget={"trials": 10, "max_failures": 3}
    )
    with pytest.raises(BudgetExhausted, match=r"reached budget\.max_failures=3; last: trial"):
        ctl.run()
    trials = trials_of(config)
    assert "RUNNING" not in [t.state.name for t in trials]
    # Trials that had already ended when the third failure was seen are recorded too.
    failed = [t for t in trials if t.state.name == "FAIL" and "tuner:stale" not in t.system_attrs]
    assert 3 <= len(failed) <= 4
    assert not ctl.campaign_dir.controller_alive()


def test_importing_the_trial_api_loads_nothing_heavy():
    """What a training script pays for `from tuner import trial`: the protocol module and the
    standard library's json, nothing of the controller, Optuna, MLflow or even typing."""
    code = (
        "import sys; before = set(sys.modules); import tuner.trial; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert {"tuner.trial", "tuner._protocol", "json"} <= set(out)
    heavy = {"typing", "dataclasses", "optuna", "mlflow", "numpy", "pydantic"}
    assert not heavy & set(out), heavy & set(out)
    assert [m for m in out if m.startswith("tuner")] == [
        "tuner",
        "tuner._errors",
        "tuner._protocol",
        "tuner.trial",
    ]


def test_the_controller_only_talks_to_its_coordination_in_contract_order(bare_campaign):
    """The coordination is injected, and the controller calls it as `Coordination`'s docstring
    says: state folder, storage, set-up under `setting_up`, `joined`, `recover` once, then
    `ask` per trial (None ends it) and `trial_ended` per told trial, `close` last."""
    import contextlib

    from tuner.coordination import Standalone

    calls: list[str] = []

    class Recording(Standalone):
        def campaign_dir(self) -> Any:
            calls.append("campaign_dir")
            return super().campaign_dir()

        def open_storage(self) -> Any:
            calls.append("open_storage")
            return super().open_storage()

        @contextlib.contextmanager
        def setting_up(self) -> Any:
            calls.append("setting_up")
            yield
            calls.append("set_up")

        def joined(self, study: Any) -> None:
            calls.append("joined")

        def recover(self, study: Any, orphans: Any, **kw: Any) -> None:
            calls.append(f"recover:{len(orphans)}")
            super().recover(study, orphans, **kw)

        def ask(self, study: Any, budget: int) -> Any:
            trial = super().ask(study, budget)
            calls.append("ask" if trial is not None else "ask:none")
            return trial

        def trial_ended(self, trial_id: int) -> None:
            calls.append("ended")

        def close(self) -> None:
            calls.append("close")
            super().close()

    ctl, rec, _ = _controller(
        bare_campaign,
        lambda spec: ([(0, {"loss": spec.params["x"]})], 0),
        coordination=Recording,
        budget={"trials": 3},
    )
    result = ctl.run()
    assert result.finished == 3 and len(rec.finished) == 3
    head = ["campaign_dir", "open_storage", "setting_up", "set_up", "joined", "recover:0"]
    assert calls[:6] == head and calls[-1] == "close"
    middle = calls[6:-1]
    assert middle.count("ask") == 3 and middle.count("ended") == 3 and "ask:none" in middle
    assert middle.index("ended") > middle.index("ask")


def test_rank_zero_is_read_from_the_launchers_variables_and_never_msruns_scheduler() -> None:
    from lineage._identity import launcher_rank
    from tuner._protocol import is_rank_zero

    cases = [
        ({}, True, None),
        ({"RANK": "0"}, True, 0),
        ({"RANK": "1", "RANK_ID": "0"}, False, 1),  # the first variable set wins
        ({"RANK_ID": "1", "MS_ROLE": "MS_WORKER"}, False, 1),
        ({"RANK_ID": "0", "MS_ROLE": "MS_SCHED"}, False, -1),  # msrun's scheduler process
        ({"OMPI_COMM_WORLD_RANK": "0"}, True, 0),
    ]
    for environ, zero, rank in cases:
        assert is_rank_zero(environ) is zero, environ
        assert launcher_rank(environ) == rank, environ


_OTHER_WORKER = """
import sys
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name=sys.argv[2], storage=sys.argv[1])
trial = study.ask()
trial.suggest_float("x", 0.0, 1.0)
study.tell(trial, 0.5)
"""


def test_progress_and_result_count_the_trials_another_process_finished(bare_campaign):
    """On a study shared with another process, the plain progress lines and the result
    count the study's finished trials, not only this controller's."""
    import io
    import subprocess
    import sys

    import optuna

    from tuner.campaign import Controller
    from tuner.campaign._progress import PlainObserver

    config = bare_campaign(budget={"trials": 4})
    url = config.optuna_storage_url()

    def fn(spec: Any) -> Any:
        if spec.number == 0:  # another controller finishes a trial of the study meanwhile
            done = subprocess.run(
                [sys.executable, "-c", _OTHER_WORKER, url, config.study_name], check=False
            )
            assert done.returncode == 0
        return [(0, {"loss": spec.params["x"]})], 0

    from tuner.executors._inprocess import InProcessExecutor

    lines = io.StringIO()
    result = Controller(
        config,
        # A plain storage (no single-writer cache): another process writes to this study.
        storage=optuna.storages.RDBStorage(url),
        executor=InProcessExecutor(fn, slots=1),
        recorder=_NullRecorder(),  # type: ignore[arg-type]
        observer=PlainObserver(lines),
        importance=False,
        handle_signals=False,
        poll_interval=0.0,
    ).run()
    assert result.finished == 4 and result.counts["COMPLETE"] == 4
    done = [
        int(line.split("/")[0][1:]) for line in lines.getvalue().splitlines() if line[:1] == "["
    ]
    assert len(done) == 4 and done[-1] == 4, lines.getvalue()
    assert all(n >= k for k, n in enumerate(done, 1)), lines.getvalue()
