"""``tuner status CONFIG``: trials by state, the best so far, the running trials.

Fast on purpose (a user runs it in a loop while a campaign runs): on SQLite and PostgreSQL it
reads Optuna's tables with a few plain SQL queries (sqlite3 / psycopg) instead of importing
Optuna, SQLAlchemy and MLflow and loading every trial object; any other storage goes through
Optuna. The SQL reader is the one place that knows Optuna's RDB schema (stable since Optuna
3.0: ``studies``, ``study_directions``, ``trials``, ``trial_values``, ``trial_params``,
``trial_user_attributes``, ``trial_system_attributes``); a schema it does not recognise makes
it fall back to Optuna.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
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
)

ORDER = 22

_SCHEDULER_ATTRS = (PAUSED_ATTR, PROMOTED_FROM_ATTR, EXPLOITED_ATTR, EXPLOIT_ATTR)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show a campaign's progress",
        description="Show the campaign in CONFIG: trials by state (superseded attempts of "
        "interrupted trials apart from failures, earlier runs imported by warm_start apart "
        "from the campaign's own trials), the best trial so far, running trials with "
        "their device and elapsed time, and whether a controller is alive. Reads the Optuna "
        "storage only; works while `tuner run` is running.",
    )
    parser.add_argument("config", help="campaign YAML file")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(handler=run)


class _NoStudy(Exception):
    pass


class _Unreadable(Exception):
    """The SQL reader cannot read this database (driver, schema): use Optuna."""


def _connect(url: str) -> tuple[Any, str] | None:
    """A DB-API connection and its placeholder, or None when the SQL reader does not apply."""
    if url.startswith("sqlite:///"):
        import sqlite3

        path = Path(url[len("sqlite:///") :].split("?", 1)[0])
        if not path.exists():
            raise _NoStudy
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


def _read_sql(url: str, study_name: str) -> dict[str, Any] | None:
    """``{"directions", "trials": [row dicts]}`` by SQL; None when the reader does not apply."""
    conn_ph = _connect(url)
    if conn_ph is None:
        return None
    conn, ph = conn_ph
    try:
        cur = conn.cursor()

        def q(sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
            cur.execute(sql.replace("?", ph), args)
            return list(cur.fetchall())

        try:
            rows = q(
                "SELECT s.study_id, d.objective, d.direction FROM studies s "
                "LEFT JOIN study_directions d ON d.study_id = s.study_id "
                "WHERE s.study_name = ? ORDER BY d.objective",
                (study_name,),
            )
        except Exception as exc:
            if "no such table" in str(exc) or "does not exist" in str(exc):
                raise _NoStudy from None
            raise _Unreadable from exc
        if not rows:
            raise _NoStudy
        study_id = rows[0][0]
        directions = [str(r[2]).upper() for r in rows if r[2] is not None]
        # Every trial with its values, whether it was superseded and whether it was imported
        # by warm_start, in one query.
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
            raise _Unreadable from exc
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
        data: dict[str, Any] = {"directions": directions, "trials": list(trials.values())}
        data["best"] = _best(data)
        wanted = [t for t in data["trials"] if t["state"] == "RUNNING"]
        best = data["best"]
        ids = {t["id"] for t in wanted} | {t["id"] for t in best}
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
        # Continuations (a retry or a resumed trial) say which trial and step they continue;
        # a scheduler's marks say which trials it paused, promoted or replaced.
        keys = (PARENT_ATTR, RESUMED_STEP_ATTR, ATTEMPT_ATTR, *_SCHEDULER_ATTRS)
        marks = ", ".join("?" for _ in keys)
        for tid, key, value in q(
            'SELECT a.trial_id, a."key", a.value_json FROM trial_user_attributes a '
            f'JOIN trials t ON t.trial_id = a.trial_id WHERE t.study_id = ? AND a."key" IN ({marks})',
            (study_id, *keys),
        ):
            trials[tid].setdefault("attrs", {})[key] = json.loads(value)
        return data
    finally:
        conn.close()


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
    signs = [-1.0 if d == "MAXIMIZE" else 1.0 for d in data["directions"]] or [1.0]
    n = len(signs)
    done = [
        t
        for t in data["trials"]
        if t["state"] == "COMPLETE"
        and not t.get("imported")
        and len(t["values"]) == n
        and all(v is not None for v in t["values"].values())
    ]
    for t in done:
        t["key"] = tuple(s * t["values"][i] for i, s in enumerate(signs))
    if not done:
        return []
    if n == 1:
        return [min(done, key=lambda t: (t["key"][0], t["number"]))]
    front: list[dict[str, Any]] = []
    for t in sorted(done, key=lambda t: (t["key"], t["number"])):
        if not any(_dominates(f["key"], t["key"]) or f["key"] == t["key"] for f in front):
            front.append(t)
    return sorted(front, key=lambda t: t["number"])


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


def _timestamp(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return float(value.timestamp())


def _from_optuna(url: str, study_name: str) -> dict[str, Any]:
    """What `_read_sql` returns, read through Optuna (any other storage)."""
    import optuna

    from tuner.search import create_rdb, internals

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=study_name, storage=create_rdb(url))
    except KeyError:
        raise _NoStudy from None
    except Exception as exc:
        if "no such table" in str(exc) or "does not exist" in str(exc):
            raise _NoStudy from None
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


def collect(config: Any) -> dict[str, Any]:
    """The status as a dict (what ``--format json`` prints)."""
    from lineage.masking import mask_uri
    from tuner._errors import ConfigError
    from tuner.coordination import CampaignDir

    url = config.optuna_storage_url()
    try:
        try:
            data = _read_sql(url, config.study_name)
        except _Unreadable:
            data = None
        if data is None:
            data = _from_optuna(url, config.study_name)
    except _NoStudy:
        raise ConfigError(
            f"{config.source_path or config.name}: no campaign {config.name!r} in "
            f"{mask_uri(url)} yet; start it with `tuner run`"
        ) from None
    # A superseded attempt (an interrupted trial whose copy re-runs it) is stored as FAIL
    # but is no failure of the trial: it is counted apart and not against the budget.
    states = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0, "SUPERSEDED": 0, "RUNNING": 0, "WAITING": 0}
    counted = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0}
    if config.scheduler is not None:
        # A scheduler's trials apart: paused at a rung (they count), paused then promoted
        # (their continuation counts), a PBT segment replaced by a copy of another member.
        states.update({"PAUSED": 0, "PROMOTED": 0, "EXPLOITED": 0})
    promoted = {
        int(t["attrs"][PROMOTED_FROM_ATTR])
        for t in data["trials"]
        if t.get("attrs", {}).get(PROMOTED_FROM_ATTR) is not None
    }
    running = []
    now = time.time()
    imported = 0
    chain = _chain_attempts(data["trials"])
    launches: dict[int, Any] = {}
    for t in data["trials"]:
        state = t["state"]
        if t.get("imported"):  # an earlier run, not a trial of this campaign
            imported += 1
            continue
        if state == "FAIL" and t["stale"]:
            states["SUPERSEDED"] += 1
            continue
        mark = _scheduler_state(t, promoted)
        if mark is not None:
            states[mark] = states.get(mark, 0) + 1
            if mark == "PAUSED":
                counted["PRUNED"] += 1
            continue
        states[state] = states.get(state, 0) + 1
        if state in counted:
            counted[state] += 1
        if state == "RUNNING":
            attrs = t.get("attrs", {})
            launch = launches[t["number"]] = attrs.get(LAUNCH_ATTR) or {}
            started = launch.get("started") or _timestamp(t["start"]) or now
            running.append(
                {
                    "number": t["number"],
                    "launched": bool(launch),
                    "attempt": chain.get(t["number"], 1),
                    "device": launch.get("device"),
                    "host": launch.get("host"),
                    "elapsed_s": round(now - float(started), 1),
                    "run_id": launch.get("run_id"),
                    "params": t.get("params", {}),
                }
            )
    continued = [
        {
            "number": t["number"],
            "state": "SUPERSEDED" if t["state"] == "FAIL" and t["stale"] else t["state"],
            "continues": t["attrs"][PARENT_ATTR],
            "attempt": chain.get(t["number"]),
            "resumed_step": t["attrs"].get(RESUMED_STEP_ATTR),
            **_how(t["attrs"]),
        }
        for t in data["trials"]
        if t.get("attrs", {}).get(PARENT_ATTR) is not None
    ]
    best: dict[str, Any] | None = None
    if data["best"] and len(data["directions"]) > 1:
        best = {
            "trials": [
                {
                    "number": t["number"],
                    "values": [t["values"][i] for i in sorted(t["values"])],
                    "params": t["params"],
                }
                for t in data["best"]
            ]
        }
    elif data["best"]:
        (t,) = data["best"]
        best = {"number": t["number"], "value": t["values"][0], "params": t["params"]}
    campaign_dir = CampaignDir(config.base_dir, config.name)
    alive = campaign_dir.controller_alive()
    info = campaign_dir.previous()
    if not alive:
        # Without a controller, a trial whose process is known to have ended has no elapsed
        # time that keeps growing (one that outlived its controller still runs: it has).
        from tuner.executors import known_ended

        for r in running:
            if known_ended(launches.get(r["number"], {})):
                r["elapsed_s"] = None
    return {
        "campaign": config.name,
        "storage": mask_uri(url),
        "controller": {"alive": alive, "pid": info.get("pid") if alive else None},
        "budget": {"trials": config.budget.trials, "finished": sum(counted.values())},
        "trials": states,
        "finished": counted,
        "warm_start": imported,
        "best": best,
        "running": running,
        "continued": continued,
        "stale": bool(running) and not alive,
    }


def _scheduler_state(t: dict[str, Any], promoted: set[int]) -> str | None:
    """PAUSED, PROMOTED or EXPLOITED for a pruned trial a scheduler stopped, else None."""
    attrs = t.get("attrs", {})
    if t["state"] != "PRUNED":
        return None
    if attrs.get(EXPLOITED_ATTR) is not None:
        return "EXPLOITED"
    if attrs.get(PAUSED_ATTR) is not None:
        return "PROMOTED" if t["number"] in promoted else "PAUSED"
    return None


def _how(attrs: dict[str, Any]) -> dict[str, Any]:
    """How a continuation came to be, when a scheduler made it."""
    if attrs.get(PROMOTED_FROM_ATTR) is not None:
        return {"promoted_from": attrs[PROMOTED_FROM_ATTR]}
    exploit = attrs.get(EXPLOIT_ATTR)
    if isinstance(exploit, dict):
        return {"exploit": exploit}
    return {}


def _chain_attempts(trials: list[dict[str, Any]]) -> dict[int, int]:
    """Each trial's attempt in its chain: a continuation (``tuner.parent_trial``) is one
    attempt after the trial it continues, whatever its own record says (a continuation
    started by `tuner resume` records attempt 1)."""
    attrs = {t["number"]: t.get("attrs", {}) for t in trials}
    out: dict[int, int] = {}

    def attempt(number: int, depth: int = 0) -> int:
        if number in out:
            return out[number]
        own = attrs.get(number, {})
        value = int((own.get(LAUNCH_ATTR) or {}).get("attempt", own.get(ATTEMPT_ATTR, 1)) or 1)
        parent = own.get(PARENT_ATTR)
        if parent is not None and depth < len(attrs):
            value = max(value, attempt(int(parent), depth + 1) + 1)
        out[number] = value
        return value

    for number in attrs:
        attempt(number)
    return out


def study_exists(config: Any) -> bool:
    """Whether the campaign's study is in its storage."""
    try:
        collect(config)
    except Exception:
        return False
    return True


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def run(args: argparse.Namespace) -> int:
    from lineage.masking import mask_mapping
    from tuner.config import load_config

    config = load_config(args.config, check_options=False)  # read-only: no Optuna import
    status = collect(config)
    # A parameter under a secret-looking name (``api_token``) is shown masked.
    if status["best"]:
        for t in status["best"].get("trials", [status["best"]]):
            t["params"] = mask_mapping(t["params"])
    for r in status["running"]:
        r["params"] = mask_mapping(r["params"])
    decisions: list[Any] = []
    if config.warm_start is not None and config.warm_start.compare == "auto":
        # What `compare: auto` measured and chose, recomputed from the study as a sampler
        # would now (this loads Optuna: only for such campaigns).
        from tuner.search import stored_decisions

        decisions = stored_decisions(config)
    status["warm_start_decision"] = [d.as_dict() for d in decisions]
    focus: list[str] = []
    if any(p.focus is not None for p in config.parameters.values()):
        from tuner.search import focus_lines

        focus = focus_lines(config)
    status["focus"] = focus
    if args.format == "json":
        json.dump(status, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    ctl = status["controller"]
    out.write(
        f"{status['campaign']}  {status['budget']['finished']}/{status['budget']['trials']} "
        "trials  controller: "
        + (f"running (pid {ctl['pid']})" if ctl["alive"] else "not running")
        + "\n"
    )
    out.write(
        "  ".join(
            f"{k.lower() if k == 'SUPERSEDED' else k} {v}" for k, v in status["trials"].items()
        )
        + "\n"
    )
    if status["warm_start"]:
        out.write(
            f"warm start: {status['warm_start']} earlier run(s) imported as finished trials "
            "(seen by the sampler, not counted against the budget)\n"
        )
    if decisions:
        from tuner.search import transfer_line

        for d in decisions:
            out.write(transfer_line(d) + "\n")
    for line in focus:
        out.write(line + "\n")
    best = status["best"]
    if best and "value" in best:
        out.write(f"best: trial {best['number']} = {best['value']:.6g}  {best['params']}\n")
    elif best:
        out.write(f"Pareto front ({len(best['trials'])} trials):\n")
        for t in best["trials"]:
            values = ", ".join(f"{v:.6g}" for v in t["values"])
            out.write(f"  trial {t['number']}: {values}  {t['params']}\n")
    if status["running"]:
        rows = [("trial", "attempt", "device", "elapsed", "params")]
        for r in status["running"]:
            rows.append(
                (
                    str(r["number"]),
                    str(r["attempt"]),
                    str(r["device"]) if r["launched"] else "not launched",
                    "-" if r["elapsed_s"] is None else f"{r['elapsed_s']}s",
                    json.dumps(r["params"]),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for row in rows:
            out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)))
            out.write("  " + row[4] + "\n")
    for c in status["continued"]:
        where = "from scratch" if c["resumed_step"] is None else f"from step {c['resumed_step']}"
        if "promoted_from" in c:
            how = "promoted: continues paused trial"
        elif "exploit" in c:
            changed = ", ".join(
                f"{k} {_short(a)} -> {_short(b)}" for k, (a, b) in c["exploit"]["perturbed"].items()
            )
            how = (
                f"PBT member {c['exploit']['member']} (replaces trial "
                f"{c['exploit']['replaces']}{'; ' + changed if changed else ''}): copies trial"
            )
        else:
            how = "continues trial"
        out.write(
            f"trial {c['number']} (attempt {c['attempt'] or '?'}, {c['state']}) {how} "
            f"{c['continues']} {where}\n"
        )
    if status["stale"]:
        out.write("RUNNING trials without a live controller: run `tuner resume CONFIG`.\n")
    return 0
