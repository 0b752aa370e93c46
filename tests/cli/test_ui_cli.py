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
import urllib.error
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


def _read_links(proc: subprocess.Popen[bytes], links: int, timeout: float) -> str:
    """The output up to and including the ``links`` lines that hold a UI address."""
    text = ""
    while text.count("workflowType=machine_learning") < links:
        text += _read_url(proc, timeout)
    return text


def _load_pages(url: str) -> None:
    """What a browser asks for as it opens the UI and an experiment, 404s included (MLflow's
    frontend asks every server for the signed-in user, which a plain server does not have)."""
    pages = [
        "/",
        "/ajax-api/2.0/mlflow/users/current",
        "/ajax-api/2.0/mlflow/experiments/search?max_results=25",
        "/ajax-api/2.0/mlflow/experiments/get?experiment_id=0",
        "/static-files/missing.js",
    ]
    for page in pages * 3:
        try:
            with urllib.request.urlopen(url + page, timeout=60) as resp:
                resp.read()
        except urllib.error.HTTPError as exc:
            assert exc.code == 404, (page, exc.code)
    req = urllib.request.Request(
        url + "/ajax-api/2.0/mlflow/runs/search",
        data=json.dumps({"experiment_ids": ["0"], "max_results": 10}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200


@pytest.mark.parametrize("verbose", [False, True])
def test_ui_prints_its_links_last(plain_store: PlainStore, verbose: bool) -> None:
    """The links are the last lines, whatever the pages loaded: the server logs warnings
    only, and its access log only with --verbose."""
    from lineage.store import open_store

    links = 1 + min(5, len(open_store(plain_store.uri).experiments()))
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage.cli", "ui", "--tracking-uri", plain_store.uri,
         "--port", str(port), *(["--verbose"] if verbose else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, as on a terminal
    )  # fmt: skip
    try:
        before = _read_links(proc, links, timeout=120)
        _load_pages(f"http://127.0.0.1:{port}")
    finally:
        proc.send_signal(signal.SIGTERM)
        after, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    text = (before + after.decode()).strip()
    if verbose:
        assert "Uvicorn running" in text
        assert '"GET /ajax-api/2.0/mlflow/users/current HTTP/1.1" 404' in text
        return
    # Nothing before the links either: no start-up lines, no deprecation warning.
    assert text.splitlines()[0].startswith("MLflow UI for "), text
    assert text.endswith("workflowType=machine_learning"), text
    assert len(text.splitlines()) == links, text
