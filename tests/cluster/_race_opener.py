"""The openers of a store for the race tests, each its own process: this launcher imports what
the openers need once, forks one child per opener, says all are ready, and each child waits
for the start signal, then opens the store the way its entry point does and exits with the
opener's own status, as a script would.

argv: WHERE OPENERS_JSON

``OPENERS_JSON`` is a list of ``[KIND, ARGS...]``:

- ``plain URI``: a script that only uses plain ``mlflow`` (a run with one metric);
- ``start_run URI``: ``lineage.start_run`` (a run with a param and a metric);
- ``lineage ARGS...``: the ``lineage`` command line, in this process;
- ``tuner ARGS...``: the ``tuner`` command line, in this process;
- ``optuna URL``: the tuner's Optuna storage and a study in it.

Child ``n`` writes its output to ``WHERE/opener-n.log``. The launcher creates ``WHERE/ready``
once every child is forked, the test creates ``WHERE/go`` to start them, and the launcher
writes each child's exit status to ``WHERE/exit-n`` as it ends.

Importing once and forking costs one import of MLflow instead of six, which on two cores is
most of a round; each opener is still a process of its own, with its own connections, that
first touches the store after the start signal. The imports come in stages, each kind forked
right after its own: a ``plain`` child has imported ``mlflow`` and nothing of this project.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

where, openers = Path(sys.argv[1]), json.loads(sys.argv[2])
go = where / "go"
children: dict[int, int] = {}  # pid -> opener index


def _fork(kind: str, run: Callable[[list[str]], int]) -> None:
    for n, (k, *args) in enumerate(openers):
        if k != kind:
            continue
        pid = os.fork()
        if pid:
            children[pid] = n
            continue
        # The child: its own output, its own random state, then the opener and its exit.
        log = os.open(where / f"opener-{n}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        random.seed()
        deadline = time.monotonic() + 600
        while not go.exists():  # the test creates it once the launcher is ready
            if time.monotonic() > deadline:
                raise SystemExit("no start signal")
            time.sleep(0.005)
        sys.exit(run(args))


def _plain(args: list[str]) -> int:
    mlflow.set_tracking_uri(args[0])
    with mlflow.start_run():
        mlflow.log_metric("m", 1.0)
    return 0


def _start_run(args: list[str]) -> int:
    with lineage.start_run(tracking_uri=args[0], params={"a": 1}) as run:
        run.log_metric("m", 1.0, step=0)
    return 0


def _optuna(args: list[str]) -> int:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(storage=create_rdb(args[0]), study_name="race", load_if_exists=True)
    return 0


unknown = {k for k, *_ in openers} - {"plain", "start_run", "lineage", "tuner", "optuna"}
if unknown:
    raise SystemExit(f"unknown opener {sorted(unknown)!r}")

import mlflow  # noqa: E402  (each stage imports what its openers need, then forks them)

_fork("plain", _plain)
import lineage  # noqa: E402

_fork("start_run", _start_run)
from lineage.cli import main as lineage_main  # noqa: E402

_fork("lineage", lineage_main)
from tuner.cli import main as tuner_main  # noqa: E402

_fork("tuner", tuner_main)
import optuna  # noqa: E402

from tuner.search import create_rdb  # noqa: E402

_fork("optuna", _optuna)

(where / "ready").touch()
while children:
    pid, status = os.wait()
    n = children.pop(pid)
    (where / f"exit-{n}").write_text(str(os.waitstatus_to_exitcode(status)))
