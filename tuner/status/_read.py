"""Reading a study as plain trial records (`lineage.trials.TrialRecord`), fast.

On SQLite and PostgreSQL it reads Optuna's tables with a few plain SQL queries (sqlite3 /
psycopg) instead of importing Optuna, SQLAlchemy and MLflow and loading every trial object;
any other storage goes through Optuna. This is the one place that knows Optuna's RDB schema
(stable since Optuna 3.0: ``studies``, ``study_directions``, ``trials``, ``trial_values``,
``trial_params``, ``trial_user_attributes``, ``trial_system_attributes``); a schema it does
not recognise makes it fall back to Optuna.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lineage.trials import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    IMPORTED_ATTR,
    LAUNCH_ATTR,
    MISSED_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    RESUMED_STEP_ATTR,
    STALE_ATTR,
    SUPERSEDES_ATTR,
    TrialRecord,
    is_imported,
)
from tuner.search import best_numbers

__all__ = ["NoStudy", "StudyData", "read_study", "timestamp"]

#: The user attributes read for every trial: the chain's and the scheduler's.
_STORY_ATTRS = (
    PARENT_ATTR,
    RESUMED_STEP_ATTR,
    ATTEMPT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    EXPLOITED_ATTR,
    EXPLOIT_ATTR,
)
#: The system attributes read for every trial: what decides whether it counts.
_COUNT_ATTRS = (STALE_ATTR, IMPORTED_ATTR, SUPERSEDES_ATTR)


class NoStudy(Exception):
    """The storage holds no study of that name (or no Optuna tables at all)."""


class Unreadable(Exception):
    """The SQL reader cannot read this database (driver, schema): use Optuna."""


@dataclass(frozen=True)
class StudyData:
    """A study as `read_study` read it."""

    #: ``MINIMIZE`` or ``MAXIMIZE`` per objective.
    directions: list[str]
    #: Every trial, by number. The SQL reader reads the parameters and the launch record of
    #: the running and the best trials only; every trial's chain, scheduler and count
    #: attributes.
    trials: list[TrialRecord]
    #: The best COMPLETE trial (one objective) or the Pareto front, of the campaign's own.
    best: list[TrialRecord] = field(default_factory=list)
    #: Heartbeat writes the study's controllers could not make, per controller
    #: (``host:pid``): ``{"count", "last", "at"}`` (the study attributes `MISSED_ATTR` names).
    heartbeat_missed: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_study(url: str, study_name: str) -> StudyData:
    """The study, by SQL where the reader applies, else through Optuna. `NoStudy` when there
    is none; a storage that cannot be reached raises (never taken for "no study")."""
    try:
        data = _read_sql(url, study_name)
    except Unreadable:
        data = None
    return data if data is not None else _from_optuna(url, study_name)


def _connect(url: str) -> tuple[Any, str] | None:
    """A DB-API connection and its placeholder, or None when the SQL reader does not apply."""
    if url.startswith("sqlite:///"):
        import sqlite3

        path = Path(url[len("sqlite:///") :].split("?", 1)[0])
        if not path.exists():
            raise NoStudy
        return sqlite3.connect(str(path), timeout=30), "?"
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("postgresql", "postgresql+psycopg", "postgres"):
        try:
            import psycopg
        except ImportError:
            return None
        dsn = "postgresql://" + url.split("://", 1)[1]
        try:
            return psycopg.connect(dsn, connect_timeout=10), "%s"
        except psycopg.Error as exc:
            from tuner.search import storage_unavailable

            error = storage_unavailable(exc, url)
            if error is None:
                raise
            raise error from None
    return None


#: Runs one query (``?`` placeholders) and returns its rows.
_Query = Callable[..., list[tuple[Any, ...]]]


@dataclass
class _Row:
    """A trial as the queries assemble it, before it becomes a record."""

    number: int
    state: str
    start: Any
    values: dict[int, float | None] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def record(self) -> TrialRecord:
        n = max(self.values, default=-1) + 1
        return TrialRecord(
            number=self.number,
            state=self.state,
            attrs=self.attrs,
            params=self.params,
            values=tuple(self.values.get(i) for i in range(n)),
            start=self.start,
        )


def _read_sql(url: str, study_name: str) -> StudyData | None:
    """What `read_study` returns, by SQL; None when the reader does not apply."""
    conn_ph = _connect(url)
    if conn_ph is None:
        return None
    conn, ph = conn_ph
    try:
        cur = conn.cursor()

        def q(sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
            cur.execute(sql.replace("?", ph), args)
            return list(cur.fetchall())

        study_id, directions = _study(q, study_name)
        rows = _trials(q, study_id)
        _attributes(q, study_id, rows)
        best = _best(directions, [r.record() for r in rows.values()])
        wanted = {tid for tid, r in rows.items() if r.state == "RUNNING"}
        wanted |= {tid for tid, r in rows.items() if r.number in {b.number for b in best}}
        _details(q, wanted, rows)
        trials = [r.record() for r in rows.values()]
        by_number = {t.number: t for t in trials}
        missed = _missed(
            q(
                "SELECT key, value_json FROM study_system_attributes "
                "WHERE study_id = ? AND key LIKE ?",
                (study_id, f"{MISSED_ATTR}:%"),
            )
        )
        return StudyData(directions, trials, [by_number[b.number] for b in best], missed)
    finally:
        conn.close()


def _study(q: _Query, study_name: str) -> tuple[Any, list[str]]:
    """The study's id and directions."""
    try:
        rows = q(
            "SELECT s.study_id, d.objective, d.direction FROM studies s "
            "LEFT JOIN study_directions d ON d.study_id = s.study_id "
            "WHERE s.study_name = ? ORDER BY d.objective",
            (study_name,),
        )
    except Exception as exc:
        if "no such table" in str(exc) or "does not exist" in str(exc):
            raise NoStudy from None
        raise Unreadable from exc
    if not rows:
        raise NoStudy
    return rows[0][0], [str(r[2]).upper() for r in rows if r[2] is not None]


