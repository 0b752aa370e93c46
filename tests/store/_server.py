"""One real ``mlflow server`` for the store tests, over a PostgreSQL database."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


class Server:
    """``mlflow server`` on a free 127.0.0.1 port, launched at once, waited for on demand."""

    def __init__(self, backend_uri: str, workdir: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
        # No job runner (its huey consumers are six more processes to start): searches only.
        env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
        self.log = workdir / "server.log"
        argv = [
            str(Path(sys.executable).with_name("mlflow")), "server",
            "--backend-store-uri", backend_uri,
            "--default-artifact-root", str(workdir / "artifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        ]  # fmt: skip
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                argv, env=env, cwd=workdir, start_new_session=True, stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip

    def wait_ready(self, timeout: float = 240.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {self.log.read_text()[-2000:]}")
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp,
            ):
                if resp.status == 200:
                    return self.url
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer /health in {timeout} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
