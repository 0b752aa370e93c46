"""benchmarks/run_all.py: every benchmark script is in its table, and a bad name is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_ALL = ROOT / "benchmarks" / "run_all.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN_ALL), *args], capture_output=True, text=True, timeout=60
    )


def test_every_benchmark_script_is_run_by_run_all() -> None:
    listed = _run("--list")
    assert listed.returncode == 0, listed.stderr
    scripts = {line.split()[1] for line in listed.stdout.splitlines() if line.strip()}
    on_disk = {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert on_disk - scripts == set()


def test_every_result_file_has_a_benchmark_that_writes_it() -> None:
    listed = _run("--list").stdout
    writes = {
        w.strip() for line in listed.splitlines() for w in line.split("writes", 1)[1].split(",")
    }
    committed = {p.stem for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    assert committed - writes == set()


def test_an_unknown_benchmark_name_is_one_line_and_exit_2() -> None:
    out = _run("--only", "tuner,nope")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert "--only/--skip: unknown benchmark nope" in out.stderr
    assert "Traceback" not in out.stderr
