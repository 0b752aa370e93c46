"""Warm parents with real processes and real MindSpore: trials stay isolated, and stopping
or killing a warm trial works as for a cold one."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_executor_contract import drive

from tuner.executors import TrialSpec, make_slots
from tuner.executors._local import LocalExecutor
from tuner.executors._procs import identity, is_alive
from tuner.executors._warm import plan

TRIAL = str(Path(__file__).with_name("_warm_trial.py"))


def _spec(number: int, *args: str) -> TrialSpec:
    return TrialSpec(
        number=number, attempt=1, params={}, argv=[sys.executable, TRIAL, *args], grace_period=2
    )


@pytest.fixture
def warm(tmp_path: Path):
    executor = LocalExecutor(make_slots("cpu", "auto", 1, 1), run_dir=tmp_path, preload=True)
    yield executor
    executor.shutdown()


def test_the_plan_reads_the_framework_from_the_script() -> None:
    how, why = plan([sys.executable, "-u", TRIAL, "x"], None, True)
    assert why is None and how is not None
    assert {"mindspore", "numpy", "lineage"} <= set(how.modules)
    assert how.args == ("x",) and not how.module
    assert plan([sys.executable, TRIAL], None, False) == (None, None)
    _, why = plan(["/bin/echo", "hi"], None, True)
    assert why and "not the tuner's Python" in why
    _, why = plan([sys.executable, "-c", "pass"], None, True)
    assert why and "'-c'" in why


def test_a_trial_leaves_no_state_to_the_next(warm: LocalExecutor, tmp_path: Path) -> None:
    seen = []
    for number in range(2):
        out = tmp_path / f"seen{number}.json"
        (result,) = drive(warm, [warm.submit(_spec(number, str(out)))])
        assert result.outcome.exit_code == 0, result.outcome.stderr_tail
        seen.append(json.loads(out.read_text()))
    first, second = seen
    assert second["global"] == "clean" and second["module_attr"] is None
    assert second["env"] is None and second["context_mode"] == first["context_mode"]
    assert second["op"] == 3.0
    # Both were forked by the same warm parent, not started by this process.
    assert first["pid"] != second["pid"] and first["ppid"] == second["ppid"] != os.getpid()


def _wait_for(path: Path) -> dict:
    deadline = time.monotonic() + 60
    while not (path.exists() and path.stat().st_size):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return json.loads(path.read_text())


def test_a_warm_trial_shows_its_own_command_in_ps(warm: LocalExecutor, tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    handle = warm.submit(_spec(0, str(out), "--sleep", "60"))
    pid = _wait_for(out)["pid"]
    expected = f"{sys.executable} {TRIAL} {out} --sleep 60"
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip().decode()
    assert cmdline == expected
    ps = subprocess.run(
        ["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True
    )
    # This trial's lines (another test's trial may run the same script meanwhile): the
    # trial's own, and not its parent's, which shows its own command.
    found = [line.split(None, 1) for line in ps.stdout.splitlines() if f"{TRIAL} {out}" in line]
    assert [int(p) for p, _ in found] == [pid], ps.stdout
    handle.request_prune()
    drive(warm, [handle])


@pytest.mark.parametrize("how", ["prune", "timeout", "sigterm", "kill -9"])
def test_a_warm_trial_can_be_stopped(warm: LocalExecutor, tmp_path: Path, how: str) -> None:
    out = tmp_path / "seen.json"
    trial = _spec(0, str(out), "--sleep", "60")
    if how == "timeout":
        trial = dataclasses.replace(trial, timeout=15.0)
    handle = warm.submit(trial)
    pid = _wait_for(out)["pid"]
    assert handle.process_info()["pid"] == pid
    if how == "prune":
        handle.request_prune()
    elif how == "sigterm":
        os.killpg(pid, signal.SIGTERM)
    elif how == "kill -9":
        os.killpg(pid, signal.SIGKILL)
    (result,) = drive(warm, [handle])
    expected = signal.SIGKILL if how == "kill -9" else signal.SIGTERM
    assert result.outcome.signal == int(expected)
    assert result.outcome.timed_out == (how == "timeout")
    # The slot's warm parent serves the next trial.
    again = tmp_path / "again.json"
    (result,) = drive(warm, [warm.submit(_spec(1, str(again)))])
    assert result.outcome.exit_code == 0 and _wait_for(again)["ppid"] != os.getpid()


def test_a_command_it_cannot_see_starts_cold_with_one_line(
    warm: LocalExecutor, capfd: pytest.CaptureFixture[str]
) -> None:
    for number in range(2):
        trial = TrialSpec(number=number, attempt=1, params={}, argv=["true"], grace_period=1)
        (result,) = drive(warm, [warm.submit(trial)])
        assert result.outcome.exit_code == 0
    lines = [line for line in capfd.readouterr().err.splitlines() if "start cold" in line]
    assert len(lines) == 1 and "'true' is not the tuner's Python" in lines[0]


def _warm_parents() -> list[int]:
    """This process's warm parents (its children running the fork server)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"_forkserver_main" in cmdline:
            found.append(int(entry.name))
    return found


