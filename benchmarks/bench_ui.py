"""`lineage ui` against `mlflow server` on the same store: seconds from the command's start to
the first successful HTTP response of the UI (``GET /`` answering 200), side by side.

Both are started as fresh processes on the same SQLite lineage store (a store holding a
small campaign: ``--runs`` runs with params and metrics, made once under ``.bench/ui/``),
alternately, ``--repeat`` times each; the median of each and their ratio are printed. For
``lineage ui`` the time to the line printing its URL is also shown (what a user waits for).

Run: ``python benchmarks/bench_ui.py [--repeat 3] [--runs 50] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

ROOT = Path(__file__).resolve().parents[1]


def build(workdir: Path, runs: int) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"mlflow-{runs}.db"
    uri = f"sqlite:///{db}"
    if db.exists():
        return uri
    code = (
        "import sys, mlflow\n"
        "mlflow.set_tracking_uri(sys.argv[1])\n"
        "mlflow.set_experiment('bench-ui')\n"
        "for i in range(int(sys.argv[2])):\n"
        "    with mlflow.start_run(run_name=f'bench-ui-{i}'):\n"
        "        mlflow.log_params({'lr': 0.001 * (i + 1), 'batch_size': 16 * (1 + i % 4)})\n"
        "        for step in range(5):\n"
        "            mlflow.log_metric('loss', 1.0 / (i + step + 1), step=step)\n"
    )
    subprocess.run([sys.executable, "-c", code, uri, str(runs)], check=True, cwd=workdir)
    return uri


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status) == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def _time(argv: list[str], url: str, workdir: Path, watch_line: bool) -> tuple[float, float]:
    """(seconds to the first 200 on ``url``, seconds to a stdout line with the URL or nan)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=workdir,
        stdout=subprocess.PIPE if watch_line else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        while not _ok(url):
            if proc.poll() is not None:
                raise SystemExit(f"{argv[0:3]} exited with {proc.returncode}")
            time.sleep(0.05)
        answered = time.perf_counter() - start
        printed = float("nan")
        if watch_line and proc.stdout is not None:
            line = proc.stdout.readline()
            if "http://" in line:
                printed = time.perf_counter() - start
        return answered, printed
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    workdir = ROOT / ".bench" / "ui"
    uri = build(workdir, args.runs)
    art = (workdir / "mlruns").as_uri()
    bindir = Path(sys.executable).parent
    ui, server, printed = [], [], []
    for _ in range(args.repeat):
        port = _free_port()
        a, p = _time(
            [str(bindir / "lineage"), "ui", "--tracking-uri", uri, "--port", str(port)],
            f"http://127.0.0.1:{port}/",
            workdir,
            True,
        )
        ui.append(a)
        printed.append(p)
        port = _free_port()
        s, _ = _time(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--backend-store-uri",
                uri,
                "--default-artifact-root",
                art,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            f"http://127.0.0.1:{port}/",
            workdir,
            False,
        )
        server.append(s)
    result = {
        "lineage ui: first 200": statistics.median(ui),
        "lineage ui: URL printed": statistics.median(printed),
        "mlflow server: first 200": statistics.median(server),
    }
    ratio = result["lineage ui: first 200"] / result["mlflow server: first 200"]
    write_result(
        "ui",
        {"seconds": result, "lineage_ui_over_mlflow_server": round(ratio, 3)},
        store="sqlite",
        params={"runs": args.runs, "repeat": args.repeat},
    )
    if args.json:
        print(json.dumps({"seconds": result, "ratio": ratio, "runs": args.runs}, indent=2))
        return
    print(f"{args.runs} runs in a SQLite store, median of {args.repeat} fresh starts each")
    for name, secs in result.items():
        print(f"  {name:28s} {secs:6.2f} s")
    print(f"lineage ui / mlflow server (first 200): {ratio:.2f}")


if __name__ == "__main__":
    main()
