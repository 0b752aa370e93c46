"""Conditions a store may push into its own query language to skip runs early.

A prefilter is a *necessary* condition: a run that fails it cannot match the caller's
filter, but a store may ignore it (or any part of it) and return more runs; the caller
still applies its exact filter. The SQL store turns it into ``IN (SELECT ...)`` clauses, so a
selective ``--where`` reads only the runs that can match. The same classes also state a
filter exactly (``lineage.query._pushdown.exact_prefilter``), for a store that answers the
whole query itself (``RunStore.runs_json``).
"""

from __future__ import annotations

from lineage._values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class KeyCondition(Value):
    """The run has ``key`` among its ``kind`` (params, metrics, tags); with ``op``, its value
    also satisfies ``value op values[0]`` (``in``: equals one of ``values``). Metric values
    are numbers; param and tag values are compared as exact text (``=``/``in``), or matched
    against a pattern (``like``/``ilike``, SQL's ``%`` and ``_``), which a store may also
    read as presence only."""

    _fields = ("kind", "key", "op", "values")
    __slots__ = _fields

    def __init__(
        self, kind: str, key: str, op: str | None = None, values: tuple[Any, ...] = ()
    ) -> None:
        self.kind = kind
        self.key = key
        self.op = op
        self.values = values


class AttrCondition(Value):
    """``column`` (status, start_time, end_time) ``op`` ``values``; statuses upper-case,
    times in milliseconds."""

    _fields = ("column", "op", "values")
    __slots__ = _fields

    def __init__(self, column: str, op: str, values: tuple[Any, ...]) -> None:
        self.column = column
        self.op = op
        self.values = values


class AllOf(Value):
    _fields = ("items",)
    __slots__ = _fields

    def __init__(self, items: tuple[Prefilter, ...]) -> None:
        self.items = items


class AnyOf(Value):
    _fields = ("items",)
    __slots__ = _fields

    def __init__(self, items: tuple[Prefilter, ...]) -> None:
        self.items = items


Prefilter = KeyCondition | AttrCondition | AllOf | AnyOf
