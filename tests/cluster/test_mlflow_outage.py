"""A real ``mlflow server`` stopped mid-recording and started again on the same address.

One server of this module's own (PostgreSQL backend, a fixed free port), one outage of a few
seconds, and everything that records across it, counted against what was sent:

- a training script attached to its run through ``MLFLOW_RUN_ID`` (as the tuner starts it),
  logging before, during and after the outage;
- a training script started while the server is down, creating its own run (spooled, created
  on delivery, found again by its ``lineage.spool_id`` tag);
- a training script killed with SIGKILL while the server is down: its journal is delivered
  by the next process (``lineage.recording.drain_spool``);
- the tuner controller's lineage writes (``LineageRecorder``): trial params, metrics, end
  tags and status written during the outage, and a trial run created while it is down
  (``reserve_run`` waits for the server).

A 60 s outage is measured by ``benchmarks/bench_outage.py`` (docs/guides/recording.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from _services import BIN, PG_BASE, free_port, pg_exec, stop_group

# Two server starts (tens of seconds each on a loaded 2-core machine) and the outage.
pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(900)]

SCRIPT = """
import signal, sys, time
import lineage

n, pause, mode = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
run = lineage.start_run(experiment="outage", record_identity=False, params={"lr": 0.1})
print(run.run_id, flush=True)
for i in range(n):
    run.log_metrics({"loss": 1.0 / (i + 1), "acc": i / n}, step=i)
    if i == n // 2:
        print("half", flush=True)
    time.sleep(pause)
run.flush()
print("logged", flush=True)
if mode == "hang":
    signal.pause()  # stays until the test kills it
run.end()
"""


@dataclass
class Server:
    backend: str
    workdir: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 240.0) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        argv = [
            str(BIN / "mlflow"), "server", "--backend-store-uri", self.backend,
            "--default-artifact-root", str(self.workdir / "artifacts"), "--host", "127.0.0.1",
            "--port", str(self.port), "--workers", "1",
        ]  # fmt: skip
        log = open(self.workdir / "server.log", "ab")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(
            argv, env=env, cwd=self.workdir, start_new_session=True, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.workdir / "server.log").read_text()[-2000:]
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"mlflow server did not answer /health in {timeout}s")

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)
            self.proc = None


@pytest.fixture(scope="module")
def server(
    _pg_template: str, _pg_databases: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    name = f"lt_outage_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}" TEMPLATE "{_pg_template}"')
    _pg_databases.append(name)
    srv = Server(f"{PG_BASE}/{name}", tmp_path_factory.mktemp("outage-server"), free_port())
    srv.start()
    yield srv
    srv.stop()


def _api(url: str, path: str, body: dict[str, object], method: str = "POST") -> dict:  # type: ignore[type-arg]
    full = f"{url}/api/2.0/mlflow/{path}"
    resp = (
        requests.get(full, params=body, timeout=60)
        if method == "GET"
        else requests.post(full, json=body, timeout=60)
    )
    resp.raise_for_status()
    return dict(resp.json())


def _history(url: str, run_id: str, key: str) -> list[tuple[int, float]]:
    got = _api(
        url,
        "metrics/get-history",
        {"run_id": run_id, "metric_key": key, "max_results": 100000},
        "GET",
    )
    return [(int(m["step"]), float(m["value"])) for m in got.get("metrics", [])]


def _run(url: str, run_id: str) -> dict:  # type: ignore[type-arg]
    return dict(_api(url, "runs/get", {"run_id": run_id}, "GET")["run"])


def _spawn(
    script: Path, env: dict[str, str], n: int, pause: float, mode: str = "end"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), str(n), str(pause), mode],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_in(thread: threading.Thread, function: str, timeout: float) -> None:
    """Until ``thread`` is inside ``function`` (it called it and has not returned)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident or -1)
        while frame is not None:
            if frame.f_code.co_name == function:
                return
            frame = frame.f_back
        assert thread.is_alive(), f"the thread ended without waiting in {function}"
        time.sleep(0.05)
    raise AssertionError(f"the thread did not reach {function} in {timeout}s")


def _read_until(proc: subprocess.Popen[str], word: str) -> list[str]:
    assert proc.stdout is not None
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, f"script ended before {word!r}: {proc.communicate()[1][-2000:]}"
        lines.append(line.strip())
        if line.strip() == word:
            return lines


