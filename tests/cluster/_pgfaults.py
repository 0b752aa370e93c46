"""PostgreSQL faults for one test database only (the server is shared: it is never stopped).

- `terminate`: ``pg_terminate_backend`` of every session on the database, as a server restart
  does to its clients;
- `refusing`: the database refuses new sessions for a while (``ALLOW_CONNECTIONS false``)
  and its sessions are terminated: an outage the clients must wait out;
- `sessions`: how many sessions the database holds now (``pg_stat_activity``).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from _services import PG_BASE

TRIAL = str(Path(__file__).with_name("_trial.py"))


def _admin() -> Any:
    import psycopg

    return psycopg.connect(f"{PG_BASE}/postgres", autocommit=True)


def database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def terminate(url: str) -> int:
    """End every session on the database of ``url``; returns how many were ended."""
    with _admin() as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (database(url),),
        ).fetchone()
    return int(row[0]) if row else 0


@contextlib.contextmanager
def refusing(url: str) -> Iterator[None]:
    """The database refuses every new session inside the block; its sessions are ended."""
    name = database(url)
    with _admin() as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    try:
        terminate(url)
        yield
    finally:
        with _admin() as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


def sessions(url: str) -> int:
    with _admin() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database(url),)
        ).fetchone()
    return int(row[0]) if row else 0


def campaign(
    tmp_path: Path,
    storage: str,
    tracking: str,
    *,
    trials: int,
    steps: int,
    sleep: float,
    name: str = "shared",
) -> Path:
    """A campaign of `_trial.py` trials that write ``seen/<number>-<pid>.json``."""
    out = tmp_path / "seen"
    out.mkdir(exist_ok=True)
    data: dict[str, Any] = {
        "name": name,
        "command": [sys.executable, TRIAL, str(steps), str(sleep), str(out)],
        "reads_tuner_params": True,
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": trials, "max_failures": 3},
        "trial": {"grace_period": 2},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "storage": storage,
        "lineage": {"tracking_uri": tracking, "experiment": f"{name}-{tmp_path.name}"},
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if predicate():
                return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
