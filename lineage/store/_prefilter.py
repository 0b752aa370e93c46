"""Conditions a store may push into its own query language to skip runs early.

A prefilter is a *necessary* condition: a run that fails it cannot match the caller's
filter, but a store may ignore it (or any part of it) and return more runs; the caller
still applies its exact filter. The SQL store turns it into ``EXISTS`` clauses, so a
selective ``--where`` reads only the runs that can match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KeyCondition:
    """The run has ``key`` among its ``kind`` (params, metrics, tags); with ``op``, its value
    also satisfies ``value op values[0]`` (``in``: equals one of ``values``). Metric values
    are numbers; param and tag values are compared as exact text (``=``/``in`` only)."""

    kind: str
    key: str
    op: str | None = None
    values: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class AttrCondition:
    """``column`` (status, start_time, end_time) ``op`` ``values``; statuses upper-case,
    times in milliseconds."""

    column: str
    op: str
    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class AllOf:
    items: tuple[Prefilter, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    items: tuple[Prefilter, ...]


Prefilter = KeyCondition | AttrCondition | AllOf | AnyOf
