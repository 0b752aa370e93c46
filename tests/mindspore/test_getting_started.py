"""The getting-started page, run as a reader runs it: the quickstart's own command in a fresh
folder laid out like a clone (its config, the example it trains), then every `lineage` and
`tuner` command line of the page, verbatim (``RUN_A RUN_B`` become two of the trials' runs;
``lineage ui`` serves until stopped, and its own tests start it).

Each command must exit 0 and show what the page says it shows."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("COLUMNS", None)
    return env


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{shlex.join(argv)}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def _page_commands() -> list[list[str]]:
    """The page's `lineage`/`tuner` command lines from its bash blocks, in order."""
    blocks = re.findall(r"^```bash\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M)
    return [
        shlex.split(line, comments=True)
        for block in blocks
        for line in block.splitlines()
        if line.startswith(("lineage ", "tuner "))
    ]


def test_the_quickstart_prints_a_line_per_trial_and_its_summary_on_a_pipe(
    quickstart_run: tuple[Path, str],
) -> None:
    _, printed = quickstart_run
    lines = printed.splitlines()
    assert lines[0].startswith("campaign 'quickstart': budget 16 trials, 2 at a time")
    per_trial = [
        line for line in lines if re.match(r"\[\d+/16\] trial \d+ (COMPLETE|PRUNED|FAIL)", line)
    ]
    assert per_trial, printed
    numbers = [int(re.match(r"\[(\d+)/16\]", line).group(1)) for line in per_trial]  # type: ignore[union-attr]
    assert numbers == list(range(1, len(numbers) + 1)), "the counter neither repeats nor skips"
    assert re.search(r"^campaign 'quickstart': \d+/16 trials \(COMPLETE \d+", printed, re.M)
    assert re.search(r"^importance: lr=", printed, re.M) or "importance:" in printed


def test_the_pages_commands_run_verbatim_and_show_what_it_says(
    quickstart_run: tuple[Path, str],
) -> None:
    clone, _ = quickstart_run
    commands = _page_commands()
    names = [" ".join(argv[:2]) for argv in commands]
    assert {"lineage runs", "lineage importance", "lineage diagnose", "lineage diff"} <= set(
        names
    ), names
    trials = _run(
        ["lineage", "runs", "-e", "quickstart", "--where", "tags.`lineage.run_type` = 'trial'",
         "--format", "json"],
        clone,
    )  # fmt: skip
    # Parsed, not matched: the store renders the list itself (compact) unless a run holds a
    # huge metric value such as a diverged loss, and then Python encodes it (with spaces).
    ids = [run["run_id"] for run in json.loads(trials)]
    assert len(ids) >= 2, (trials[-2000:], _run(["lineage", "runs", "-e", "quickstart"], clone))
    for argv in commands:
        if argv[:2] == ["lineage", "ui"]:
            continue
        argv = [ids[0] if a == "RUN_A" else ids[1] if a == "RUN_B" else a for a in argv]
        out = _run(argv, clone)
        if argv[:2] == ["lineage", "runs"]:
            # The target leads whatever the filter: "the target is a property of the
            # experiment" (the filter leaves the campaign run out).
            header = next(line for line in out.splitlines() if "run" in line and "name" in line)
            assert "val_accuracy" in header and "lr" in header, out
        elif argv[:2] == ["lineage", "importance"]:
            rows = re.findall(r"^│\s*([\d-]+)\s*│\s*(\w+)", out, flags=re.M)
            assert rows and rows[0][1] == "lr", out  # the page: lr leads the ranking
        elif argv[:2] == ["lineage", "diff"]:
            assert "lr" in out
    status = _run(["tuner", "status", "configs/quickstart.yaml"], clone)
    assert "quickstart" in status
