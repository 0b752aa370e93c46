"""One result file per benchmark run, so every figure the docs state has a source.

A benchmark calls :func:`write_result` once at the end with the figures it printed. The file
goes to ``benchmarks/results/<name>.json`` (or ``--results-dir``) and carries what a reader
needs to judge the figures: when, on what machine, under what load, against which store, at
which commit.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def code_identity() -> str:
    """The package code a measurement ran: the git trees of ``tuner`` and ``lineage`` at
    HEAD, plus a digest of their uncommitted changes, if any. Equal for two checkouts that
    differ only outside the package (docs, tests, results), so kept traces of a benchmark
    are reused exactly when the code they measured is the same. "unknown" outside git."""
    import hashlib

    root = Path(__file__).resolve().parent.parent

    def git(*argv: str) -> str:
        return subprocess.run(
            ["git", *argv], cwd=root, capture_output=True, text=True, timeout=30, check=True
        ).stdout

    try:
        trees = git("rev-parse", "HEAD:tuner", "HEAD:lineage").split()
        changes = git("diff", "HEAD", "--", "tuner", "lineage")
        untracked = git("ls-files", "--others", "--exclude-standard", "--", "tuner", "lineage")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    identity = hashlib.sha1(" ".join(trees).encode()).hexdigest()[:12]
    if changes or untracked:
        dirty = hashlib.sha1((changes + untracked).encode()).hexdigest()[:8]
        identity += f"+{dirty}"
    return identity


def machine() -> dict[str, Any]:
    """The facts about this host that change a timing: CPU model, cores, memory, Python."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        mem_gib = round(pages / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem_gib,
        "python": platform.python_version(),
        "os": platform.platform(terse=True),
    }


def write_result(
    name: str,
    figures: dict[str, Any],
    *,
    store: str,
    params: dict[str, Any] | None = None,
    notes: str | None = None,
    results_dir: Path | None = None,
) -> Path:
    """Write ``<results_dir>/<name>.json`` and return its path (without ``results_dir``: the
    folder ``BENCH_RESULTS_DIR`` names, else ``benchmarks/results``).

    ``figures`` holds what the benchmark printed (ratios, medians, counts), ``store`` names
    the storage it ran against (``sqlite``, ``postgresql``, ``http``, ``none``), ``params`` the
    arguments it ran with. The load average is read at the end of the run.
    """
    out_dir = results_dir or Path(os.environ.get("BENCH_RESULTS_DIR") or RESULTS_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    record = {
        "benchmark": name,
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "load_average": load,
        "store": store,
        "commit": _commit(),
        "params": params or {},
        "figures": figures,
    }
    if notes:
        record["notes"] = notes
    path = out_dir / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path
