"""The README's tour, run as a reader runs it: its Python block, then every command line of
its console blocks, verbatim, in a fresh folder (the campaign's ``train.py``, which the README
only describes, is the one file this test writes itself).

Each command must exit 0; the checks on its output are the ones the README's prose makes."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

# The script the README's campaign runs: its hyperparameters on the command line, a report
# per epoch, as the README's sentence before the campaign file says.
TRAIN = """\
import argparse, math
from tuner import trial

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--optimizer", required=True)
args = parser.parse_args()
for epoch in range(1, 4):
    loss = (math.log10(args.lr) + 2) ** 2 / epoch + (0.05 if args.optimizer == "sgd" else 0.0)
    trial.report(epoch, loss=loss)
"""


def _blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced code block of the README."""
    return re.findall(r"^```([\w-]*)\n(.*?)^```", text, flags=re.S | re.M)


def _tour() -> tuple[str, str, list[list[str]]]:
    """The tour's Python block, its campaign file, and its command lines in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # The tour, and "Learn from what was recorded" after it.
    sections = text[text.index("## A 30-second tour") :].split("\n## ")
    tour = "\n## ".join(sections[:2])
    blocks = _blocks(tour)
    python = next(body for lang, body in blocks if lang == "python")
    campaign = next(body for lang, body in blocks if lang == "yaml")
    commands = [
        shlex.split(line[2:], comments=True)
        for lang, body in blocks
        if lang == "console"
        for line in body.splitlines()
        if line.startswith("$ ")
    ]
    return python, campaign, commands


def test_the_readme_tour_runs_verbatim(tmp_path: Path) -> None:
    python, campaign, commands = _tour()
    names = [argv[:2] for argv in commands]
    assert ["lineage", "runs"] in names and ["tuner", "run"] in names and ["tuner", "init"] in names

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    (tmp_path / "tour.py").write_text(python)
    (tmp_path / "campaign.yaml").write_text(campaign)
    (tmp_path / "train.py").write_text(TRAIN)

    def run(argv: list[str]) -> str:
        if argv[0] == "python":
            argv = [sys.executable, *argv[1:]]
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{shlex.join(argv)}: {done.stdout[-2000:]}{done.stderr}"
        return done.stdout + done.stderr

    run(["python", "tour.py"])
    outputs = {shlex.join(argv[:2]): run(argv) for argv in commands}

    # "Query them, and ask which hyperparameters matter"
    assert re.search(r"\blr\b", outputs["lineage runs"])
    rows = re.findall(r"^│\s*([\d-]+)\s*│\s*(\w+)", outputs["lineage importance"], flags=re.M)
    assert rows and rows[0][1] == "lr", outputs["lineage importance"]  # lr ranks first
    # the campaign ran its budget, and every trial is an MLflow run
    assert "12/12" in outputs["tuner run"]
    # tuner init wrote a campaign from history
    assert (tmp_path / "next.yaml").is_file()
    assert "warm_start" in (tmp_path / "next.yaml").read_text()
