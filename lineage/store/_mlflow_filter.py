"""A prefilter (see ``_prefilter.py``) as MLflow search filters, for stores read through
MLflow's own search (``mlflow server``, file stores).

MLflow's filter language has ``AND`` only, so a prefilter becomes a *list* of filter strings
(its disjunctive normal form): a run may match when it matches any of them, and the caller
merges the searches by run id. Each string is a necessary condition, never more: the caller
still applies the exact ``--where``. What MLflow cannot state (a numeric test on a param, a
``like`` with a backslash, which PostgreSQL would read as an escape) is weakened to the key's
presence or dropped, and an ``or`` with too many branches is dropped whole (one search then
reads every run), so the answer is always a superset of the runs that match.
"""

from __future__ import annotations

import math
from itertools import product

from lineage.store._prefilter import AllOf, AnyOf, AttrCondition, KeyCondition, Prefilter

#: At most this many searches for one query; an ``or`` expanding past it is not pushed.
MAX_SEARCHES = 8
_KIND = {"params": "params", "metrics": "metrics", "tags": "tags"}

Conjunction = tuple[str, ...]


def mlflow_filters(pf: Prefilter | None) -> list[str]:
    """Filter strings whose union holds every run satisfying ``pf``; ``[""]``: no filter."""
    if pf is None:
        return [""]
    return [" AND ".join(c) for c in _dnf(pf)]


def _dnf(pf: Prefilter) -> list[Conjunction]:
    if isinstance(pf, AllOf):
        out: list[Conjunction] = [()]
        for item in pf.items:
            branches = _dnf(item)
            if len(out) * len(branches) > MAX_SEARCHES:
                continue  # leaving a condition out of an AND only widens it
            out = [a + b for a, b in product(out, branches)]
        return [tuple(dict.fromkeys(c)) for c in out]
    if isinstance(pf, AnyOf):
        union: list[Conjunction] = []
        for item in pf.items:
            union.extend(_dnf(item))
            if () in union or len(union) > MAX_SEARCHES:
                return [()]  # one branch matches everything: so does the or
        return list(dict.fromkeys(union))
    if isinstance(pf, AttrCondition):
        return _attr(pf)
    return _key(pf)


def presence_filter(kind: str, key: str) -> str:
    """A filter selecting runs that have ``key`` among their ``kind``; for metrics, those
    whose value is not NaN (MLflow's comparisons skip NaN; it clamps infinities)."""
    name = _ident(kind, key)
    return f"{name} >= -1.7976931348623157e308" if kind == "metrics" else f"{name} IS NOT NULL"


def _ident(kind: str, key: str) -> str:
    return f"{_KIND[kind]}.`{key}`" if "`" not in key else f'{_KIND[kind]}."{key}"'


def _quote(text: str) -> str | None:
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return None


def _number(value: float) -> str | None:
    return repr(float(value)) if math.isfinite(value) else None


def _key(pf: KeyCondition) -> list[Conjunction]:
    if '"' in pf.key and "`" in pf.key:
        return [()]
    name = _ident(pf.kind, pf.key)
    # MLflow has no presence test for metrics, and its comparisons skip NaN values, which a
    # present metric may hold: a metric's presence is no condition at all.
    present: Conjunction = () if pf.kind == "metrics" else (f"{name} IS NOT NULL",)
    if pf.op is None:
        return [present]
    if pf.kind == "metrics":
        values = [_number(v) for v in pf.values]
        if None in values:
            return [present]
        if pf.op == "in":
            if len(values) > MAX_SEARCHES:
                return [present]
            return [(f"{name} = {v}",) for v in values]
        return [(f"{name} {pf.op} {values[0]}",)]
    texts = [_quote(str(v)) for v in pf.values]
    if None in texts:
        return [present]
    if pf.op in ("like", "ilike"):
        if "\\" in str(pf.values[0]):
            return [present]
        return [(f"{name} {pf.op.upper()} {texts[0]}",)]
    if pf.op == "in":
        if len(texts) > MAX_SEARCHES:
            return [present]
        return [(f"{name} = {t}",) for t in texts]
    if pf.op == "=":
        return [(f"{name} = {texts[0]}",)]
    return [present]


def _attr(pf: AttrCondition) -> list[Conjunction]:
    column = f"attributes.{pf.column}"
    if pf.column == "status":
        texts = [_quote(str(v)) for v in pf.values]
        if None in texts:
            return [()]
        # MLflow takes IN lists for run_id only: one search per status.
        return [(f"{column} = {t}",) for t in dict.fromkeys(texts)]
    # Times are whole milliseconds: round the bound outwards, so the test only widens.
    if pf.op == "in" or not all(math.isfinite(float(v)) for v in pf.values):
        return [()]
    value = float(pf.values[0])
    if pf.op in (">", ">="):
        return [(f"{column} >= {math.floor(value)}",)]
    if pf.op in ("<", "<="):
        return [(f"{column} <= {math.ceil(value)}",)]
    if pf.op == "=" and value.is_integer():
        return [(f"{column} = {int(value)}",)]
    return [()]
