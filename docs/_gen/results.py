"""Benchmark figures for the docs, read from the result files the benchmarks write.

A page holds ``<!-- results: NAME -->`` where the figures of ``benchmarks/results/NAME.json``
belong; the hook replaces it with where they come from (script, store, machine, date, load,
commit) and a table of every figure the file holds. A page cannot state a figure that no run
of a script produced, and two pages cannot disagree: both render the same file.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "benchmarks", "results")
MARKER = re.compile(r"<!-- results: ([a-z0-9_]+) -->")

#: The script that writes each result file, where its name does not say it.
SCRIPTS = {
    "recording_sqlite": "bench_recording.py --store sqlite",
    "recording_postgresql": "bench_recording.py --store postgresql",
    "recording_http": "bench_recording.py --store http",
    "query_sqlite": "bench_query.py --store sqlite",
    "query_postgresql": "bench_query.py --store postgresql",
    "query_http": "bench_query.py --store http",
}


def load(name: str) -> dict[str, Any]:
    """The result file ``benchmarks/results/<name>.json``."""
    with open(os.path.join(RESULTS, f"{name}.json"), encoding="utf-8") as fh:
        return dict(json.load(fh))


def available() -> list[str]:
    if not os.path.isdir(RESULTS):
        return []
    return sorted(f[:-5] for f in os.listdir(RESULTS) if f.endswith(".json"))


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:,.4g}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _flatten(figures: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(figures, dict):
        rows: list[tuple[str, str]] = []
        for key, value in figures.items():
            rows += _flatten(value, f"{prefix} › {key}" if prefix else str(key))
        return rows
    return [(prefix, _cell(figures))]


def source_line(result: dict[str, Any]) -> str:
    """Where a result's figures come from, in one line."""
    name = result.get("benchmark", "?")
    script = SCRIPTS.get(name, f"bench_{name}.py")
    machine = result.get("machine") or {}
    load_avg = result.get("load_average")
    parts = [
        f"`benchmarks/{script}`",
        f"store: {result.get('store', '?')}",
        f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, "
        f"Python {machine.get('python', '?')}",
        f"{result.get('date', '?')}",
        f"load average {', '.join(str(x) for x in load_avg)}" if load_avg else "load unknown",
        f"commit {result.get('commit') or '?'}",
    ]
    return "Source: " + " · ".join(parts)


def render(name: str) -> str:
    """The markdown that replaces ``<!-- results: NAME -->``."""
    try:
        result = load(name)
    except FileNotFoundError:
        return f"*No result file `benchmarks/results/{name}.json` yet: run the script.*"
    lines = [source_line(result), "", "| figure | value |", "|---|---|"]
    for key, value in _flatten(result.get("figures", {})):
        lines.append(f"| {key} | {value} |")
    params = result.get("params") or {}
    if params:
        shown = ", ".join(f"{k}={_cell(v)}" for k, v in params.items() if v is not None)
        lines += ["", f"Run with: {shown}."]
    if result.get("notes"):
        lines += ["", str(result["notes"])]
    return "\n".join(lines)


def fill(markdown: str) -> str:
    """``markdown`` with every results marker replaced."""
    return MARKER.sub(lambda m: render(m.group(1)), markdown)
