"""Screenshots of a finished campaign in the MLflow UI, taken with headless Chromium.

What a new user clicks through after the quickstart, checked in a real browser:

1. ``experiment.png``: the campaign's experiment; it must open on its runs (training view),
   not MLflow's GenAI traces view (the experiment tag ``mlflow.experimentKind`` is
   ``custom_model_development``);
2. ``campaign-run.png``: the campaign's parent run, whose description links the importance
   analysis run;
3. ``analysis-artifacts.png``: the analysis run's artifacts (the importance plots);
4. ``report-<view>.png``: each picture of the campaign report (``report/<view>.png`` in the
   analysis run: history, parallel coordinates, slice, intermediate values...) and
   ``report-page.png``, its interactive page (``report/report.html``), each opened through
   the MLflow UI's artifact view as the description's link opens it.

It runs a small campaign (10 sub-second trials, so that the closing importance analysis runs)
into a fresh SQLite lineage store, starts ``lineage ui`` on it, and calls
``chromium --headless --no-sandbox --screenshot=... --window-size=1400,900 URL`` for each page.
Open the PNGs and look at them. Exit 1 when a check fails (the experiment kind, a run missing,
a screenshot not written).

Run from the repository root: ``python scripts/ui_screenshots.py [--out DIR] [--store DIR]``
(default ``ui-screenshots/``, ignored by git). Needs Debian's ``chromium``; takes about a
minute, mostly `mlflow server`'s start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

TRIAL = """
import argparse
from tuner import trial
ap = argparse.ArgumentParser()
ap.add_argument("--lr", type=float); ap.add_argument("--width", type=int)
ap.add_argument("--optimizer"); a = ap.parse_args()
bonus = {"adam": 0.05, "sgd": 0.0, "momentum": 0.02}[a.optimizer]
for epoch in range(3):
    acc = 0.6 + 0.3 * (1 - abs(a.lr - 0.05) * 4) + bonus + 0.01 * epoch + a.width / 1e4
    trial.report(epoch, val_accuracy=acc, loss=1 - acc)
"""


def run_campaign(work: Path) -> str:
    """A finished 10-trial campaign in ``work``; returns the lineage store's URI."""
    (work / "train.py").write_text(textwrap.dedent(TRIAL))
    uri = f"sqlite:///{work / 'mlflow.db'}"
    config = {
        "name": "ui-check",
        "command": [
            sys.executable,
            "train.py",
            "--lr",
            "{lr}",
            "--width",
            "{width}",
            "--optimizer",
            "{optimizer}",
        ],
        "target": {"metric": "val_accuracy", "goal": "maximize"},
        "parameters": {
            "lr": {"type": "float", "low": 0.001, "high": 0.2, "log": True},
            "width": {"type": "int", "low": 16, "high": 128},
            "optimizer": {"type": "categorical", "choices": ["sgd", "momentum", "adam"]},
        },
        "budget": {"trials": 10},
        "sampler": {"name": "random", "seed": 1},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 2},
        "lineage": {"tracking_uri": uri},
    }
    path = work / "campaign.yaml"
    path.write_text(yaml.safe_dump(config))
    subprocess.run([str(BIN / "tuner"), "run", str(path)], cwd=work, check=True)
    return uri


