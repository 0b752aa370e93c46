"""``lineage runs`` as a person sees it: in a real pseudo-terminal at 80, 120 and 200 columns,
and through a pipe. The store is a tuning campaign's, written the way ``tuner`` tags it: a
parent run (``lineage.run_type=campaign``, params ``space.<name>`` and ``target``) and trial
runs tagged ``tuner.campaign``, each with 40 fixed params and 6 metrics."""

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
        lr = str(10 ** -(1 + n % 4) * (1 + n))
        params["optimizer.lr"] = lr  # what a framework callback records beside the script's
        params.update(
            lr=lr,
            momentum=str(0.8 + 0.02 * n),
            optimizer=["sgd", "adam"][n % 2],
        )
        client.log_batch(
            run,
            params=[Param(k, v) for k, v in params.items()],
            metrics=[Metric(k, 0.5 + 0.01 * n + i, 0, 1) for i, k in enumerate(METRICS)],
            tags=[RunTag("tuner.trial_number", str(n))]
            + ([RunTag("tuner.state", "PRUNED")] if n == 6 else []),
        )
        client.set_terminated(run, status="KILLED" if n == 6 else "FINISHED")
    return uri


def _in_pty(uri: str, columns: int, *query: str) -> str:
    """``lineage runs`` with stdout and stderr on a pseudo-terminal ``columns`` wide."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["LINEAGE_CACHE_DIR"] = CACHE_DIR
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage.cli", "runs", "--tracking-uri", uri, *query],
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
    assert lines[0] == "9 runs"
    header, rows, note = lines[1], lines[2:10], lines[-1]
    assert all(len(line) <= columns for line in lines), [len(x) for x in lines]
    # The trials first; the campaign's own run apart, under a heading of its own.
    assert lines[10:13] == ["", "1 campaign run:", lines[12]]
    assert lines[12].split()[1] == "quickstart"
    assert all(r.split()[1].startswith("quickstart-trial-") for r in rows)
    titles = header.split()
    # What a person wants first: id, name, the target metric, the tuned params; then the
    # status, and the start time where the tuned params leave room for it.
    assert [t for t in titles if t not in ("status", "start")][:3] == [
        "run",
        "name",
        "val_accuracy",
    ]
    assert titles.index("status") > titles.index("val_accuracy")
    assert ("start" in titles) == (columns >= 120)
    assert "lr" in titles and "optimizer.lr" not in titles  # one column per alias
    pruned = next(r for r in rows if r.split()[1] == "quickstart-trial-6")
    assert "PRUNED" in pruned.split() and "KILLED" not in pruned.split()  # not MLflow's
    assert not any(t.startswith("fixed_setting") for t in titles)  # constant: never chosen
    assert any(r.split()[1] == "quickstart-trial-7" for r in rows)
    # Long float spellings are shown with 6 significant digits, whole.
    if "momentum" in titles:
        assert " 0.82 " in out and "0.8200000000000001" not in out
    # What was left out, in one line: how many columns, and how to get them.
    match = re.match(
        r"^\+(\d+) columns( \(.*\))?: --columns to choose, --format json for all$", note
    )
    assert match, note
    every = 41 + len(TUNED) + 5 + len(METRICS)  # trial params, the parent's, metrics
    shown = len([t for t in titles if t not in ("run", "name", "status", "start")])
    assert int(match.group(1)) == every - shown
    if columns >= 120:  # every tuned param, and more than the target metric
        assert set(TUNED) <= set(titles) and len(set(METRICS) & set(titles)) >= 2
    if columns == 200:
        assert set(METRICS) <= set(titles)
    assert not CONTROL.search(out.replace("\n", ""))


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
    assert not any(t.startswith("fixed_setting") for t in titles)
    assert "…" not in proc.stdout
    # The 40 fixed params, the alias optimizer.lr and the parent's 5.
    assert proc.stderr.startswith("+46 columns")
    trial = next(line for line in lines if "quickstart-trial-3 " in line)
    assert "FINISHED" in trial.split()


def test_json_and_csv_keep_every_column(campaign_store: str) -> None:
    runs = json.loads(lineage("runs", "--tracking-uri", campaign_store, "--format", "json").stdout)
    trial = next(r for r in runs if r["run_name"] == "quickstart-trial-0")
    assert len(trial["params"]) == 44 and len(trial["metrics"]) == len(METRICS)
    assert trial["kind"] == "training"
    assert [r["kind"] for r in runs if r["run_name"] == "quickstart"] == ["campaign"]
    out = lineage("runs", "--tracking-uri", campaign_store, "--format", "csv").stdout
    header = next(csv.reader(io.StringIO(out)))
    assert len([h for h in header if h.startswith("params.")]) == 40 + 4 + 5
    assert len([h for h in header if h.startswith("metrics.")]) == len(METRICS)


def test_explicit_columns_are_shown_as_asked(campaign_store: str) -> None:
    out = lineage(
        "runs", "--tracking-uri", campaign_store, "-c", "run_name,params.fixed_setting_03",
        "-w", "params.optimizer = 'adam'",
    )  # fmt: skip
    lines = out.stdout.splitlines()
    assert lines[0] == "4 runs" and lines[1].split() == ["name", "fixed_setting_03"]
    assert out.stderr == ""


@pytest.fixture(scope="module")
def two_objective_store(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> str:
    """A two-objective campaign (accuracy up, latency down) whose trials also carry the
    framework's float32 copy of ``lr``, a dataset size logged as a metric by every run, and
    an importance analysis run that is the newest of all."""
    import shutil

    base = tmp_path_factory.mktemp("two-objective-store")
    shutil.copyfile(_sqlite_template, base / "mlflow.db")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("two-objectives")
    parent = client.create_run(
        exp, run_name="two-objectives", tags={"lineage.run_type": "campaign"}
    ).info.run_id
    client.log_batch(
        parent,
        params=[
            Param("space.lr", "{}"),
            Param("target", "val_accuracy:maximize"),
            Param("objectives", "val_accuracy:maximize,latency_ms:minimize"),
        ],
    )
    client.set_terminated(parent)
    for n in range(4):
        lr = 10.0 ** -(n + 1) * 3
        run = client.create_run(
            exp,
            run_name=f"two-objectives-{n}",
            tags={"lineage.run_type": "trial", "tuner.campaign": "two-objectives"},
        ).info.run_id
        client.log_batch(
            run,
            params=[Param("lr", str(lr)), Param("optimizer.lr", repr(float(np.float32(lr))))],
            metrics=[
                Metric("data.train.images", 60000, 0, 0),
                Metric("aaa_loss", 1.0 - 0.1 * n, 0, 1),
                Metric("latency_ms", 20.0 + n, 0, 1),
                Metric("val_accuracy", 0.5 + 0.1 * n, 0, 1),
            ],
        )
        client.set_terminated(run)
    analysis = client.create_run(
        exp, run_name="importance-val_accuracy", tags={"lineage.run_type": "analysis"}
    ).info.run_id
    client.log_batch(analysis, metrics=[Metric("importance.lr", 1.0, 0, 0)])
    client.set_terminated(analysis)
    return uri


def test_every_objective_leads_and_a_float32_copy_is_one_column(two_objective_store: str) -> None:
    lines = _in_pty(two_objective_store, 120).rstrip("\n").split("\n")
    titles = lines[1].split()
    assert titles[2:5] == ["val_accuracy", "latency_ms", "lr"], titles  # after run and name
    assert "optimizer.lr" not in titles
    # A metric every run holds at one value (a dataset's size) comes after those that vary.
    out = lineage("runs", "--tracking-uri", two_objective_store).stdout.splitlines()
    every = out[1].split()
    data = next(i for i, t in enumerate(every) if t.startswith("data.train"))
    assert every.index("aaa_loss") < data
    # The newest run is the analysis: it still comes after the trials, apart.
    assert out[6:8] == ["", "2 analysis and campaign runs:"]


@pytest.mark.parametrize(
    "query",
    [
        (),  # rendered by the store itself
        ("-w", "params.lr like '%' or status = 'FINISHED'"),  # read in Python
        ("-c", "run_name,status"),  # flat objects
    ],
)
def test_json_says_each_rows_kind(two_objective_store: str, query: tuple[str, ...]) -> None:
    out = lineage("runs", "--tracking-uri", two_objective_store, "--format", "json", *query)
    client = MlflowClient(tracking_uri=two_objective_store)
    exp = client.get_experiment_by_name("two-objectives")
    assert exp is not None
    names = {r.info.run_id: r.info.run_name for r in client.search_runs([exp.experiment_id])}
    kinds = {names[r["run_id"]]: r["kind"] for r in json.loads(out.stdout)}
    expected = {f"two-objectives-{n}": "training" for n in range(4)}
    expected.update({"two-objectives": "campaign", "importance-val_accuracy": "analysis"})
    assert kinds == expected


#: A training script as a framework callback records it: the tuned values, the callback's
#: own spellings of two of them (``optimizer.name`` capitalised, ``optimizer.lr``), a value
#: derived from one (``steps``), and the loss through plain MLflow, one metric per epoch.
CAMPAIGN_SCRIPT = """
import argparse, mlflow
ap = argparse.ArgumentParser()
ap.add_argument("--lr", type=float); ap.add_argument("--optimizer")
ap.add_argument("--batch", type=int); a = ap.parse_args()
with mlflow.start_run():
    mlflow.log_params({"optimizer.name": a.optimizer.capitalize(), "optimizer.lr": a.lr,
                       "steps": 1000 // a.batch, "dataset": "digits"})
    for step in range(3):
        mlflow.log_metric("val_loss", (a.lr - 0.02) ** 2 + 0.1 / (step + 1), step=step)
        mlflow.log_metric("epoch_time", 0.5 + a.batch / 1000, step=step)
"""


@pytest.fixture(scope="module")
def real_campaign_store(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> str:
    """The store a real campaign of 8 subprocess trials wrote, with its closing importance
    analysis: the runs ``lineage runs`` meets in practice."""
    import shutil

    import yaml

    from tuner.campaign import Controller
    from tuner.config import load_config

    base = tmp_path_factory.mktemp("real-campaign")
    shutil.copyfile(_sqlite_template, base / "mlflow.db")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    (base / "train.py").write_text(CAMPAIGN_SCRIPT)
    cmd = [sys.executable, "train.py", "--lr", "{lr}", "--optimizer", "{optimizer}"]
    config = {
        "name": "digits-search",
        "command": [*cmd, "--batch", "{batch}"],
        "target": {"metric": "val_loss", "goal": "minimize"},
        "parameters": {
            "lr": {"type": "float", "low": 1e-3, "high": 0.5, "log": True},
            "optimizer": {"type": "categorical", "choices": ["sgd", "adam"]},
            "batch": {"type": "int", "low": 16, "high": 128, "step": 16},
        },
        "budget": {"trials": 8},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 2},
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": uri},
    }
    (base / "campaign.yaml").write_text(yaml.safe_dump(config))
    result = Controller(load_config(base / "campaign.yaml"), handle_signals=False).run()
    assert result.counts["COMPLETE"] == 8, result.counts
    return uri


@pytest.mark.parametrize("columns", [80, 120])
def test_a_real_campaign_leads_with_its_target_and_most_important_params(
    real_campaign_store: str, columns: int
) -> None:
    lines = _in_pty(real_campaign_store, columns).rstrip("\n").split("\n")
    titles = lines[1].split()
    assert all(len(line) <= columns for line in lines), [len(x) for x in lines]
    # The target first, then the tuned params, the most important first (lr drives the
    # loss; the analysis run ranks it first), before anything the script derived.
    lead = [t for t in titles if t not in ("status", "start")]
    assert lead[:4] == ["run", "name", "val_loss", "lr"], titles
    if columns >= 120:
        assert {"lr", "optimizer", "batch"} <= set(titles), titles
    # One column per setting: the callback's spellings of lr and optimizer are aliases.
    assert "optimizer.lr" not in titles and "optimizer.name" not in titles, titles
    # The importance analysis and the campaign's run are listed apart, after the trials.
    heading = lines.index("2 analysis and campaign runs:")
    assert all(r.split()[1].startswith("digits-search-") for r in lines[2 : heading - 1])
    assert lines[heading - 1] == ""


def test_params_follow_an_importance_ranking_only_from_a_model_that_explains_the_runs() -> None:
    from lineage.query._layout import candidate_columns
    from lineage.store import RunRecord

    campaign = RunRecord(
        "c",
        "1",
        "e",
        "demo",
        "FINISHED",
        0,
        1,
        {"space.lr": "{}", "space.momentum": "{}", "target": "acc:maximize"},
        {},
        {"lineage.run_type": "campaign", "tuner.campaign": "demo"},
    )
    trials = [
        RunRecord(
            f"t{n}",
            "1",
            "e",
            f"demo-{n}",
            "FINISHED",
            n,
            n + 1,
            {"lr": str(0.01 * (n + 1)), "momentum": str(0.9 if n % 2 else 0.8)},
            {"acc": 0.5 + 0.01 * n},
            {"lineage.run_type": "trial", "tuner.campaign": "demo"},
        )
        for n in range(6)
    ]

    def analysis(r2: float) -> RunRecord:
        tags = {
            "lineage.run_type": "analysis",
            "lineage.analysis.kind": "importance",
            "lineage.analysis.target": "acc",
            "lineage.analysis.model": "random forest",
        }
        metrics = {"importance.momentum": 0.9, "importance.lr": 0.1, "r2.random_forest": r2}
        return RunRecord("a", "1", "e", "importance-acc", "FINISHED", 9, 10, {}, metrics, tags)

    def params(runs: list[RunRecord]) -> list[str]:
        return [f.key for f in candidate_columns(runs) if f.kind == "params"]

    # Ranked by a model that explains the runs: its order.
    assert params([campaign, *trials, analysis(0.6)]) == ["momentum", "lr"]
    # A model worse than the mean ranks nothing: the param taking more values first.
    assert params([campaign, *trials, analysis(-0.86)]) == ["lr", "momentum"]
    assert params([campaign, *trials]) == ["lr", "momentum"]


FILTERS = (
    (
        "--where",
        "status = 'FINISHED' and metrics.val_accuracy > 0.5",
        "--sort=-metrics.val_accuracy",
    ),
    ("--where", "params.optimizer = 'adam'"),
    ("--limit", "3"),
)


@pytest.mark.parametrize("query", FILTERS)
@pytest.mark.parametrize("columns", [80, 120])
def test_the_target_leads_whatever_the_filter_leaves_out(
    campaign_store: str, columns: int, query: tuple[str, ...]
) -> None:
    # A store written before campaigns tagged their experiment: the campaign run, filtered
    # out of the table, still names the target and the tuned parameters.
    lines = _in_pty(campaign_store, columns, *query).rstrip("\n").split("\n")
    titles = [t for t in lines[1].split() if t not in ("status", "start")]
    assert titles[:3] == ["run", "name", "val_accuracy"], lines
    assert titles[3] in TUNED, titles
    assert not any(line.split()[1:2] == ["quickstart"] for line in lines[2:]), lines


@pytest.mark.parametrize("columns", [80, 120])
def test_a_campaign_tags_its_experiment_with_its_target(
    real_campaign_store: str, columns: int
) -> None:
    exp = MlflowClient(tracking_uri=real_campaign_store).get_experiment_by_name("digits-search")
    assert exp.tags["lineage.target"] == "val_loss:minimize"
    assert sorted(exp.tags["lineage.tuned"].split(",")) == ["batch", "lr", "optimizer"]
    # The MLflow UI view the printed links open: the trials, lowest val_loss first.
    view = json.loads(exp.tags["mlflow.sharedViewState.lineage-trials"])
    assert view["orderByKey"] == "metrics.`val_loss`" and view["orderByAsc"] is True
    assert "tags.`lineage.run_type` = 'trial'" in view["searchFilter"]
    where = "status = 'FINISHED' and metrics.val_loss < 1e9"
    lines = _in_pty(
        real_campaign_store, columns, "--where", where, "--sort=metrics.val_loss"
    ).split("\n")
    titles = [t for t in lines[1].split() if t not in ("status", "start")]
    assert titles[:4] == ["run", "name", "val_loss", "lr"], lines
    at = lines[1].split().index("val_loss")  # before the start time (two words)
    losses = [float(line.split()[at]) for line in lines[2:10]]
    assert losses == sorted(losses) and len(losses) == 8
