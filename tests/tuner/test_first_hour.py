"""The first hour as a user meets it: `tuner run` through a pipe and in a pseudo-terminal,
Ctrl-C then `tuner status`, a campaign run inside a git clone, and what `tuner status` loads."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
TUNER = str(Path(sys.executable).parent / "tuner")

SCRIPT = """
import argparse, os, pathlib, time
from tuner import trial
pathlib.Path(f"started-{os.getpid()}").touch()
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float)
ap.add_argument("--sleep", type=float, default=0.0); a = ap.parse_args()
for step in range(2):
    time.sleep(a.sleep)
    trial.report(step, loss=(a.x - 0.3) ** 2 + 0.1 / (step + 1))
"""


def _write(tmp: Path, *, trials: int = 3, sleep: float = 0.0, parallel: int = 1, **over) -> Path:
    (tmp / "trial.py").write_text(textwrap.dedent(SCRIPT))
    data = {
        "name": "firsthour",
        "command": [sys.executable, "trial.py", "--x", "{x}", "--sleep", str(sleep)],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": trials, "max_failures": 5},
        "trial": {"grace_period": 2},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": parallel},
        "diagnosis": {"early_stop": False},
        **over,
    }
    path = tmp / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def piped_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """A 3-trial campaign run through a pipe, as ``tuner run ... 2>&1 | tee log`` runs it:
    its config (the study is beside it), the exit code and what it printed. The tests that
    only read the finished study share it."""
    folder = tmp_path_factory.mktemp("piped")
    config = _write(folder, trials=3)
    proc = subprocess.run(
        [TUNER, "run", str(config)],
        cwd=folder,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    return config, proc.returncode, proc.stdout


def test_piped_run_prints_one_plain_line_per_trial_and_the_summary_on_its_own(
    piped_run: tuple[Path, int, str],
) -> None:
    # `tuner run ... 2>&1 | tee log`: both streams into one pipe.
    _, returncode, out = piped_run
    assert returncode == 0, out
    assert "\x1b" not in out and "\r" not in out, repr(out)
    assert not any(ord(c) < 32 and c != "\n" for c in out), repr(out)
    lines = out.splitlines()
    for number in range(3):
        (line,) = [ln for ln in lines if re.match(rf"^\[\d/3\] trial {number} COMPLETE ", ln)]
        assert re.search(r" loss=[0-9.e-]+ [0-9.]+s x=[0-9.e-]+$", line), line
    summary = [ln for ln in lines if "3/3 trials" in ln]
    assert len(summary) == 1 and summary[0].startswith("campaign 'firsthour': 3/3 trials"), lines
    # The trial lines come before the summary, as they happened.
    assert lines.index(summary[0]) > max(i for i, ln in enumerate(lines) if ln.startswith("["))


@pytest.mark.parametrize("columns", [80, 120])
def test_run_in_a_terminal_keeps_the_live_view_and_ends_the_summary_on_its_own_line(
    tmp_path: Path, columns: int
) -> None:
    import fcntl
    import struct
    import termios

    config = _write(tmp_path, trials=2)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [TUNER, "run", str(config)],
        cwd=tmp_path,
        env=_env(TERM="xterm-256color", COLUMNS=str(columns), LINES="40"),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=60) == 0
    raw = b"".join(chunks).decode("utf-8", "replace")
    # The live view draws with escapes; the plain per-trial lines are not printed.
    assert "\x1b[" in raw
    assert "one line per finished trial" not in raw
    text = ANSI.sub("", raw).replace("\r\n", "\n")
    lines = [ln.split("\r")[-1] for ln in text.split("\n")]
    summary = [ln for ln in lines if "2/2 trials (COMPLETE" in ln]
    assert summary and summary[-1].startswith("campaign 'firsthour': 2/2 trials"), lines[-8:]
    assert all(len(ln) <= columns for ln in lines if "━" in ln or "firsthour" in ln[:12])


def test_ctrl_c_says_how_to_continue_and_status_shows_superseded_apart(tmp_path: Path) -> None:
    config = _write(tmp_path, trials=6, sleep=1.5, parallel=2)
    proc = subprocess.Popen(
        [TUNER, "run", str(config)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    # Wait until a first trial has finished, so that two trials are mid-flight later.
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if re.match(r"^\[\d/6\] trial \d+ COMPLETE", line):
            break
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("started-*"))) < 3:  # the third trial has started as well
        assert time.monotonic() < deadline, "a third trial did not start"
        time.sleep(0.05)
    # Ctrl-C in a terminal reaches the whole foreground process group.
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (lines, out, err)
    assert err.strip().splitlines()[-1] == (
        f"tuner run: interrupted; continue with: tuner resume {config}"
    ), err
    status = subprocess.run(
        [TUNER, "status", str(config), "--format", "json"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    trials = data["trials"]
    assert trials["SUPERSEDED"] >= 1, data
    assert trials["FAIL"] == 0, data  # an interrupted attempt is not a failure
    # Each re-queued with its params (a trial asked for but not started waits too).
    assert trials["WAITING"] >= trials["SUPERSEDED"], data
    assert data["finished"]["FAIL"] == 0 and data["budget"]["finished"] >= 1
    table = subprocess.run(
        [TUNER, "status", str(config)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"superseded {trials['SUPERSEDED']}" in table.stdout, table.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_campaign_run_in_a_git_clone_leaves_git_status_clean(
    tmp_path: Path, repo_root: Path
) -> None:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo_root}", str(clone)], check=True
    )
    # The clone's .gitignore is the committed one: what a user gets.
    outside = tmp_path / "outside"
    outside.mkdir()
    config = _write(outside, trials=2)
    # The config sits outside the clone; the user runs from the clone's root, as the
    # quickstart says, so the default stores (mlflow.db, optuna.db beside it, the study lock,
    # the campaign folder) are made there.
    data = yaml.safe_load(config.read_text())
    data["command"][1] = str(outside / "trial.py")
    config.write_text(yaml.safe_dump(data))
    proc = subprocess.run(
        [TUNER, "run", str(config)],
        cwd=clone,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    made = {p.name for p in clone.iterdir()}
    assert {"mlflow.db", "optuna.db"} <= made, made
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == "", status.stdout


def test_tuner_status_reads_the_study_without_optuna_sqlalchemy_or_mlflow(
    piped_run: tuple[Path, int, str],
) -> None:
    # The finished study of the piped run (3 trials), read where that run wrote it.
    config, returncode, out = piped_run
    assert returncode == 0, out
    # What the whole command loads, and what reading the study adds after the config.
    code = (
        "import sys, json, contextlib, io\n"
        "from tuner.cli import main\n"
        "from tuner.status import collect\n"
        "from tuner.config import load_config\n"
        "config = load_config(sys.argv[1], check_options=False)\n"
        "before = set(sys.modules)\n"
        "status = collect(config)\n"
        "added = sorted({m.split('.')[0] for m in set(sys.modules) - before})\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    rc = main(['status', sys.argv[1], '--format', 'json'])\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules})\n"
        "print(json.dumps({'rc': rc, 'status': json.loads(buf.getvalue()), 'added': added,"
        " 'loaded': loaded}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(config)],
        cwd=config.parent,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["rc"] == 0 and result["status"]["budget"]["finished"] == 3
    assert result["status"]["trials"]["COMPLETE"] == 3
    assert result["status"]["best"]["number"] in (0, 1, 2)
    for heavy in ("mlflow", "optuna", "sqlalchemy", "pandas", "rich", "numpy"):
        assert heavy not in result["added"], (heavy, result["added"])
    # The whole command: its config check skips Optuna's option signatures (read-only).
    for heavy in ("mlflow", "optuna", "sqlalchemy", "pandas", "rich"):
        assert heavy not in result["loaded"], heavy


def test_tuner_status_agrees_with_optuna(tmp_path: Path) -> None:
    """The SQL reader's counts and best trial are Optuna's, on a study with every state."""
    import optuna

    from tuner.config import load_config
    from tuner.status import collect

    config_path = _write(tmp_path, trials=2)
    config = load_config(config_path)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=config.study_name, storage=config.optuna_storage_url(), direction="minimize"
    )
    dist = {
        "x": optuna.distributions.FloatDistribution(0.0, 1.0),
        "opt": optuna.distributions.CategoricalDistribution(["sgd", "adam"]),
        "n": optuna.distributions.IntDistribution(1, 8),
    }
    for i in range(12):
        trial = study.ask(dist)
        if i % 4 == 1:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        elif i % 4 == 2:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        elif i % 4 == 3 and i < 11:
            study.tell(trial, float("inf"))
        elif i < 11:
            study.tell(trial, trial.params["x"] + trial.params["n"])
    status = collect(config)
    states = {s.name: 0 for s in optuna.trial.TrialState}
    for t in study.trials:
        states[t.state.name] += 1
    assert status["trials"]["COMPLETE"] == states["COMPLETE"]
    assert status["trials"]["PRUNED"] == states["PRUNED"]
    assert status["trials"]["FAIL"] == states["FAIL"]
    assert status["trials"]["RUNNING"] == states["RUNNING"] == 1
    best = study.best_trial
    assert status["best"] == {"number": best.number, "value": best.value, "params": best.params}
    (running,) = status["running"]
    assert running["params"] == study.trials[-1].params
