"""What a key in a filter, a sort or a column list names, and how to read it from a run."""

from __future__ import annotations

import math
from collections.abc import Callable

from lineage._errors import UsageError
from lineage._values import Value
from lineage.store import RunRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Run attributes usable in ``--where``, ``--sort`` and ``--columns``.
ATTRIBUTES: dict[str, Callable[[RunRecord], Any]] = {
    "run_id": lambda r: r.run_id,
    "run_name": lambda r: r.name,
    "experiment": lambda r: r.experiment,
    "experiment_id": lambda r: r.experiment_id,
    "status": lambda r: r.status,
    "start_time": lambda r: r.start_time,
    "end_time": lambda r: r.end_time,
    "duration": lambda r: r.duration,
}
NUMERIC_ATTRIBUTES = frozenset({"start_time", "end_time", "duration"})
_ALIASES = {"name": "run_name", "id": "run_id", "run_uuid": "run_id"}
_KINDS = {
    "params": "params",
    "param": "params",
    "metrics": "metrics",
    "metric": "metrics",
    "tags": "tags",
    "tag": "tags",
    "attributes": "attributes",
    "attribute": "attributes",
    "attr": "attributes",
}


class Field(Value):
    """``kind`` is ``params``, ``metrics``, ``tags`` or ``attributes``; ``key`` the name."""

    _fields = ("kind", "key")
    __slots__ = _fields

    def __init__(self, kind: str, key: str) -> None:
        self.kind = kind
        self.key = key

    def __str__(self) -> str:
        key = self.key
        if self.kind == "attributes":
            return key
        if not key or any(not (c.isalnum() or c in "_.-/:") for c in key):
            key = "`" + key.replace("`", "``") + "`"
        return f"{self.kind}.{key}"

    def value(self, run: RunRecord) -> Any:
        """The run's raw value for this key; ``None`` when the run has none."""
        if self.kind == "params":
            return run.params.get(self.key)
        if self.kind == "metrics":
            return run.metrics.get(self.key)
        if self.kind == "tags":
            return run.tags.get(self.key)
        return ATTRIBUTES[self.key](run)


def make_field(prefix: str | None, key: str) -> Field:
    """A :class:`Field` from a prefix (``params``, ``metric``, ``attr``...) and key;
    raises :class:`UsageError` naming the valid choices."""
    if prefix is None:
        name = _ALIASES.get(key.lower(), key.lower())
        if name not in ATTRIBUTES:
            raise UsageError(
                f"unknown run attribute {key!r}: use params.<key>, metrics.<key>, tags.<key> "
                f"or one of {', '.join(ATTRIBUTES)}"
            )
        return Field("attributes", name)
    kind = _KINDS.get(prefix.lower())
    if kind is None:
        raise UsageError(
            f"unknown key prefix {prefix!r}: use params., metrics., tags. or attributes."
        )
    if kind == "attributes":
        return make_field(None, key)
    if not key:
        raise UsageError(f"{prefix}. must be followed by a key name")
    return Field(kind, key)


def parse_field(text: str) -> Field:
    """``params.lr``, ``metrics.`val/acc```, ``tags.mlflow.user``, ``status``..."""
    text = text.strip()
    head, dot, rest = text.partition(".")
    if dot and head.lower() in _KINDS:
        if rest.startswith("`") and rest.endswith("`") and len(rest) >= 2:
            rest = rest[1:-1].replace("``", "`")
        return make_field(head, rest)
    return make_field(None, text)


def to_number(value: Any) -> float | None:
    """A float for numbers and numeric-looking strings (``"0.1"``, ``"1e-3"``), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value and "_" not in value:
        try:
            number = float(value)
        except ValueError:
            return None
        return None if math.isnan(number) else number
    return None