def _trials(q: _Query, study_id: Any) -> dict[int, _Row]:
    """Every trial with its values, in one query; by trial id."""
    try:
        trial_rows = q(
            "SELECT t.trial_id, t.number, t.state, t.datetime_start, v.objective, v.value, "
            "v.value_type FROM trials t LEFT JOIN trial_values v ON v.trial_id = t.trial_id "
            "WHERE t.study_id = ? ORDER BY t.number, v.objective",
            (study_id,),
        )
    except Exception as exc:
        raise Unreadable from exc
    rows: dict[int, _Row] = {}
    for tid, number, state, start, objective, value, vtype in trial_rows:
        row = rows.setdefault(tid, _Row(number, str(state).upper().split(".")[-1], start))
        if objective is not None:
            if vtype == "INF_POS":
                value = float("inf")
            elif vtype == "INF_NEG":
                value = float("-inf")
            row.values[objective] = None if value is None else float(value)
    return rows


def _attributes(q: _Query, study_id: Any, rows: dict[int, _Row]) -> None:
    """Every trial's chain and scheduler attributes, and what decides whether it counts."""
    for table, keys in (
        ("trial_user_attributes", _STORY_ATTRS),
        ("trial_system_attributes", _COUNT_ATTRS),
    ):
        marks = ", ".join("?" for _ in keys)
        for tid, key, value in q(
            f'SELECT a.trial_id, a."key", a.value_json FROM {table} a JOIN trials t '
            f'ON t.trial_id = a.trial_id WHERE t.study_id = ? AND a."key" IN ({marks})',
            (study_id, *keys),
        ):
            rows[tid].attrs[key] = json.loads(value)


def _details(q: _Query, ids: set[int], rows: dict[int, _Row]) -> None:
    """The parameters and launch records of the trials ``ids`` (those shown in full)."""
    if not ids:
        return
    marks = ",".join("?" for _ in ids)
    for tid, name, value, dist in q(
        "SELECT trial_id, param_name, param_value, distribution_json FROM trial_params "
        f"WHERE trial_id IN ({marks})",
        tuple(ids),
    ):
        rows[tid].params[name] = _external(value, dist)
    for tid, key, value in q(
        'SELECT trial_id, "key", value_json FROM trial_user_attributes '
        f'WHERE "key" IN (?, ?) AND trial_id IN ({marks})',
        (LAUNCH_ATTR, ATTEMPT_ATTR, *ids),
    ):
        rows[tid].attrs[key] = json.loads(value)


def _external(value: float, dist_json: str) -> Any:
    """Optuna's stored (internal) parameter value as the user sees it."""
    dist = json.loads(dist_json)
    name = dist.get("name", "")
    attrs = dist.get("attributes", {})
    if "Categorical" in name:
        return attrs["choices"][int(value)]
    if name.startswith("Int") or name == "IntLogUniformDistribution":
        return int(value)
    return float(value)


def _best(directions: list[str], trials: list[TrialRecord]) -> list[TrialRecord]:
    """The best COMPLETE trial (single objective) or the Pareto front; of the campaign's own
    trials (not those imported by warm_start)."""
    maximize = [d == "MAXIMIZE" for d in directions] or [False]
    n = len(maximize)
    done = [
        t
        for t in trials
        if t.state == "COMPLETE"
        and not is_imported(t)
        and len(t.values) == n
        and all(v is not None for v in t.values)
    ]
    by_number = {t.number: t for t in done}
    values = ((t.number, [float(v) for v in t.values if v is not None]) for t in done)
    numbers = best_numbers(values, maximize)
    return [by_number[n] for n in numbers]


def timestamp(value: Any) -> float | None:
    """A trial's start as a POSIX time (a store may hold an ISO string or a datetime)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return float(value.timestamp())


def _from_optuna(url: str, study_name: str) -> StudyData:
    """What `read_study` returns, read through Optuna (any other storage)."""
    import optuna

    from tuner.search import create_rdb

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=study_name, storage=create_rdb(url))
    except KeyError:
        raise NoStudy from None
    except Exception as exc:
        if "no such table" in str(exc) or "does not exist" in str(exc):
            raise NoStudy from None
        raise
    trials = [TrialRecord.of(t) for t in study.get_trials(deepcopy=False)]
    directions = [d.name for d in study.directions]
    attrs = study._storage.get_study_system_attrs(study._study_id)
    missed = _missed(
        [(k, json.dumps(v)) for k, v in attrs.items() if k.startswith(f"{MISSED_ATTR}:")]
    )
    return StudyData(directions, trials, _best(directions, trials), missed)


def _missed(rows: list[tuple[Any, ...]]) -> dict[str, dict[str, Any]]:
    """``{host:pid: {"count", "last", "at"}}`` from the study attributes ``rows``."""
    out = {}
    for key, value in rows:
        try:
            out[str(key).split(":", 1)[1]] = dict(json.loads(value))
        except (ValueError, TypeError):
            continue  # not a record this version wrote: not shown
    return out
