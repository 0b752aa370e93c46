"""``lineage report`` on plain MLflow runs, single and multi-objective, in a real MLflow
SQLite store: the PNGs decode and are not blank, the page holds the plotly figures, ``--log``
records them as an analysis run, and bad input is one line with exit 2."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lineage.cli import main
from tests.report._report_helpers import check_png

pytestmark = pytest.mark.slow


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def single(_report_template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``lineage report --target loss --log --format json`` once, on a copy of the store."""
    base = tmp_path_factory.mktemp("report-single")
    shutil.copyfile(_report_template, base / "mlflow.db")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    code, out, err = _cli(
        "report", "-e", "hand", "--target", "loss", "--goal", "min", "-o", str(base / "out"),
        "--log", "--format", "json", "--tracking-uri", uri,
    )  # fmt: skip
    assert code == 0, err
    return {"uri": uri, "out": base / "out", "json": json.loads(out)}


def test_report_of_plain_runs_draws_every_view(single: dict[str, Any]) -> None:
    data = single["json"]
    out: Path = single["out"]
    names = sorted(Path(f).name for f in data["files"])
    assert names == sorted(
        ["history.png", "parallel.png", "contour.png", "slice.png", "intermediate.png",
         "report.html", "report.json"]
    )  # fmt: skip
    for view in data["views"]:
        check_png(out / view["png"])
    # The index in the folder names its files inside the folder, wherever it is moved to.
    index = json.loads((out / "report.json").read_text())
    assert index["directory"] == "." and sorted(index["files"]) == names
    assert all((out / f).is_file() for f in index["files"])
    # 14 finished runs with loss; the FAILED one and the one without loss are not complete.
    assert data["trials"] == {"COMPLETE": 14, "FAIL": 2}
    # The tuned-looking params are drawn; the constant batch_size is not.
    parallel = next(v for v in data["views"] if v["name"] == "parallel")
    assert "batch_size" not in parallel["title"]
    assert all(p in parallel["title"] for p in ("lr", "optimizer", "width"))
    assert "the 5 best in red" in parallel["caption"]  # --best's default


def test_report_page_holds_the_plotly_figures(single: dict[str, Any]) -> None:
    page = (single["out"] / "report.html").read_text(encoding="utf-8")
    assert page.count("Plotly.newPlot") == len(single["json"]["views"])
    assert page.count("plotly.js v") == 1  # plotly.js inlined once, no network needed
    assert "Optimization history of loss" in page and "best 5" in page


def test_report_log_records_an_analysis_run(single: dict[str, Any]) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=single["uri"])
    run = client.get_run(single["json"]["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.tags["lineage.run_type"] == "analysis"
    assert run.data.tags["lineage.analysis.kind"] == "report"
    assert "report/report.html" in run.data.tags["mlflow.note.content"]
    logged = {a.path for a in client.list_artifacts(run.info.run_id, "report")}
    assert {"report/report.html", "report/history.png", "report/parallel.png"} <= logged


def test_report_of_two_targets_draws_the_pareto_front(report_store: str, tmp_path: Path) -> None:
    code, out, err = _cli(
        "report", "-e", "hand", "--target", "loss", "cost", "--goal", "minimize",
        "-o", str(tmp_path / "mo"), "--tracking-uri", report_store,
    )  # fmt: skip
    assert code == 0, err
    written = {p.name for p in (tmp_path / "mo").iterdir()}
    assert {"pareto.png", "history-loss.png", "history-cost.png", "parallel-cost.png"} <= written
    assert "intermediate.png" not in written
    for name in written:
        if name.endswith(".png"):
            check_png(tmp_path / "mo" / name)
    assert "Pareto front of loss and cost" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-e", "nope", "--target", "loss"], "experiment 'nope' not found"),
        (["-e", "hand", "--target", "los"], "--target 'los' is not recorded by any run of "
         "experiment 'hand' (metrics recorded: cost, loss); did you mean 'loss'?"),
        (["-e", "hand"], "--target is required: experiment 'hand' records no campaign target"),
        (["-e", "hand", "--target", "loss", "cost", "--goal", "min", "max", "min"],
         "--goal must be given once or once per target (2), got 3"),
        (["-e", "hand", "--target", "loss", "--params", "lrr"],
         "param 'lrr' is not recorded by any run of experiment 'hand'; did you mean 'lr'?"),
        (["-e", "hand", "--target", "loss", "--best", "0"], "--best must be an integer >= 1, got 0"),
        (["-e", "hand", "--target", "loss", "--where", "params.lr >"], "malformed --where"),
    ],
    ids=["experiment", "target", "no-target", "goals", "param", "best", "where"],
)  # fmt: skip
def test_report_bad_input_is_one_line_and_exit_2(
    report_store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
    message: str,
) -> None:  # fmt: skip
    out = tmp_path / "never"
    code = main(["report", *args, "-o", str(out), "--tracking-uri", report_store])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    assert message in lines[0], captured.err
    # One line; a malformed --where adds the expression with a caret under the fault.
    assert len(lines) == (3 if "--where" in message else 1), captured.err
    assert not out.exists()  # nothing half-written
