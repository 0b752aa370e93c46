"""The MLflow UI links open where the answer is, checked in a real browser (Debian's
``chromium``, headless, driven by Playwright): ``lineage ui`` serves a campaign's store, the
trials link shows the trials themselves, best first, with the target and the tuned
parameters as columns, on the first screen; the compare link opens MLflow's plots of them."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli_helpers import lineage
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from lineage.query import ui_links
from lineage.store import open_store
from lineage.uri import trials_view, ui_link

pytestmark = pytest.mark.slow

VIEWPORT = {"width": 1400, "height": 900}
#: val_accuracy of the 16 trials: distinct, three decimals (as the UI prints them).
SCORES = [round(0.5 + 0.029 * ((n * 7) % 16), 3) for n in range(16)]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> dict[str, str]:
    """A campaign's store as the tuner writes it: a parent run, 16 trial runs under it
    (30 constant params each beside the tuned ``lr`` and ``optimizer``), and on the
    experiment the tags the campaign records: the trials view (`trials_view`), its target
    and its tuned parameters."""
    base = tmp_path_factory.mktemp("ui-browser")
    shutil.copyfile(_sqlite_template, base / "mlflow.db")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment(
        "quickstart",
        artifact_location=(base / "artifacts").as_uri(),
        tags={"mlflow.experimentKind": "custom_model_development"},
    )
    parent = client.create_run(
        exp,
        run_name="quickstart",
        tags={"lineage.run_type": "campaign", "tuner.campaign": "quickstart"},
    ).info.run_id
    client.set_terminated(parent)
    for n, score in enumerate(SCORES):
        run = client.create_run(
            exp,
            run_name=f"quickstart-{n}",
            tags={
                "lineage.run_type": "trial",
                "tuner.campaign": "quickstart",
                "mlflow.parentRunId": parent,
            },
        ).info.run_id
        params = [Param(f"fixed_{i:02d}", str(i)) for i in range(30)]
        params += [Param("lr", str(0.001 * (n + 1))), Param("optimizer", ["sgd", "adam"][n % 2])]
        metrics = [Metric("val_accuracy", score, 0, 1), Metric("epoch_time", 1.0 + n, 0, 1)]
        client.log_batch(run, params=params, metrics=metrics)
        client.set_terminated(run)
    key, view = trials_view(
        campaign="quickstart",
        targets=[("val_accuracy", "maximize")],
        tuned=["lr", "optimizer"],
        parent_run_id=parent,
    )
    client.set_experiment_tag(exp, key, view)
    client.set_experiment_tag(exp, "lineage.target", "val_accuracy:maximize")
    client.set_experiment_tag(exp, "lineage.tuned", "lr,optimizer")
    return {"uri": uri, "experiment_id": exp, "name": "quickstart", "parent": parent}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass
class Ui:
    base: str
    printed: str  # what `lineage ui` printed once the server answered


@pytest.fixture(scope="module")
def ui(campaign: dict[str, str]) -> Iterator[Ui]:
    """``lineage ui`` on the campaign's store, as a user starts it: its address and the
    links it printed (all at once, when the server answers)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage.cli", "ui", "--tracking-uri", campaign["uri"],
         "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    deadline, out = time.monotonic() + 180, b""
    try:
        while not (b"(compare): " in out and out.endswith(b"\n")):
            assert time.monotonic() < deadline, f"no compare link printed: {out!r}"
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536)
                assert chunk or proc.poll() is None, f"lineage ui exited: {out!r}"
                out += chunk
        yield Ui(f"http://127.0.0.1:{port}", out.decode())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    assert executable, "the browser tests need Debian's chromium (apt-get install chromium)"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def _links(campaign: dict[str, str], ui: Ui) -> dict[str, str]:
    """The links ``lineage ui`` printed for the campaign's experiment, by label: the first
    (``NAME: URL``) opens its trials, the next (``NAME (compare): URL``) compares them."""
    found = dict(
        re.findall(rf"^  {re.escape(campaign['name'])}(?: \((\w+)\))?: (\S+)$", ui.printed, re.M)
    )
    links = {label or "trials": url for label, url in found.items()}
    assert set(links) == {"trials", "compare"}, ui.printed
    with open_store(campaign["uri"]) as store:  # the same as the library's
        assert links == dict(ui_links(store, ui.base, campaign["experiment_id"]))
    return links