def test_warm_up_starts_the_parents_before_the_first_trial(
    warm: LocalExecutor, tmp_path: Path
) -> None:
    before = set(_warm_parents())
    warm.warm_up([sys.executable, TRIAL, "{out}"], None)  # placeholders left unfilled
    # Popen returns once the exec has begun; the new argv shows in /proc a moment later.
    deadline = time.monotonic() + 30
    while not (started := set(_warm_parents()) - before):
        assert time.monotonic() < deadline, "no warm parent started"
        time.sleep(0.02)
    (parent,) = started
    out = tmp_path / "seen.json"
    (result,) = drive(warm, [warm.submit(_spec(0, str(out)))])
    assert result.outcome.exit_code == 0 and json.loads(out.read_text())["ppid"] == parent


def test_planning_imports_nothing_of_the_script() -> None:
    code = (
        "import sys; from tuner.executors._warm import plan; "
        f"how, _ = plan([sys.executable, {TRIAL!r}], None, True); "
        "assert 'mindspore' in how.modules and 'mlflow.store.tracking.sqlalchemy_store' in "
        "how.modules; print(sorted({'mindspore', 'mlflow', 'sklearn'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_slots_alike_share_one_round_of_imports(tmp_path: Path) -> None:
    executor = LocalExecutor(make_slots("cpu", "auto", 1, 2), run_dir=tmp_path, preload=True)
    try:
        executor.warm_up([sys.executable, TRIAL, "{out}"], None)
        # One parent imports; the other slot's is forked from it once it is ready. (A process
        # just forked shows this one's command line until its exec: wait for the exec.)
        deadline = time.monotonic() + 120
        while not _warm_parents():
            assert time.monotonic() < deadline, "no warm parent started"
            time.sleep(0.05)
        assert len(_warm_parents()) == 1
        outs = [tmp_path / f"seen{n}.json" for n in range(2)]
        handles = [
            executor.submit(_spec(n, str(out), "--sleep", "2")) for n, out in enumerate(outs)
        ]
        results = drive(executor, handles)
        assert all(r.outcome.exit_code == 0 for r in results)
        first, second = (json.loads(out.read_text()) for out in outs)
        assert first["ppid"] != second["ppid"]  # one parent per slot, both warm
        assert second["global"] == "clean" and second["op"] == 3.0
        parents = [identity(first["ppid"]), identity(second["ppid"])]
        assert all(is_alive(p) for p in parents)
    finally:
        executor.shutdown()
    deadline = time.monotonic() + 120
    while any(is_alive(p) for p in parents):
        assert time.monotonic() < deadline, "a warm parent outlived its executor"
        time.sleep(0.1)


_THREADS = """import json, os, sys
import numpy, threadpoolctl
threads = [p["num_threads"] for p in threadpoolctl.threadpool_info()]
json.dump({"threads": threads, "ppid": os.getppid()}, open(sys.argv[1], "w"))
"""


def test_the_campaign_env_reaches_what_the_warm_parent_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from tuner.config import load_config
    from tuner.executors import default_executor

    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    # A numpy.py in the controller's working directory shadows nothing in the warm parent.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "numpy.py").write_text("raise ImportError('the shadow was imported')\n")
    script = tmp_path / "scripts" / "threads.py"
    script.parent.mkdir()
    script.write_text(_THREADS)
    config = {
        "name": "env-at-import",
        "command": [sys.executable, str(script), "{x}"],
        "target": {"metric": "v", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0, "high": 1}},
        "env": {"OMP_NUM_THREADS": "1"},
        "budget": {"trials": 1},
        "resources": {"kind": "cpu", "parallel": 1},
        "lineage": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    loaded = load_config(tmp_path / "c.yaml")
    executor = default_executor(
        loaded.executor,
        loaded.resources,
        tmp_path / "trials",
        command=loaded.command,
        workdir=loaded.workdir,
        env=loaded.env,
        preload=loaded.trial.preload,
    )
    out = tmp_path / "threads.json"
    try:
        trial = TrialSpec(
            number=0, attempt=1, params={}, argv=[sys.executable, str(script), str(out)],
            env={"OMP_NUM_THREADS": "1"}, grace_period=2,
        )  # fmt: skip
        (result,) = drive(executor, [executor.submit(trial)])
    finally:
        executor.shutdown()
    assert result.outcome.exit_code == 0, result.outcome.stderr_tail
    seen = json.loads(out.read_text())
    # Forked by a warm parent (not started cold by this process), with one thread.
    assert seen["ppid"] != os.getpid() and seen["threads"] == [1]


def test_a_warm_parent_whose_controller_is_gone_ends_quietly(tmp_path: Path) -> None:
    script = tmp_path / "nap.py"
    script.write_text("import time\ntime.sleep(1)\n")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    cmd = [sys.executable, "-P", "-m", "tuner.executors._forkserver_main"]
    cmd += [str(theirs.fileno()), "[]", str(tmp_path)]
    proc = subprocess.Popen(cmd, pass_fds=(theirs.fileno(),), stderr=subprocess.PIPE)
    theirs.close()
    assert json.loads(ours.recv(4096))["ready"]
    request = {"target": str(script), "module": False, "args": [], "cwd": str(tmp_path),
               "env": dict(os.environ)}  # fmt: skip
    with open(os.devnull, "wb") as sink:
        socket.send_fds(ours, [json.dumps(request).encode()], [sink.fileno(), sink.fileno()])
    assert json.loads(ours.recv(4096))["pid"]
    ours.close()  # the controller dies while its trial runs
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in err, err.decode()
