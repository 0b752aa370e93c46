"""``lineage runs`` as a person sees it: in a real pseudo-terminal at 80, 120 and 200 columns,
and through a pipe. The store is a tuning campaign's, written the way ``tuner`` tags it: a
parent run (``lineage.run_type=campaign``, params ``space.<name>`` and ``target``) and trial
runs tagged ``tuner.campaign``, each with 40 fixed params, 6 metrics and a data column; the
framework logs the tuned ``lr`` and ``momentum`` again as ``optimizer.lr`` (in float32) and
``optimizer.momentum``; the last trial was pruned; an importance analysis run is the newest."""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pytest
from _cli_helpers import CACHE_DIR, lineage
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow

TUNED = ("lr", "momentum", "optimizer")
METRICS = ("val_accuracy", "loss", "train_loss", "epoch_time", "grad_norm", "lr_now")
ALIASES = ("optimizer.lr", "optimizer.momentum")
DATA = "data.train.images"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|\x1b")


@pytest.fixture(scope="module")
def campaign_store(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> str:
    import shutil

    base = tmp_path_factory.mktemp("campaign-store")
    shutil.copyfile(_sqlite_template, base / "mlflow.db")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("quickstart")
    parent = client.create_run(
        exp,
        run_name="quickstart",
        tags={"lineage.run_type": "campaign", "tuner.campaign": "quickstart"},
    ).info.run_id
    space = {f"space.{k}": json.dumps({"type": "float"}) for k in TUNED}
    client.log_batch(
        parent,
        params=[
            Param(k, v)
            for k, v in {**space, "target": "val_accuracy:max", "budget.trials": "8"}.items()
        ],
    )
    client.set_terminated(parent)
    for n in range(8):
        run = client.create_run(
            exp,
            run_name=f"quickstart-trial-{n}",
            tags={
                "lineage.run_type": "trial",
                "tuner.campaign": "quickstart",
                "mlflow.parentRunId": parent,
            },
        ).info.run_id
        params = {f"fixed_setting_{i:02d}": str(i) for i in range(40)}
        lr = 10 ** -(1 + n % 4) * (1 + n)
        params.update(
            lr=str(lr),
            momentum=str(0.8 + 0.02 * n),
            optimizer=["sgd", "adam"][n % 2],
        )
        params["optimizer.lr"] = repr(float(np.float32(lr)))
        params["optimizer.momentum"] = params["momentum"]
        pruned = n == 7
        client.log_batch(
            run,
            params=[Param(k, v) for k, v in params.items()],
            metrics=[Metric(k, 0.5 + 0.01 * n + i, 0, 1) for i, k in enumerate(METRICS)]
            + [Metric(DATA, 60000, 0, 0)],
            tags=[
                RunTag("tuner.trial_number", str(n)),
                RunTag("tuner.state", "PRUNED" if pruned else "COMPLETE"),
            ],
        )
        client.set_terminated(run, status="KILLED" if pruned else "FINISHED")
    analysis = client.create_run(
        exp, run_name="importance-val_accuracy", tags={"lineage.run_type": "analysis"}
    ).info.run_id
    client.log_batch(
        analysis,
        params=[Param("target", "val_accuracy"), Param("method", "auto")],
        metrics=[Metric("importance.lr", 0.6, 0, 0), Metric("n_runs", 7, 0, 0)],
    )
    client.set_terminated(analysis)
    return uri


def _every_key(uri: str) -> int:
    runs = json.loads(lineage("runs", "--tracking-uri", uri, "--format", "json").stdout)
    return len({k for r in runs for k in r["params"]}) + len(
        {k for r in runs for k in r["metrics"]}
    )


def _in_pty(uri: str, columns: int) -> str:
    """``lineage runs`` with stdout and stderr on a pseudo-terminal ``columns`` wide."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["LINEAGE_CACHE_DIR"] = CACHE_DIR
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage.cli", "runs", "--tracking-uri", uri],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, b"".join(chunks).decode()
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_a_terminal_shows_what_fits_and_says_what_is_left_out(
    campaign_store: str, columns: int
) -> None:
    out = _in_pty(campaign_store, columns)
    lines = out.rstrip("\n").split("\n")
    assert lines[0] == "10 runs"
    header, rows, note = lines[1], lines[2:-1], lines[-1]
    assert all(len(line) <= columns for line in lines), [len(x) for x in lines]
    titles = header.split()
    # What a person wants first: name, id, status, start, the target metric, the tuned params.
    assert titles[:5] == ["run", "name", "status", "start", "val_accuracy"]
    assert not any(t.startswith("fixed_setting") for t in titles)  # constant: never chosen
    assert DATA not in titles[:6]
    # One name per setting: the framework's copies of the tuned params are never chosen.
    assert not set(ALIASES) & set(titles)
    _trials_then_the_others(rows)
    # Long float spellings are shown with 6 significant digits, whole.
    if "momentum" in titles:
        assert " 0.82 " in out and "0.8200000000000001" not in out
    # What was left out, in one line: how many columns, and how to get them.
    match = re.match(
        r"^\+(\d+) columns( \(.*\))?: --columns to choose, --format json for all$", note
    )
    assert match, note
    shown = len([t for t in titles if t not in ("run", "name", "status", "start")])
    assert int(match.group(1)) == _every_key(campaign_store) - shown
    if columns >= 120:  # every tuned param, and more than the target metric
        assert set(TUNED) <= set(titles) and len(set(METRICS) & set(titles)) >= 2
    if columns == 200:
        assert set(METRICS) <= set(titles)
    assert not CONTROL.search(out.replace("\n", ""))


def _trials_then_the_others(rows: list[str]) -> None:
    """The 8 trials (the pruned one read as PRUNED), a line, the analysis and parent runs."""
    assert len(rows) == 11, rows
    assert rows[8] == "-- analysis and campaign runs --"
    assert all(r.split()[1].startswith("quickstart-trial-") for r in rows[:8])
    assert sorted(r.split()[1] for r in rows[9:]) == ["importance-val_accuracy", "quickstart"]
    status = {r.split()[1]: r.split()[2] for r in rows[:8]}
    assert status["quickstart-trial-7"] == "PRUNED"
    assert {status[f"quickstart-trial-{n}"] for n in range(7)} == {"FINISHED"}


def test_wider_terminals_show_more(campaign_store: str) -> None:
    counts = [len(_in_pty(campaign_store, c).split("\n")[1].split()) for c in (80, 120, 200)]
    assert counts[0] < counts[1] < counts[2], counts


def test_a_pipe_gets_plain_lines_and_every_chosen_column(campaign_store: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["LINEAGE_CACHE_DIR"] = CACHE_DIR
    proc = subprocess.run(
        [sys.executable, "-m", "lineage.cli", "runs", "--tracking-uri", campaign_store],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert not CONTROL.search(proc.stdout.replace("\n", ""))
    lines = proc.stdout.splitlines()
    titles = lines[1].split()
    # No terminal, no width to fit: the varying params and every metric, cells uncut.
    assert {"lr", "momentum", "optimizer", *METRICS} <= set(titles)
    assert titles[4] == "val_accuracy"
    assert not any(t.startswith("fixed_setting") for t in titles)
    assert not set(ALIASES) & set(titles)
    assert "…" not in proc.stdout
    # Left out: the 40 fixed params, the 2 aliases, the parent's 5 params and the analysis
    # run's param and 2 metrics (only training runs choose the columns).
    assert proc.stderr.startswith("+50 columns"), proc.stderr
    _trials_then_the_others(lines[2:])


def test_json_and_csv_keep_every_column(campaign_store: str) -> None:
    runs = json.loads(lineage("runs", "--tracking-uri", campaign_store, "--format", "json").stdout)
    trial = next(r for r in runs if r["run_name"] == "quickstart-trial-0")
    assert len(trial["params"]) == 45 and len(trial["metrics"]) == len(METRICS) + 1
    out = lineage("runs", "--tracking-uri", campaign_store, "--format", "csv").stdout
    header = next(csv.reader(io.StringIO(out)))
    assert len([h for h in header if h.startswith("params.")]) == 40 + 3 + 2 + 5 + 1
    assert len([h for h in header if h.startswith("metrics.")]) == len(METRICS) + 3


@pytest.mark.parametrize(
    "query",
    [
        (),  # rendered by the store itself
        ("-w", "params.optimizer like '%' or params.target like '%'"),  # read in Python
        ("-c", "run_name,status"),  # flat objects
    ],
)
def test_json_says_each_rows_kind(campaign_store: str, query: tuple[str, ...]) -> None:
    out = lineage("runs", "--tracking-uri", campaign_store, "--format", "json", *query).stdout
    kinds = {r["run_id"]: r["kind"] for r in json.loads(out)}
    names = {r.run_id: r.run_name for r in _runs(campaign_store)}
    by_name = {names[i]: k for i, k in kinds.items()}
    expected = {f"quickstart-trial-{n}": "trial" for n in range(8)}
    expected.update({"quickstart": "campaign", "importance-val_accuracy": "analysis"})
    assert by_name == expected


def _runs(uri: str) -> list[object]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("quickstart")
    return [r.info for r in client.search_runs([exp.experiment_id], max_results=100)]


def test_explicit_columns_are_shown_as_asked(campaign_store: str) -> None:
    out = lineage(
        "runs", "--tracking-uri", campaign_store, "-c", "run_name,params.fixed_setting_03",
        "-w", "params.optimizer = 'adam'",
    )  # fmt: skip
    lines = out.stdout.splitlines()
    assert lines[0] == "4 runs" and lines[1].split() == ["name", "fixed_setting_03"]
    assert out.stderr == ""