def find_runs(uri: str) -> dict[str, str]:
    """Experiment id and kind, the campaign run id and the analysis run id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ui-check")
    if exp is None:
        raise SystemExit("no experiment 'ui-check' in the store")
    found = {"experiment": exp.experiment_id, "kind": exp.tags.get("mlflow.experimentKind", "")}
    for run in client.search_runs([exp.experiment_id], max_results=1000):
        kind = run.data.tags.get("lineage.run_type", "")
        if kind in ("campaign", "analysis") and kind not in found:
            found[kind] = run.info.run_id
            found[f"{kind}_description"] = run.data.tags.get("mlflow.note.content", "")
    return found


def report_pages(
    uri: str, exp: str, runs: dict[str, str], view: str, problems: list[str]
) -> dict[str, str]:
    """``report-<view>.png`` -> the UI page of each picture of the campaign report, and
    ``report-page.png`` -> its interactive page; a problem when the report is missing."""
    from mlflow.tracking import MlflowClient

    files = [
        a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(runs["analysis"], "report")
    ]
    pictures = sorted(p for p in files if p.endswith(".png"))
    if "report/report.html" not in files or not pictures:
        problems.append(f"the analysis run holds no campaign report (report/: {files})")
        return {}
    if "artifactPath/report/report.html" not in runs.get("campaign_description", ""):
        problems.append("the campaign run's description does not link the report")
    base = f"{exp}/runs/{runs['analysis']}/artifactPath"
    pages = {f"report-{Path(p).stem}.png": f"{base}/{p}{view}" for p in pictures}
    pages["report-page.png"] = f"{base}/report/report.html{view}"
    return pages


def start_ui(uri: str, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [str(BIN / "lineage"), "ui", "--tracking-uri", uri, "--port", str(port)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    threading.Thread(
        target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True
    ).start()  # type: ignore[union-attr]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if any("MLflow UI for" in line for line in list(lines)):
            return proc, f"http://127.0.0.1:{port}"
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    stop(proc)
    raise SystemExit("lineage ui did not print its URL")


def stop(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)


def screenshot(chromium: str, url: str, png: Path, profile: Path) -> None:
    png.unlink(missing_ok=True)
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            "--window-size=1400,900",
            # The UI is a single-page app: give its scripts and API calls time to render.
            "--virtual-time-budget=20000",
            url,
        ],
        check=False,
        capture_output=True,
        timeout=180,
    )
    if not png.exists() or png.stat().st_size < 5000:
        raise SystemExit(f"no screenshot of {url} was written to {png}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "ui-screenshots")
    ap.add_argument("--store", type=Path, help="work folder (default: a temporary one)")
    ap.add_argument(
        "--default-view",
        action="store_true",
        help="open the links as MLflow writes them (no ?workflowType=machine_learning)",
    )
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("ui_screenshots: chromium is not installed (apt-get install chromium)")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.store or Path(tempfile.mkdtemp(prefix="ui-check-"))
    work.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{work / 'mlflow.db'}"
    if not (work / "mlflow.db").exists():
        uri = run_campaign(work)
    runs = find_runs(uri)
    problems = []
    if runs["kind"] != "custom_model_development":
        problems.append(f"experiment tag mlflow.experimentKind is {runs['kind']!r}")
    for role in ("campaign", "analysis"):
        if role not in runs:
            problems.append(f"no {role} run (tag lineage.run_type={role})")
    if "analysis" in runs and runs["analysis"] not in runs.get("campaign_description", ""):
        problems.append("the campaign run's description does not link the analysis run")
    proc, url = start_ui(uri, work)
    # MLflow 3's UI picks its GenAI or its training view from the page's ``workflowType``
    # query parameter, else from the browser's stored choice, else GenAI: a fresh browser
    # profile (a new user) gets the default view of each link unless the link says otherwise.
    view = "" if args.default_view else "?workflowType=machine_learning"
    exp = f"{url}/#/experiments/{runs['experiment']}"
    pages = {"experiment.png": f"{exp}{view}"}
    if "campaign" in runs:
        pages["campaign-run.png"] = f"{exp}/runs/{runs['campaign']}{view}"
    if "analysis" in runs:
        pages["analysis-artifacts.png"] = f"{exp}/runs/{runs['analysis']}/artifacts{view}"
        pages.update(report_pages(uri, exp, runs, view, problems))
    try:
        with tempfile.TemporaryDirectory() as profile:
            for name, page in pages.items():
                screenshot(chromium, page, args.out / name, Path(profile))
                print(f"{args.out / name}  <- {page}")
    finally:
        stop(proc)
    (args.out / "runs.json").write_text(json.dumps(runs, indent=2))
    for line in problems:
        print(f"ui_screenshots: {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
