"""Derive from a ``--where`` tree a necessary condition the store can test in SQL.

Only positive tests translate (a run without the key fails them): ``=``, ``<``..., ``in``,
``like`` and ``is not null``. Negative ones (``!=``, ``not ...``, ``is null``) pass runs that
lack the key, so they, and ``or`` over anything untranslatable, give no condition. The exact
filter always runs afterwards; this only decides which runs are worth reading.
"""

from __future__ import annotations

from lineage.query._fields import to_number
from lineage.query._where import BoolOp, Compare, Node, coerce_literal, value_kind
from lineage.store._prefilter import AllOf, AnyOf, AttrCondition, KeyCondition, Prefilter

_NUMERIC_OPS = frozenset({"=", "<", "<=", ">", ">=", "in"})


def to_prefilter(node: Node) -> Prefilter | None:
    """A necessary condition for ``node``, or ``None`` when none can be stated."""
    if isinstance(node, BoolOp):
        items = [to_prefilter(item) for item in node.items]
        kept = tuple(item for item in items if item is not None)
        if node.op == "and":
            return None if not kept else kept[0] if len(kept) == 1 else AllOf(kept)
        return AnyOf(kept) if kept and len(kept) == len(items) else None
    if isinstance(node, Compare):
        return _compare(node)
    return None  # not ...


def _compare(node: Compare) -> Prefilter | None:
    field, op = node.field, node.op
    if op == "null":
        return KeyCondition(field.kind, field.key) if node.negate and _keyed(node) else None
    if node.negate or op == "!=":
        return None
    if field.kind == "metrics":
        if op in _NUMERIC_OPS:
            kind = value_kind(field)
            values = tuple(float(coerce_literal(field, kind, v)) for v in node.values)
            return KeyCondition("metrics", field.key, op, values)
        return KeyCondition("metrics", field.key)
    if field.kind in ("params", "tags"):
        # Text equality is exact in SQL; a numeric literal may equal "0.10" or "1e-1", so
        # only the key's presence is required then.
        if op in ("=", "in") and all(
            isinstance(v, str) and to_number(v) is None for v in node.values
        ):
            return KeyCondition(field.kind, field.key, op, tuple(node.values))
        return KeyCondition(field.kind, field.key)
    if field.key == "status" and op in ("=", "in"):
        return AttrCondition("status", op, tuple(str(v).upper() for v in node.values))
    if field.key in ("start_time", "end_time") and op in _NUMERIC_OPS:
        kind = value_kind(field)
        values = tuple(float(coerce_literal(field, kind, v)) for v in node.values)
        return AttrCondition(field.key, op, values)
    return None


def _keyed(node: Compare) -> bool:
    return node.field.kind in ("params", "metrics", "tags")
