"""optuna-dashboard (``pip install optuna-dashboard``) serves a campaign's study from the
campaign's own storage URL: started as a user would, its API lists the study and its trials."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import optuna_dashboard  # noqa: F401  (in the dev extra: a missing one fails)

from tests.tuner.test_first_hour import TUNER, _env, _write


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return json.loads(resp.read())


def test_optuna_dashboard_serves_the_campaigns_study(tmp_path: Path) -> None:
    config = _write(tmp_path, trials=3)
    subprocess.run(
        [TUNER, "run", str(config), "-q"],
        cwd=tmp_path,
        env=_env(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    status = json.loads(
        subprocess.run(
            [TUNER, "status", str(config), "--format", "json"],
            cwd=tmp_path,
            env=_env(),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    storage = status["storage"]  # SQLite: no password to mask, the URL as given
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    exe = shutil.which("optuna-dashboard", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.Popen(
        [exe, storage, "--host", "127.0.0.1", "--port", str(port), "--quiet"],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        studies: object = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                studies = _get(f"http://127.0.0.1:{port}/api/studies")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.3)
        assert studies is not None, proc.stdout.read() if proc.stdout else ""
        assert isinstance(studies, dict)
        listed = studies["study_summaries"]
        (study,) = [s for s in listed if s["study_name"] == "firsthour"]
        detail = _get(f"http://127.0.0.1:{port}/api/studies/{study['study_id']}")
        assert isinstance(detail, dict)
        states = [t["state"] for t in detail["trials"]]
        assert states.count("Complete") == 3, states
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
