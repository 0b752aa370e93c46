"""Reading a study for ``tuner status``, fast.

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
from datetime import datetime
from pathlib import Path
from typing import Any

from tuner.search import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    IMPORTED_ATTR,
    LAUNCH_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    RESUMED_STEP_ATTR,
    STALE_ATTR,
    best_numbers,
)

__all__ = ["NoStudy", "read_study", "timestamp"]

_SCHEDULER_ATTRS = (PAUSED_ATTR, PROMOTED_FROM_ATTR, EXPLOITED_ATTR, EXPLOIT_ATTR)


class NoStudy(Exception):
    """The storage holds no study of that name (or no Optuna tables at all)."""


class Unreadable(Exception):
    """The SQL reader cannot read this database (driver, schema): use Optuna."""


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


def read_study(url: str, study_name: str) -> dict[str, Any]:
    """``{"directions", "trials": [trial dicts], "best": [trial dicts]}`` of the study: by
    SQL where the reader applies, else through Optuna. `NoStudy` when there is none."""
    try:
        data = _read_sql(url, study_name)
    except Unreadable:
        data = None
    return data if data is not None else _from_optuna(url, study_name)


def _read_sql(url: str, study_name: str) -> dict[str, Any] | None:
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
        trials = _trials(q, study_id)
        data: dict[str, Any] = {"directions": directions, "trials": list(trials.values())}
        data["best"] = _best(data)
        _details(q, data)
        _continuations(q, study_id, trials)
        return data
    finally:
        conn.close()


#: Runs one query (``?`` placeholders) and returns its rows.
_Query = Callable[..., list[tuple[Any, ...]]]


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


def _trials(q: _Query, study_id: Any) -> dict[int, dict[str, Any]]:
    """Every trial with its values, whether it was superseded and whether it was imported by
    warm_start, in one query; by trial id."""
    try:
        trial_rows = q(
            "SELECT t.trial_id, t.number, t.state, t.datetime_start, v.objective, v.value, "
            "v.value_type, (SELECT COUNT(*) FROM trial_system_attributes a "
            "WHERE a.trial_id = t.trial_id AND a.key = ?), "
            "(SELECT COUNT(*) FROM trial_system_attributes a "
            "WHERE a.trial_id = t.trial_id AND a.key = ?) "
            "FROM trials t LEFT JOIN trial_values v ON v.trial_id = t.trial_id "
            "WHERE t.study_id = ? ORDER BY t.number, v.objective",
            (STALE_ATTR, IMPORTED_ATTR, study_id),
        )
    except Exception as exc:
        raise Unreadable from exc
    trials: dict[int, dict[str, Any]] = {}
    for tid, number, state, start, objective, value, vtype, stale, imported in trial_rows:
        t = trials.setdefault(
            tid,
            {
                "id": tid,
                "number": number,
                "state": str(state).upper().split(".")[-1],
                "start": start,
                "values": {},
                "stale": bool(stale),
                "imported": bool(imported),
            },
        )
        if objective is not None:
            if vtype == "INF_POS":
                value = float("inf")
            elif vtype == "INF_NEG":
                value = float("-inf")
            t["values"][objective] = None if value is None else float(value)
    return trials


def _details(q: _Query, data: dict[str, Any]) -> None:
    """The parameters and launch records of the trials shown in full: the running ones and
    the best."""
    wanted = [t for t in data["trials"] if t["state"] == "RUNNING"]
    ids = {t["id"] for t in wanted} | {t["id"] for t in data["best"]}
    params: dict[int, dict[str, Any]] = {i: {} for i in ids}
    attrs: dict[int, dict[str, Any]] = {i: {} for i in ids}
    if ids:
        marks = ",".join("?" for _ in ids)
        for tid, name, value, dist in q(
            "SELECT trial_id, param_name, param_value, distribution_json FROM trial_params "
            f"WHERE trial_id IN ({marks})",
            tuple(ids),
        ):
            params[tid][name] = _external(value, dist)
        for tid, key, value in q(
            'SELECT trial_id, "key", value_json FROM trial_user_attributes '
            f'WHERE "key" IN (?, ?) AND trial_id IN ({marks})',
            (LAUNCH_ATTR, ATTEMPT_ATTR, *ids),
        ):
            attrs[tid][key] = json.loads(value)
    for t in data["trials"]:
        if t["id"] in ids:
            t["params"] = params[t["id"]]
            t["attrs"] = attrs[t["id"]]


def _continuations(q: _Query, study_id: Any, trials: dict[int, dict[str, Any]]) -> None:
    """Continuations (a retry or a resumed trial) say which trial and step they continue;
    a scheduler's marks say which trials it paused, promoted or replaced."""
    keys = (PARENT_ATTR, RESUMED_STEP_ATTR, ATTEMPT_ATTR, *_SCHEDULER_ATTRS)
    marks = ", ".join("?" for _ in keys)
    for tid, key, value in q(
        'SELECT a.trial_id, a."key", a.value_json FROM trial_user_attributes a '
        f'JOIN trials t ON t.trial_id = a.trial_id WHERE t.study_id = ? AND a."key" IN ({marks})',
        (study_id, *keys),
    ):
        trials[tid].setdefault("attrs", {})[key] = json.loads(value)


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


def _best(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The best COMPLETE trial (single objective) or the Pareto front, as trial dicts; of
    the campaign's own trials (not those imported by warm_start)."""
    maximize = [d == "MAXIMIZE" for d in data["directions"]] or [False]
    n = len(maximize)
    done = [
        t
        for t in data["trials"]
        if t["state"] == "COMPLETE"
        and not t.get("imported")
        and len(t["values"]) == n
        and all(v is not None for v in t["values"].values())
    ]
    by_number = {t["number"]: t for t in done}
    values = ((t["number"], [t["values"][i] for i in range(n)]) for t in done)
    numbers = best_numbers(values, maximize)
    return [by_number[n] for n in numbers]


def timestamp(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return float(value.timestamp())


def _from_optuna(url: str, study_name: str) -> dict[str, Any]:
    """What `read_study` returns, read through Optuna (any other storage)."""
    import optuna

    from tuner.search import create_rdb, internals

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=study_name, storage=create_rdb(url))
    except KeyError:
        raise NoStudy from None
    except Exception as exc:
        if "no such table" in str(exc) or "does not exist" in str(exc):
            raise NoStudy from None
        raise
    trials = []
    for t in study.get_trials(deepcopy=False):
        trials.append(
            {
                "id": internals.trial_id(t),
                "number": t.number,
                "state": t.state.name,
                "start": t.datetime_start,
                "values": dict(enumerate(t.values or [])),
                "stale": STALE_ATTR in t.system_attrs,
                "imported": IMPORTED_ATTR in t.system_attrs,
                "params": t.params,
                "attrs": t.user_attrs,
            }
        )
    data: dict[str, Any] = {"directions": [d.name for d in study.directions], "trials": trials}
    data["best"] = _best(data)
    return data
