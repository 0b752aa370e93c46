"""Every table of both CLIs fits the terminal without breaking a word or a number: checked
in a real pseudo-terminal at 60, 80 and 120 columns and through a pipe (no COLUMNS, no tty),
on runs whose names, values and texts are wide."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
MODES = [60, 80, 120, "pipe"]


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> dict[str, str]:
    base = tmp_path_factory.mktemp("wide")
    shutil.copyfile(_sqlite_template, base / "mlflow.db")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    out = subprocess.run(
        [sys.executable, str(HERE / "_wide_mlflow.py")],
        cwd=base,
        env={**os.environ, "MLFLOW_TRACKING_URI": uri},
        capture_output=True,
        text=True,
        check=True,
    )
    return {"uri": uri, "base": str(base), **json.loads(out.stdout.strip().splitlines()[-1])}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "TERM": "xterm-256color", "LINEAGE_CACHE_DIR": os.devnull + ".none"}


def _in_pty(argv: list[str], columns: int, cwd: str) -> str:
    """What a user sees running ``argv`` in a terminal ``columns`` wide (stdout and stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=_env(), cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=120) == 0, b"".join(chunks).decode()
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def _piped(argv: list[str], cwd: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def _folded_rows(text: str) -> list[str]:
    """Lines of a boxed table that continue a row or a header onto a second line: a row's
    first cell (its key) is never empty, and a header is one line."""
    bad, header = [], 0
    for line in text.splitlines():
        if line.startswith("┏"):
            header = 0
        elif line.startswith("┃"):
            header += 1
            if header > 1:
                bad.append(line)
        elif line.startswith("│") and not line.split("│")[1].strip():
            bad.append(line)
    return bad


def _broken(text: str, values: list[str]) -> list[str]:
    """The values printed in part at the end of a line (or of a table cell) with the rest at
    the start of the next line (or of the same cell below): a value folded, not cut."""
    out = []
    lines = text.splitlines()
    for a, b in itertools.pairwise(lines):
        pairs = [(a.split()[-1:] or [""])[0], (b.split()[:1] or [""])[0]]
        ends = [(pairs[0], pairs[1])]
        if "│" in a and "│" in b:
            ends += [
                (x.strip(), y.strip()) for x, y in zip(a.split("│"), b.split("│"), strict=False)
            ]
        for value in values:
            for end, start in ends:
                if any(
                    end.endswith(value[:k]) and start.startswith(value[k:])
                    for k in range(2, len(value) - 1)
                ) and value not in (end, start):
                    out.append(f"{value}: {a!r} / {b!r}")
    return out


def _values(wide: dict[str, str]) -> list[str]:
    """What the tables print that must stay whole: names, values, checks, words."""
    from _wide_mlflow import NOTE

    values = [f"run-with-a-fairly-long-name-{i}" for i in range(12)]
    values += ["learning_rate", "momentum_coefficient", "weight_decay_per_step"]
    values += ["dropout_probability", "stochastic_gradient_descent", "validation_accuracy_top1"]
    values += ["0.0007751234567", "0.000123456789", "0.912345678", "loss_runaway"]
    values += ["undertrained", "lineage_latest_metrics_key_value", "examples/mindspore_digits"]
    values += [wide[str(i)] for i in range(12)] + NOTE.split()
    return [v for v in values if len(v) >= 6]  # a shorter one could match by chance


def _commands(wide: dict[str, str], repo_root: Path) -> dict[str, list[str]]:
    lineage = [sys.executable, "-m", "lineage.cli"]
    uri = ["--tracking-uri", wide["uri"]]
    return {
        "runs": [*lineage, "runs", "-e", "wide", *uri],
        "show": [*lineage, "show", wide["3"], *uri],
        "diff": [*lineage, "diff", wide["0"], wide["3"], "--all", *uri],
        "importance": [*lineage, "importance", "-e", "wide", "--target", "train_loss",
                       "--goal", "min", *uri],
        "diagnose": [*lineage, "diagnose", "-e", "wide", *uri],
        "diagnose --details": [*lineage, "diagnose", "-e", "wide", "--details", *uri],
        "index": [*lineage, "index", *uri],
        "tuner validate": [sys.executable, "-m", "tuner.cli", "validate",
                           str(repo_root / "configs" / "quickstart.yaml")],
        "tuner devices": [sys.executable, "-m", "tuner.cli", "devices",
                          str(repo_root / "configs" / "quickstart.yaml")],
    }  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "command",
    ["runs", "show", "diff", "importance", "diagnose", "diagnose --details", "index",
     "tuner validate", "tuner devices"],
)  # fmt: skip
def test_no_table_breaks_a_word(
    wide: dict[str, str], repo_root: Path, command: str, mode: int | str
) -> None:
    argv = _commands(wide, repo_root)[command]
    text = _piped(argv, wide["base"]) if mode == "pipe" else _in_pty(argv, mode, wide["base"])
    if mode != "pipe":
        # A single word longer than the terminal (a long path) keeps a line of its own.
        too_long = [
            line for line in text.splitlines() if len(line) > int(mode) and len(line.split()) > 1
        ]
        assert not too_long, text
    assert not _folded_rows(text), text
    broken = _broken(text, _values(wide))
    assert not broken, (broken, text)


def test_diagnose_summarises_an_experiment_in_one_table(wide: dict[str, str]) -> None:
    argv = [sys.executable, "-m", "lineage.cli", "diagnose", "-e", "wide",
            "--tracking-uri", wide["uri"]]  # fmt: skip
    text = _in_pty(argv, 80, wide["base"])
    assert text.count("┏") == 1 and "likely causes:" not in text, text
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert len(rows) == 12  # one per run with findings
    runaway = [row for row in rows if "loss_runaway" in row]
    assert {row.split("│")[1].strip() for row in runaway} == {wide[str(i)][:8] for i in (3, 7, 11)}
    assert len(text.splitlines()) < 25, text
    assert "the-campaign" not in text and wide["campaign"][:8] not in text  # not a training
