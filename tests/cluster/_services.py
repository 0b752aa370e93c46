"""Real services for the cluster tests: a local Ray cluster and MLflow tracking servers.

Each is started as a child process in a session of its own and stopped by its process group
at the end (never ``ray stop``, which would stop every Ray cluster of this user).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
PG_BASE = "postgresql://postgres@127.0.0.1:5432"
ADMIN_PASSWORD = "cluster-tests-admin-pw"


def pg_exec(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_group(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process (it cleans up its children), then SIGKILL its whole group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@dataclass
class RayCluster:
    address: str
    temp_dir: str
    proc: subprocess.Popen[bytes]
    nodes: list[subprocess.Popen[bytes]]

    def wait_ready(self, timeout: float = 240.0) -> RayCluster:
        log = Path(self.temp_dir) / "head.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"ray start exited {self.proc.returncode}: {log.read_text()[-2000:]}"
                )
            if "Ray runtime started" in log.read_text(errors="replace"):
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"ray start did not come up in {timeout}s")

    def stop(self) -> None:
        for node in self.nodes:
            stop_group(node, grace=5)
        stop_group(self.proc)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def launch_ray(
    *, num_cpus: int = 2, num_gpus: int = 2, resources: str = '{"NPU": 2}'
) -> RayCluster:
    """``ray start --head --block`` on 127.0.0.1 with free ports, without waiting for it."""
    # Short path: Ray's unix socket paths must stay under ~107 characters.
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    port = free_port()
    argv = [
        str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
        f"--port={port}", f"--num-cpus={num_cpus}", f"--num-gpus={num_gpus}",
        "--resources", resources, "--include-dashboard=false", "--disable-usage-stats",
        f"--temp-dir={temp_dir}", f"--ray-client-server-port={free_port()}",
        f"--dashboard-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}",
        f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}",
        "--object-store-memory=200000000",
    ]  # fmt: skip
    log = open(Path(temp_dir) / "head.log", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        argv, env=ray_env(), start_new_session=True, stdout=log, stderr=subprocess.STDOUT
    )
    return RayCluster(f"127.0.0.1:{port}", temp_dir, proc, [])


def ray_env() -> dict[str, str]:
    """The environment of test clusters and their drivers. Ray >= 2.5x turns token auth on as
    soon as ``~/.ray/auth_token`` exists (any earlier local ``ray.init()`` writes it), and a
    driver then needs the token; a throwaway cluster on 127.0.0.1 goes without."""
    return {**os.environ, "RAY_AUTH_MODE": "disabled"}


def start_ray(**kwargs: Any) -> RayCluster:
    return launch_ray(**kwargs).wait_ready()


#: The test session's one shared Ray cluster (2 CPUs, 2 declared GPUs, 2 NPUs). Every
#: conftest that needs Ray (``tests/cluster``, ``tests/executors``) takes it from here, so a
#: session that runs both directories starts one cluster, not two. Import this module as
#: ``_services`` (``tests/cluster`` on ``sys.path``) so that the cache is one object.
_SHARED: dict[str, RayCluster] = {}


def shared_ray() -> RayCluster:
    """The session's Ray cluster, launched on the first call (not waited for)."""
    if "ray" not in _SHARED:
        _SHARED["ray"] = launch_ray(num_cpus=2, num_gpus=2, resources='{"NPU": 2}')
    return _SHARED["ray"]


def stop_shared_ray() -> None:
    """Stop the session's Ray cluster if one was launched (idempotent)."""
    cluster = _SHARED.pop("ray", None)
    if cluster is not None:
        cluster.stop()


@dataclass
class MlflowServer:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    #: Starts the same server on another free port (the port chosen was taken meanwhile).
    relaunch: Callable[[], MlflowServer] | None = None

    def wait_ready(self, timeout: float = 180.0) -> MlflowServer:
        """Wait for ``/health``; a server that lost its port to another process (Ray starts
        beside it and takes ports of its own) is started again on another one, in place."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.log.read_text(errors="replace")
                if "in use" in log and self.relaunch is not None:
                    again = self.relaunch()
                    self.url, self.proc, self.log = again.url, again.proc, again.log
                    continue
                raise RuntimeError(f"mlflow server exited {self.proc.returncode}: {log[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp:
                    if resp.status == 200 and resp.read().strip() == b"OK":
                        return self
            except (urllib.error.URLError, OSError, http.client.HTTPException):
                pass  # not up yet, or another process's port: its own exit says which
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer /health in {timeout}s")

    def stop(self) -> None:
        stop_group(self.proc)


def launch_mlflow_server(
    backend_uri: str,
    workdir: Path,
    *,
    auth_admin_password: str | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> MlflowServer:
    """``mlflow server`` on 127.0.0.1 (with ``auth_admin_password``: MLflow's basic-auth app),
    without waiting for it."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = dict(os.environ)
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        env.pop(var, None)
    argv: Sequence[str] = [
        str(BIN / "mlflow"), "server", "--backend-store-uri", backend_uri,
        "--default-artifact-root", str(workdir / "artifacts"), "--host", "127.0.0.1",
        "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    if auth_admin_password is not None:
        ini = workdir / "basic_auth.ini"
        # auth_cache_ttl_seconds: without it every request re-hashes the password
        # (PBKDF2, seconds on a busy 2-core machine).
        ini.write_text(
            "[mlflow]\ndefault_permission = READ\n"
            f"database_uri = sqlite:///{workdir / 'auth.db'}\n"
            "admin_username = admin\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
            "auth_cache_ttl_seconds = 600\n"
        )
        env.update(
            MLFLOW_AUTH_CONFIG_PATH=str(ini),
            MLFLOW_FLASK_SERVER_SECRET_KEY="tests-only-secret-key",
            MLFLOW_AUTH_ADMIN_PASSWORD=auth_admin_password,
        )
        argv = [*argv, "--app-name", "basic-auth"]
    env.update(extra_env or {})
    log = workdir / "server.log"
    out = open(log, "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        list(argv), env=env, cwd=workdir, start_new_session=True, stdout=out,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    return MlflowServer(
        f"http://127.0.0.1:{port}",
        proc,
        log,
        relaunch=lambda: launch_mlflow_server(
            backend_uri, workdir, auth_admin_password=auth_admin_password, extra_env=extra_env
        ),
    )
