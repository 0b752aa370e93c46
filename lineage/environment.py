"""The ``LINEAGE_*`` environment variables recording reads, each parsed against its rule.

A refused value raises :class:`~lineage.EnvironmentValueError` naming the variable, the rule
and the value. `check` reads them all, so ``lineage.start_run`` refuses a bad one before a
run exists, instead of failing half-way with a run left RUNNING; a tool that launches
recording scripts (the tuner) calls `check` or `refused` before it launches anything, so a
bad value stops the tool, not each script. Each reader is called where its value is used,
never at import: a bad value would break every importer.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from lineage._errors import EnvironmentValueError

__all__ = [
    "check",
    "end_attached_run",
    "flush_interval",
    "flush_timeout",
    "http_in_flight",
    "http_timeout",
    "http_writer",
    "refused",
    "rules",
    "spool_create_wait",
    "spool_wait",
    "sql_writer",
]

FLUSH_INTERVAL = "LINEAGE_FLUSH_INTERVAL"
FLUSH_TIMEOUT = "LINEAGE_FLUSH_TIMEOUT"
HTTP_TIMEOUT = "LINEAGE_HTTP_TIMEOUT"
HTTP_IN_FLIGHT = "LINEAGE_HTTP_IN_FLIGHT"
SPOOL_WAIT = "LINEAGE_SPOOL_WAIT"
SPOOL_CREATE_WAIT = "LINEAGE_SPOOL_CREATE_WAIT"
SQL_WRITER = "LINEAGE_SQL_WRITER"
HTTP_WRITER = "LINEAGE_HTTP_WRITER"
END_ATTACHED_RUN = "LINEAGE_END_ATTACHED_RUN"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _seconds(zero: bool) -> tuple[str, Callable[[str], Any]]:
    def parse(raw: str) -> float | None:
        try:
            value = float(raw)
        except ValueError:
            return None
        ok = math.isfinite(value) and (value > 0 or (zero and value == 0))
        return value if ok else None

    return f"a number of seconds {'>= 0' if zero else '> 0'}", parse


def _count(raw: str) -> int | None:
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 1 else None


def _flag(raw: str) -> bool | None:
    low = raw.lower()
    return True if low in _TRUE else False if low in _FALSE else None


#: Each variable's rule, as the error states it, and its parser (None: refused).
_RULES: dict[str, tuple[str, Callable[[str], Any]]] = {
    FLUSH_INTERVAL: _seconds(zero=False),
    FLUSH_TIMEOUT: _seconds(zero=False),
    HTTP_TIMEOUT: _seconds(zero=False),
    HTTP_IN_FLIGHT: ("a whole number >= 1", _count),
    SPOOL_WAIT: _seconds(zero=True),
    SPOOL_CREATE_WAIT: _seconds(zero=True),
    SQL_WRITER: (f"one of {', '.join(_TRUE + _FALSE)}", _flag),
    HTTP_WRITER: (f"one of {', '.join(_TRUE + _FALSE)}", _flag),
    END_ATTACHED_RUN: (f"one of {', '.join(_TRUE + _FALSE)}", _flag),
}


def _read(name: str, default: Any) -> Any:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    rule, parse = _RULES[name]
    value = parse(raw)
    if value is None:
        raise _refusal(name, rule, raw)
    return value


def rules() -> dict[str, str]:
    """Each ``LINEAGE_*`` variable recording checks, and the rule its value must meet (the
    text that follows ``must be`` in a refusal)."""
    return {name: rule for name, (rule, _parse) in _RULES.items()}


def refused(environ: Mapping[str, str]) -> tuple[str, str, str] | None:
    """``(variable, rule, value)`` of the first variable of ``environ`` that recording reads
    and whose value its rule refuses (the rule reads ``must be <rule>``); None when all hold."""
    for name, (rule, parse) in _RULES.items():
        raw = str(environ.get(name, "")).strip()
        if raw and parse(raw) is None:
            return name, rule, raw
    return None


def check(environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`~lineage.EnvironmentValueError` naming the first variable of ``environ``
    (the process's by default) that recording reads and whose value its rule refuses."""
    found = refused(os.environ if environ is None else environ)
    if found is not None:
        raise _refusal(*found)


def _refusal(name: str, rule: str, raw: str) -> EnvironmentValueError:
    return EnvironmentValueError(f"{name} must be {rule}, got {raw[:80]!r}")


def flush_interval() -> float:
    """Seconds between the writer thread's flushes (``LINEAGE_FLUSH_INTERVAL``, 0.5)."""
    return float(_read(FLUSH_INTERVAL, 0.5))


def flush_timeout() -> float:
    """Seconds ``Run.flush`` and ``Run.end`` wait for the store (``LINEAGE_FLUSH_TIMEOUT``, 60)."""
    return float(_read(FLUSH_TIMEOUT, 60.0))


def http_timeout() -> float:
    """Read timeout of one request to a tracking server (``LINEAGE_HTTP_TIMEOUT``, 60)."""
    return float(_read(HTTP_TIMEOUT, 60.0))


def http_in_flight() -> int:
    """Requests sent to a tracking server at once (``LINEAGE_HTTP_IN_FLIGHT``, 4)."""
    return int(_read(HTTP_IN_FLIGHT, 4))


def spool_wait(default: float = 0.0) -> float:
    """Seconds a closing spool waits for the server (``LINEAGE_SPOOL_WAIT``, else
    ``default``: 0 for a training script, which should not hang at exit)."""
    return float(_read(SPOOL_WAIT, default))


def spool_create_wait() -> float:
    """Seconds creating a run waits for an absent server (``LINEAGE_SPOOL_CREATE_WAIT``, 600)."""
    return float(_read(SPOOL_CREATE_WAIT, 600.0))


def sql_writer() -> bool:
    """Whether SQL stores are written straight into their tables (``LINEAGE_SQL_WRITER``)."""
    return bool(_read(SQL_WRITER, True))


def http_writer() -> bool:
    """Whether a tracking server is written through its REST API (``LINEAGE_HTTP_WRITER``)."""
    return bool(_read(HTTP_WRITER, True))


def end_attached_run() -> bool:
    """Whether a script attached by ``MLFLOW_RUN_ID`` ends the run itself
    (``LINEAGE_END_ATTACHED_RUN``)."""
    return bool(_read(END_ATTACHED_RUN, False))
