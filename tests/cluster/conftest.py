"""Session-wide real services for the cluster tests.

- ``ray_cluster``: ``ray start --head`` on 127.0.0.1 with 2 CPUs, 2 declared GPUs and 2 NPUs
  (declared resources: Ray sets ``CUDA_VISIBLE_DEVICES``/``ASCEND_RT_VISIBLE_DEVICES`` for
  them on a CPU-only machine), stopped at the end of the session.
- ``mlflow_server``: ``mlflow server`` backed by a fresh PostgreSQL database, with MLflow's
  basic-auth app (admin password below), artifacts in a temporary directory.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _services import (
    PG_BASE,
    MlflowServer,
    RayCluster,
    pg_exec,
    start_mlflow_server,
    start_ray,
)

ADMIN_PASSWORD = "cluster-tests-admin-pw"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    cluster = start_ray(num_cpus=2, num_gpus=2, resources='{"NPU": 2}')
    yield cluster
    import ray

    if ray.is_initialized():
        ray.shutdown()
    cluster.stop()


@pytest.fixture
def ray_address(ray_cluster: RayCluster) -> Iterator[str]:
    """The cluster's address; this test's driver connection is closed afterwards."""
    yield ray_cluster.address
    import ray

    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="session")
def mlflow_server(
    tmp_path_factory: pytest.TempPathFactory, _pg_databases: list[str]
) -> Iterator[MlflowServer]:
    name = f"lt_srv_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}"')
    _pg_databases.append(name)
    server = start_mlflow_server(
        f"{PG_BASE}/{name}",
        tmp_path_factory.mktemp("mlflow-server"),
        auth_admin_password=ADMIN_PASSWORD,
    )
    yield server
    server.stop()


@pytest.fixture
def mlflow_credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    creds = {"MLFLOW_TRACKING_USERNAME": "admin", "MLFLOW_TRACKING_PASSWORD": ADMIN_PASSWORD}
    for key, value in creds.items():
        monkeypatch.setenv(key, value)
    return creds


@pytest.fixture
def pg_storage(_pg_databases: list[str]) -> str:
    """A fresh, empty PostgreSQL database for an Optuna study."""
    name = f"lt_optuna_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}"')
    _pg_databases.append(name)
    return f"{PG_BASE}/{name}"