def test_records_cross_an_outage_once(server: Server, tmp_path: Path) -> None:
    from lineage.recording import drain_spool
    from tuner.records import LineageRecorder

    url = server.url
    spool = tmp_path / "spool"
    script = tmp_path / "record.py"
    script.write_text(SCRIPT)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")},
        "MLFLOW_TRACKING_URI": url,
        "LINEAGE_SPOOL_DIR": str(spool),
        "LINEAGE_SPOOL_WAIT": "300",
    }
    os.environ["LINEAGE_SPOOL_DIR"] = str(spool)  # this process's recorder and drain
    try:
        # The controller: a campaign run and one trial run, created while the server is up.
        recorder = LineageRecorder(url, "outage", "camp")
        recorder.start(parent_run_id=None, params={"budget": 3}, tags={})
        trial = recorder.reserve_run()
        recorder.trial_started(
            trial, number=0, attempt=0, params={"x": 0.5}, argv=["train"], env={},
            device="cpu", sampler="tpe", started_at=time.time(),
        )  # fmt: skip
        exp_id = recorder.experiment_id
        assert exp_id is not None
        attached = _api(url, "runs/create", {"experiment_id": exp_id})["run"]["info"]["run_id"]
        a = _spawn(script, {**env, "MLFLOW_RUN_ID": attached}, 120, 0.1)
        _read_until(a, "half")

        server.stop()  # ---------------------------------------------------------- outage
        b = _spawn(script, env, 40, 0.0)  # creates its own run while the server is down
        c = _spawn(script, env, 30, 0.0, "hang")
        provisional_b = _read_until(b, "logged")[0]
        provisional_c = _read_until(c, "logged")[0]
        c.send_signal(signal.SIGKILL)
        c.wait()
        points = [("m", float(i), i, time.time()) for i in range(2500)]  # 3 requests' worth
        recorder.trial_metrics(trial, points)
        recorder.trial_finished(
            trial, status="FINISHED", tags={"tuner.state": "COMPLETE"}, output_tail=""
        )
        created: list[str] = []
        waiting = threading.Thread(target=lambda: created.append(recorder.reserve_run()))
        waiting.start()  # a new trial's run: waits for the server
        _wait_in(waiting, "create_run", timeout=120)
        assert not created
        server.start()  # ---------------------------------------------------- back again

        waiting.join(300)
        if not created:
            import faulthandler

            faulthandler.dump_traceback(sys.stderr)
        assert len(created) == 1
        recorder.release_run(created[0])
        assert a.wait(300) == 0, a.stderr.read() if a.stderr else ""
        assert b.wait(300) == 0, b.stderr.read() if b.stderr else ""
        a_err = a.stderr.read() if a.stderr else ""
        # The killed script's journal: delivered by the next process that found it (a script,
        # the recorder) or by this call, whichever came first.
        drain_spool(url, timeout=60)
        recorder.close("FINISHED")
    finally:
        os.environ.pop("LINEAGE_SPOOL_DIR", None)

    # One line when the server went away, one when its records were delivered.
    assert a_err.count("unreachable (") == 1 and a_err.count("is back;") == 1, a_err
    assert "Traceback" not in a_err
    # Every point once, in order, per key and per run.
    assert _history(url, attached, "loss") == [(i, 1.0 / (i + 1)) for i in range(120)]
    assert len(_history(url, attached, "acc")) == 120
    found = {}
    for provisional, n in ((provisional_b, 40), (provisional_c, 30)):
        runs = _api(
            url, "runs/search",
            {"experiment_ids": [exp_id], "filter": f"tags.`lineage.spool_id` = '{provisional}'"},
        ).get("runs", [])  # fmt: skip
        assert len(runs) == 1  # created once
        run_id = runs[0]["info"]["run_id"]
        found[provisional] = run_id
        assert _history(url, run_id, "loss") == [(i, 1.0 / (i + 1)) for i in range(n)]
        params = {p["key"]: p["value"] for p in _run(url, run_id)["data"]["params"]}
        assert params == {"lr": "0.1"}
    assert _run(url, found[provisional_b])["info"]["status"] == "FINISHED"
    assert _run(url, found[provisional_c])["info"]["status"] == "RUNNING"  # killed: nobody ended it
    trial_run = _run(url, trial)
    assert trial_run["info"]["status"] == "FINISHED"
    tags = {t["key"]: t["value"] for t in trial_run["data"]["tags"]}
    assert tags["tuner.state"] == "COMPLETE"
    assert _history(url, trial, "m") == [(i, float(i)) for i in range(2500)]
    assert _run(url, recorder.parent_run_id or "")["info"]["status"] == "FINISHED"
    assert not list(spool.rglob("*.jsonl"))  # all delivered, no journal left


def test_http_recording_keeps_every_point_once_in_order(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20,000 points across 4 keys, requests of 1,000 points, 4 in flight."""
    import lineage

    monkeypatch.setenv("LINEAGE_SPOOL_DIR", str(tmp_path / "spool"))

    with lineage.start_run(
        experiment="http-order", tracking_uri=server.url, record_identity=False
    ) as run:
        assert run._recorder.writer.kind == "mlflow-http+spool"
        for i in range(20_000):
            run.log_metric(f"m{i % 4}", i * 0.5, step=i)
        run.flush()
    for k in range(4):
        assert _history(server.url, run.run_id, f"m{k}") == [
            (i, i * 0.5) for i in range(k, 20_000, 4)
        ]
