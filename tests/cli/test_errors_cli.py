"""Every bad input gets one line on stderr and exit code 2; a dead store exit 1. Never a
traceback."""

from __future__ import annotations

import pytest
from _cli_helpers import PlainStore, lineage

pytestmark = pytest.mark.slow

CASES = [
    (
        ["show", "0123456789abcdef0123456789abcdef"],
        "run '0123456789abcdef0123456789abcdef' not found",
    ),
    (["show", "zz"], "run 'zz' not found"),
    (["diff", "RUN_BENCH", "feedfacefeedfacefeedfacefeedface"], "run 'feedface"),
    (["runs", "--experiment", "nope"], "experiment 'nope' not found"),
    (["export", "--experiment", "nope"], "experiment 'nope' not found"),
    (["runs", "--where", "metrics.acc > 0.5"], "unknown metric 'acc' in --where"),
    (["runs", "--sort=-metrics.f1"], "unknown metric 'f1' in --sort"),
    (["runs", "--where", "params.optimiser = 'sgd'"], "unknown param 'optimiser'"),
    (["runs", "--columns", "bogus"], "unknown run attribute 'bogus'"),
    (["runs", "--columns", "metrics.nope", "--limit", "1"], "unknown metric 'nope' in --columns"),
    (["runs", "--columns", "run_id,params.lrr", "--format", "csv"], "unknown param 'lrr'"),
    (["runs", "--limit", "-1"], "limit must be >= 0"),
    (["export", "--format", "parquet"], "--format parquet writes a binary file"),
]


@pytest.mark.parametrize(("args", "message"), CASES)
def test_bad_input_is_one_line_exit_2(
    plain_store: PlainStore, args: list[str], message: str
) -> None:
    args = [a.replace("RUN_BENCH", plain_store.ids["bench"]) for a in args]
    proc = lineage(*args, "--tracking-uri", plain_store.uri, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]
    assert lines[0].startswith(f"lineage {args[0]}: error: ")


def test_malformed_where_shows_a_caret(plain_store: PlainStore) -> None:
    proc = lineage(
        "runs",
        "--tracking-uri",
        plain_store.uri,
        "--where",
        "metrics.loss < 0.5 and or",
        check=False,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    first, shown, caret = proc.stderr.rstrip("\n").splitlines()
    assert "malformed --where at column 24: expected a key" in first
    assert shown == "  metrics.loss < 0.5 and or"
    assert caret == "  " + " " * 23 + "^"


def test_missing_sqlite_file_is_exit_2(tmp_path: object) -> None:
    proc = lineage("runs", "--tracking-uri", "sqlite:///does-not-exist.db", check=False)
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unreachable_database_is_exit_1() -> None:
    proc = lineage("runs", "--tracking-uri", "postgresql://postgres@127.0.0.1:1/none", check=False)
    assert proc.returncode == 1 and "cannot connect" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
