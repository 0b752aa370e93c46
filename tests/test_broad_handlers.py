"""Every handler that catches everything earns its place: it re-raises, or its ``except`` line
(or the first line of its body) carries a comment saying what happens to what it swallowed
(logged, counted, said on stderr, returned as the trial's failure) and why that is right."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROAD = {"Exception", "BaseException"}


def _caught(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"Exception"}  # a bare except
    if isinstance(node, ast.Tuple):
        return set().union(*(_caught(e) for e in node.elts))
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return set()


def _silent_handlers() -> list[str]:
    found = []
    for package in ("lineage", "tuner"):
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            lines = source.splitlines()
            for node in ast.walk(ast.parse(source)):
                if not isinstance(node, ast.ExceptHandler) or not _caught(node.type) & BROAD:
                    continue
                if any(isinstance(n, ast.Raise) for stmt in node.body for n in ast.walk(stmt)):
                    continue
                said = "#" in lines[node.lineno - 1] or "#" in lines[node.body[0].lineno - 1]
                if not said:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_broad_handler_swallows_without_saying_why() -> None:
    assert _silent_handlers() == []
