"""``lineage ui``: the MLflow UI on the same store, on 127.0.0.1 by default."""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, TYPE_CHECKING, Any

from lineage._errors import LineageError, UsageError
from lineage.cli._common import add_common

if TYPE_CHECKING:
    import subprocess

ORDER = 90


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ui",
        help="start the MLflow UI on the same store and print its URL",
        description="Runs `mlflow server` on the tracking store (SQLite, PostgreSQL or file "
        "store) and prints the URL once it answers. Ctrl-C (or SIGTERM) stops it.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=5000, help="port (default: 5000)")
    parser.add_argument(
        "--artifact-root",
        default=None,
        metavar="URI",
        help="artifact root for experiments created from the UI (default: mlruns/ beside a "
        "SQLite file, else ./mlruns)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait for the server to answer (default: 120)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show the server's own messages: its start-up lines and one access-log line per "
        "request (default: only its warnings and errors, and its start-up lines when it fails "
        "to start)",
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def server_command(
    uri: str, host: str, port: int, artifact_root: str | None, *, verbose: bool = False
) -> list[str]:
    """The ``mlflow server`` command line for a tracking URI; unless ``verbose``, its web
    server logs warnings and errors only, without the access log."""
    from pathlib import Path

    from lineage.uri import is_sql_uri, masked, scheme, sqlite_path

    kind = scheme(uri)
    if kind in ("http", "https"):
        raise UsageError(
            f"--tracking-uri {masked(uri)} is already a tracking server: open it in a browser"
        )
    if artifact_root is None:
        base = Path.cwd()
        if kind == "sqlite":
            base = Path(sqlite_path(uri)).resolve().parent
        artifact_root = (base / "mlruns").as_uri()
    if not is_sql_uri(uri) and kind not in ("file", ""):
        raise UsageError(
            f"--tracking-uri must be a sqlite, postgresql or file store for lineage ui, "
            f"got {masked(uri)!r}"
        )
    return [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        uri,
        "--default-artifact-root",
        artifact_root,
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        "1",
        *([] if verbose else ["--uvicorn-opts", "--log-level warning --no-access-log"]),
    ]


def _server_env(verbose: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # an existing file store is still served
    # MLflow 3 starts a GenAI job runner beside the UI (about eight huey consumer processes,
    # each importing MLflow): nothing the training-runs view uses, and on a small machine it
    # doubles the wait for the first page. MLFLOW_SERVER_ENABLE_JOB_EXECUTION=true keeps it.
    env.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    if not verbose:
        env["MLFLOW_LOGGING_LEVEL"] = "WARNING"
        # The server's own imports warn of their libraries' deprecations: nothing a user acts on.
        warnings = [w for w in [env.get("PYTHONWARNINGS", "")] if w]
        env["PYTHONWARNINGS"] = ",".join([*warnings, "ignore::DeprecationWarning"])
    return env


class _Relay:
    """Copies the server's output to stderr: all of it with ``verbose``; else only what it
    says once the links are out (its warnings and errors), keeping the start-up lines to show
    if it fails to start."""

    def __init__(self, stream: IO[bytes], verbose: bool) -> None:
        import collections
        import threading

        self._stream = stream
        self._held: collections.deque[bytes] = collections.deque(maxlen=200)
        self._lock = threading.Lock()
        self._live = verbose
        self._thread = threading.Thread(target=self._copy, daemon=True, name="mlflow-server")
        self._thread.start()

    def _copy(self) -> None:
        for line in iter(self._stream.readline, b""):
            with self._lock:
                if not self._live:
                    self._held.append(line)
                    continue
            _write(line)

    def go_live(self) -> None:
        """From now on every line is shown (the start-up lines stay held back)."""
        with self._lock:
            self._live = True
            self._held.clear()

    def show_held(self) -> None:
        """Show what the server said so far (it failed: its own words say why)."""
        self._thread.join(timeout=5.0)
        with self._lock:
            for line in self._held:
                _write(line)
            self._held.clear()


def _write(line: bytes) -> None:
    sys.stderr.write(line.decode(errors="replace"))
    sys.stderr.flush()


def _port_free(host: str, port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    import signal
    import subprocess

    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _recent_links(uri: str, url: str, count: int = 5) -> list[str]:
    """A line per link of the last ``count`` experiments created, newest first, since
    MLflow's home page opens on its GenAI view rather than the training runs: a campaign's
    trials best first and their compare view, or an experiment's runs
    (`lineage.query.ui_links`)."""
    from lineage.query import ui_links
    from lineage.store import open_store

    try:
        store = open_store(uri)
        experiments = store.experiments()
        newest = sorted(experiments, key=lambda e: _id_order(e.experiment_id), reverse=True)
        lines = []
        for e in newest[:count]:
            for index, (label, link) in enumerate(ui_links(store, url, e.experiment_id)):
                lines.append(
                    f"  {e.name}: {link}" if index == 0 else f"  {e.name} ({label}): {link}"
                )
        return lines
    except LineageError:
        return []  # the server reports a store it cannot read itself


def _id_order(experiment_id: str) -> tuple[int, str]:
    return (int(experiment_id), "") if experiment_id.isdigit() else (0, experiment_id)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: every command module loads for each `lineage` call.
    import signal
    import subprocess
    import time

    from lineage.uri import masked, resolve_tracking_uri, ui_link

    uri = resolve_tracking_uri(args.tracking_uri)
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be in 1..65535, got {args.port}")
    cmd = server_command(uri, args.host, args.port, args.artifact_root, verbose=args.verbose)
    if not _port_free(args.host, args.port):
        raise UsageError(f"port {args.port} on {args.host} is in use: choose another with --port")
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{args.port}"
    recent = _recent_links(uri, url)
    stopping = False

    def on_term(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    proc = subprocess.Popen(
        cmd,
        env=_server_env(args.verbose),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    relay = _Relay(proc.stdout, args.verbose)
    try:
        deadline = time.monotonic() + args.timeout
        while not _answers(url):
            if proc.poll() is not None:
                relay.show_held()
                raise LineageError(
                    f"mlflow server exited with code {proc.returncode} before answering "
                    f"on {url} (see its messages above)"
                )
            if time.monotonic() > deadline:
                relay.show_held()
                raise LineageError(f"mlflow server did not answer on {url} in {args.timeout:g} s")
            time.sleep(0.05)  # the URL is printed within 50 ms of the first answer
        relay.go_live()
        print(
            f"MLflow UI for {masked(uri)} at {ui_link(url)}  (Ctrl-C to stop)",
            *recent,
            sep="\n",
            flush=True,
        )
        proc.wait()
        if proc.returncode != 0:
            raise LineageError(f"mlflow server exited with code {proc.returncode}")
        return 0
    except KeyboardInterrupt:
        if stopping:
            return 0
        raise
    finally:
        _stop(proc)
        signal.signal(signal.SIGTERM, previous)
