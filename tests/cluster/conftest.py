"""Session-wide real services for the cluster tests, launched side by side at the start.

- ``ray_cluster``: ``ray start --head`` on 127.0.0.1 with 2 CPUs, 2 declared GPUs and 2 NPUs
  (declared resources: Ray sets ``CUDA_VISIBLE_DEVICES``/``ASCEND_RT_VISIBLE_DEVICES`` for
  them on a CPU-only machine), stopped at the end of the session.
- ``mlflow_server``: ``mlflow server`` backed by a PostgreSQL database cloned from the
  session's migrated template, with MLflow's basic-auth app, artifacts in a temporary folder.

Both take tens of seconds to come up on two cores, so whichever the session needs is launched
once, at the first request, and waited for only when a test uses it.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _services import (
    ADMIN_PASSWORD,
    PG_BASE,
    MlflowServer,
    RayCluster,
    launch_mlflow_server,
    pg_exec,
    shared_ray,
    stop_shared_ray,
)


def _needed(request: pytest.FixtureRequest, name: str) -> bool:
    return any(name in getattr(item, "fixturenames", ()) for item in request.session.items)


@pytest.fixture(scope="session")
def _launched(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    services: dict[str, Any] = {}
    if _needed(request, "mlflow_server"):
        template = request.getfixturevalue("_pg_template")
        databases = request.getfixturevalue("_pg_databases")
        name = f"lt_srv_{uuid.uuid4().hex[:10]}"
        pg_exec(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        databases.append(name)
        services["mlflow"] = launch_mlflow_server(
            f"{PG_BASE}/{name}",
            tmp_path_factory.mktemp("mlflow-server"),
            auth_admin_password=ADMIN_PASSWORD,
        )
    patch = pytest.MonkeyPatch()
    if _needed(request, "ray_cluster") or _needed(request, "ray_address"):
        services["ray"] = shared_ray()  # the one cluster tests/executors uses too
        patch.setenv("RAY_AUTH_MODE", "disabled")  # this process is the clusters' driver
    yield services
    patch.undo()
    import ray

    if ray.is_initialized():
        ray.shutdown()
    services.pop("ray", None)
    stop_shared_ray()
    for service in services.values():
        service.stop()


@pytest.fixture(scope="session")
def ray_cluster(_launched: dict[str, Any]) -> RayCluster:
    cluster: RayCluster = _launched["ray"]
    return cluster.wait_ready()


@pytest.fixture
def ray_address(ray_cluster: RayCluster) -> Iterator[str]:
    """The cluster's address; this test's driver connection is closed afterwards."""
    yield ray_cluster.address
    import ray

    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="session")
def mlflow_server(_launched: dict[str, Any]) -> MlflowServer:
    server: MlflowServer = _launched["mlflow"]
    return server.wait_ready()


@pytest.fixture
def mlflow_credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    creds = {"MLFLOW_TRACKING_USERNAME": "admin", "MLFLOW_TRACKING_PASSWORD": ADMIN_PASSWORD}
    for key, value in creds.items():
        monkeypatch.setenv(key, value)
    return creds


@pytest.fixture
def pg_storage(_pg_databases: list[str]) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for an Optuna study, dropped when the test ends
    (with the idle pooled sessions this process keeps to it)."""
    name = f"lt_optuna_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}"')
    _pg_databases.append(name)
    yield f"{PG_BASE}/{name}"
    pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
