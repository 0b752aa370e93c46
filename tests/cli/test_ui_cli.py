"""``lineage ui`` starts a real MLflow server on the store, answers, and stops cleanly."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from _cli_helpers import PlainStore, lineage

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _read_url(proc: subprocess.Popen[bytes], timeout: float) -> str:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 4096)
            buf += chunk
            if b"\n" in buf:
                return buf.decode()
            if not chunk and proc.poll() is not None:
                raise AssertionError(f"lineage ui exited with {proc.returncode}: {buf!r}")
    raise AssertionError(f"no URL printed in {timeout} s: {buf!r}")


def test_ui_serves_the_same_store(plain_store: PlainStore) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage.cli", "ui", "--tracking-uri", plain_store.uri,
         "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        line = _read_url(proc, timeout=120)
        url = f"http://127.0.0.1:{port}"
        assert plain_store.uri in line
        # Every printed link opens MLflow 3's training-runs view, not its GenAI home.
        assert f"{url}/#/experiments?workflowType=machine_learning" in line
        while "/#/experiments/" not in line:  # then one link per recent experiment
            line += _read_url(proc, timeout=60)
        assert re.search(rf"{url}/#/experiments/\d+\?workflowType=machine_learning", line)
        with urllib.request.urlopen(url + "/", timeout=60) as resp:
            assert resp.status == 200 and b"<html" in resp.read().lower()
        req = urllib.request.Request(
            url + "/api/2.0/mlflow/runs/get?run_id=" + plain_store.ids["bench"], method="GET"
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            run = json.load(resp)["run"]
        assert run["info"]["run_name"] == "bench"
        # The port is taken now: a second ui on it is refused as bad input.
        second = lineage("ui", "--tracking-uri", plain_store.uri, "--port", str(port), check=False)
        assert second.returncode == 2 and "in use" in second.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
    assert rc == 0
    with socket.socket() as sock:  # the server went with it
        assert sock.connect_ex(("127.0.0.1", port)) != 0


def test_ui_refuses_a_tracking_server_uri() -> None:
    proc = lineage("ui", "--tracking-uri", "http://127.0.0.1:5000", check=False)
    assert proc.returncode == 2 and "already a tracking server" in proc.stderr
