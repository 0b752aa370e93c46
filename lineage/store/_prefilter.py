"""Conditions a store may push into its own query language to skip runs early.

A prefilter is a *necessary* condition: a run that fails it cannot match the caller's
filter, but a store may ignore it (or any part of it) and return more runs; the caller
still applies its exact filter. The SQL store turns it into ``IN (SELECT ...)`` clauses, so a
selective ``--where`` reads only the runs that can match.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# NamedTuples, not dataclasses, here and in the other modules a `lineage runs` call loads:
# importing ``dataclasses`` (it imports ``inspect``) and building each class costs that
# command ~20 ms of its start-up.


class KeyCondition(NamedTuple):
    """The run has ``key`` among its ``kind`` (params, metrics, tags); with ``op``, its value
    also satisfies ``value op values[0]`` (``in``: equals one of ``values``). Metric values
    are numbers; param and tag values are compared as exact text (``=``/``in`` only)."""

    kind: str
    key: str
    op: str | None = None
    values: tuple[Any, ...] = ()


class AttrCondition(NamedTuple):
    """``column`` (status, start_time, end_time) ``op`` ``values``; statuses upper-case,
    times in milliseconds."""

    column: str
    op: str
    values: tuple[Any, ...]


class AllOf(NamedTuple):
    items: tuple[Prefilter, ...]


class AnyOf(NamedTuple):
    items: tuple[Prefilter, ...]


Prefilter = KeyCondition | AttrCondition | AllOf | AnyOf