def test_the_trials_link_shows_the_best_trials_on_the_first_screen(
    campaign: dict[str, str], ui: Ui, browser: object, tmp_path: Path
) -> None:
    link = _links(campaign, ui)["trials"]
    assert "viewStateShareKey=" in link and "workflowType=machine_learning" in link
    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
    try:
        page.goto(link)
        best = sorted(SCORES, reverse=True)
        page.get_by_text(f"{best[0]}", exact=True).first.wait_for(timeout=120_000)
        page.screenshot(path=str(tmp_path / "trials.png"))
        # The best three trials' target values, in the goal's order, inside the first screen.
        boxes = [page.get_by_text(f"{v}", exact=True).first.bounding_box() for v in best[:3]]
        assert all(b is not None for b in boxes), boxes
        tops = [b["y"] for b in boxes if b is not None]
        assert tops == sorted(tops) and tops[-1] < VIEWPORT["height"], tops
        # The tuned parameters are columns; the trials are rows of their own, not hidden
        # under a collapsed campaign run.
        for title in ("val_accuracy", "lr", "optimizer"):
            box = page.get_by_role("columnheader", name=title).first.bounding_box()
            assert box is not None and box["x"] < VIEWPORT["width"], title
        text = page.inner_text("body")
        assert "16 matching runs" in text, text[-2000:]
        assert "quickstart-0" in text or "quickstart-" in text
    finally:
        page.close()


def test_the_compare_link_opens_mlflows_plots_of_the_trials(
    campaign: dict[str, str], ui: Ui, browser: object, tmp_path: Path
) -> None:
    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
    try:
        page.goto(_links(campaign, ui)["compare"])
        page.get_by_text("Comparing 16 Runs", exact=False).first.wait_for(timeout=120_000)
        for tab in ("Parallel Coordinates Plot", "Scatter Plot", "Contour Plot"):
            assert page.get_by_text(tab, exact=True).first.is_visible(), tab
        page.screenshot(path=str(tmp_path / "compare.png"))
    finally:
        page.close()


def test_the_figures_a_description_names_render_in_mlflows_artifact_viewer(
    campaign: dict[str, str], ui: Ui, browser: object, tmp_path: Path
) -> None:
    # A report recorded as an analysis run: its description names a picture per view and
    # the interactive page; MLflow's artifact viewer draws both.
    args = ["report", "-e", "quickstart", "--tracking-uri", campaign["uri"], "--log"]
    out = lineage(*args, "-o", str(tmp_path / "report"), "--format", "json")
    run_id = json.loads(out.stdout)["run_id"]
    note = MlflowClient(tracking_uri=campaign["uri"]).get_run(run_id).data.tags
    pictures = re.findall(r"`(report/[\w-]+\.png)`", note["mlflow.note.content"])
    assert len(pictures) >= 3 and "report/report.html" in note["mlflow.note.content"]
    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
    try:
        eid = campaign["experiment_id"]
        page.goto(ui_link(ui.base, experiment_id=eid, run_id=run_id, artifact=pictures[0]))
        page.wait_for_function(
            "() => [...document.images].some(i => i.complete && i.naturalWidth > 300)",
            timeout=120_000,
        )
        page.close()
        page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
        page.goto(ui_link(ui.base, experiment_id=eid, run_id=run_id, artifact="report/report.html"))
        # The page runs in a sandboxed frame (scripts allowed): its plotly figures draw.
        figure = page.frame_locator("iframe").locator(".main-svg").first
        figure.wait_for(timeout=120_000)
        box = figure.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 200, box
        page.screenshot(path=str(tmp_path / "artifact-viewer.png"))
    finally:
        page.close()
