"""Derive from a ``--where`` tree a condition the store can test in SQL.

Only positive tests translate (a run without the key fails them): ``=``, ``<``..., ``in``,
``like`` and ``is not null`` (a param or tag ``like`` keeps its pattern, which the SQL
stores read as presence of the key and MLflow's search takes as it is). Negative ones (``!=``, ``not ...``, ``is null``) pass runs that
lack the key, so they, and ``or`` over anything untranslatable, give no condition.

:func:`to_prefilter` states a *necessary* condition: the exact filter always runs afterwards,
this only decides which runs are worth reading. :func:`exact_prefilter` states the filter
itself, where SQL gives the same answer as :meth:`Node.compile` for every run (metric
comparisons, text equality, presence, status and times), so a store may answer the whole
query on its own.
"""

from __future__ import annotations

from lineage.query._fields import to_number
from lineage.query._where import BoolOp, Compare, Node, coerce_literal, value_kind
from lineage.store import AllOf, AnyOf, AttrCondition, KeyCondition, Prefilter

_NUMERIC_OPS = frozenset({"=", "<", "<=", ">", ">=", "in"})


def to_prefilter(node: Node) -> Prefilter | None:
    """A necessary condition for ``node``, or ``None`` when none can be stated."""
    return _translate(node, exact=False)


def exact_prefilter(node: Node) -> Prefilter | None:
    """A condition the runs satisfy exactly when they satisfy ``node``, or ``None``."""
    return _translate(node, exact=True)


def _translate(node: Node, *, exact: bool) -> Prefilter | None:
    if isinstance(node, BoolOp):
        items = [_translate(item, exact=exact) for item in node.items]
        kept = tuple(item for item in items if item is not None)
        if len(kept) < len(items) and (exact or node.op == "or"):
            return None
        if not kept:
            return None
        if len(kept) == 1:
            return kept[0]
        return AllOf(kept) if node.op == "and" else AnyOf(kept)
    if isinstance(node, Compare):
        condition, is_exact = _compare(node)
        return condition if is_exact or not exact else None
    return None  # not ...


def _compare(node: Compare) -> tuple[Prefilter | None, bool]:
    """The condition for one comparison, and whether it is the comparison itself."""
    field, op = node.field, node.op
    if op == "null":
        if node.negate and _keyed(node):  # is not null: the key is there (NaN included)
            return KeyCondition(field.kind, field.key), True
        return None, False
    if node.negate or op == "!=":
        return None, False
    if field.kind == "metrics":
        if op in _NUMERIC_OPS:
            kind = value_kind(field)
            values = tuple(float(coerce_literal(field, kind, v)) for v in node.values)
            # SQL compares the stored doubles and skips NaN, as Python's float tests do.
            return KeyCondition("metrics", field.key, op, values), True
        return KeyCondition("metrics", field.key), False
    if field.kind in ("params", "tags"):
        # Text equality is exact in SQL; a numeric literal may equal "0.10" or "1e-1", so
        # only the key's presence is required then. A NULL tag value reads back as "", which
        # SQL's `value = ''` would miss.
        if op in ("=", "in") and all(
            isinstance(v, str) and to_number(v) is None and v != "" for v in node.values
        ):
            return KeyCondition(field.kind, field.key, op, tuple(node.values)), True
        if op in ("like", "ilike"):
            # Stores that cannot test a pattern exactly (SQL: case rules differ) require
            # only the key; MLflow's search takes the pattern (``_mlflow_filter.py``).
            return KeyCondition(field.kind, field.key, op, (str(node.values[0]),)), False
        return KeyCondition(field.kind, field.key), False
    if field.key == "status" and op in ("=", "in"):
        return AttrCondition("status", op, tuple(str(v).upper() for v in node.values)), True
    if field.key in ("start_time", "end_time") and op in _NUMERIC_OPS:
        kind = value_kind(field)
        values = tuple(float(coerce_literal(field, kind, v)) for v in node.values)
        return AttrCondition(field.key, op, values), True
    return None, False


def _keyed(node: Compare) -> bool:
    return node.field.kind in ("params", "metrics", "tags")
