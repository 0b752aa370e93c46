"""Value types shared by the config models, and the error that carries a key path."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

__all__ = [
    "Duration",
    "Number",
    "RuleError",
    "Scalar",
    "Seconds",
    "UnknownKey",
    "WholeSeconds",
    "closest",
    "format_value",
    "one_of",
    "suggest",
]

Path_ = tuple[str | int, ...]


class RuleError(ValueError):
    """A rule broken at ``path`` (relative to the model that raised it).

    Raised inside model validators; the loader joins the pydantic location of the model with
    ``path`` to name the offending key, so one rule reads the same wherever it fires.
    """

    def __init__(self, path: Path_, rule: str, value: Any = ..., *, show_value: bool = True):
        self.path = tuple(path)
        self.rule = rule
        self.value = value
        self.show_value = show_value and value is not ...
        where = ".".join(str(p) for p in self.path)
        text = f"{where} {rule}" if where else rule
        if self.show_value:
            text += f", got {format_value(value)}"
        super().__init__(text)


class UnknownKey(RuleError):
    """A key at ``path`` that is not one of ``known`` (reported as ``unknown key '...'``)."""

    def __init__(self, path: Path_, known: Iterable[str], *, owner: str | None = None):
        self.known = list(known)
        self.owner = owner
        super().__init__(path, "is not a known key", show_value=False)


def format_value(value: Any, limit: int = 80) -> str:
    """A value as the user wrote it in YAML: ``0``, ``'adam'``, ``[1, 2]``, ``null``."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, float) and not math.isfinite(value):
        text = str(value)
    elif isinstance(value, int | float):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, default=str, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def closest(word: Any, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` is most likely a misspelling of, or None."""
    if not isinstance(word, str):
        return None
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.7)
    return close[0] if close else None


def suggest(word: Any, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, else ``""``."""
    close = closest(word, candidates)
    return f" (did you mean {close!r}?)" if close else ""


def _or_list(names: Iterable[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def one_of(names: Iterable[str], description: str | None = None) -> Any:
    """A string that must be one of ``names`` (taken from a registry, so the allowed values,
    the JSON Schema ``enum`` and the message come from one table)."""
    allowed = tuple(names)

    def check(value: Any) -> str:
        if isinstance(value, str) and value in allowed:
            return value
        raise RuleError((), f"must be one of {_or_list(allowed)}{suggest(value, allowed)}", value)

    schema: dict[str, Any] = {"type": "string", "enum": list(allowed)}
    if description:
        schema["description"] = description
    return Annotated[str, BeforeValidator(check), WithJsonSchema(schema)]


# ----- numbers -----------------------------------------------------------------------------


def _number(value: Any) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise PydanticCustomError("number_type", "must be a number")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise PydanticCustomError("number_finite", "must be a finite number")
        return value
    if isinstance(value, str):
        try:
            parsed = float(value)
        except ValueError:
            raise PydanticCustomError("number_type", "must be a number") from None
        if not math.isfinite(parsed):
            raise PydanticCustomError("number_finite", "must be a finite number")
        if re.fullmatch(r"\s*[-+]?\d+\s*", value):
            return int(value)
        return parsed
    raise PydanticCustomError("number_type", "must be a number")


#: An int or a float (ints stay ints, so ``type: int`` bounds can be checked), finite.
Number = Annotated[
    int | float | None,
    BeforeValidator(_number),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "null"}]}),
]


# ----- scalars (categorical choices, when-values) ------------------------------------------


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise PydanticCustomError("scalar_type", "must be a string, number, boolean or null")


#: What Optuna can store as a categorical choice.
Scalar = Annotated[
    Any,
    BeforeValidator(_scalar),
    WithJsonSchema({"type": ["string", "number", "integer", "boolean", "null"]}),
]


# ----- durations ---------------------------------------------------------------------------

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _duration(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise PydanticCustomError(
            "duration_type", "must be seconds or a duration like '90s', '30m', '2h'"
        )
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        total, pos = 0.0, 0
        # "1h 30m" and "1h30m" both read as 5400 s.
        text = "".join(value.split())
        for m in re.finditer(r"(\d+(?:\.\d*)?|\.\d+)(s|min|m|h|d)?", text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNITS[m.group(2) or ""]
            pos = m.end()
        if not text or pos != len(text):
            raise PydanticCustomError(
                "duration_type", "must be seconds or a duration like '90s', '30m', '2h'"
            )
        seconds = total
    else:
        raise PydanticCustomError(
            "duration_type", "must be seconds or a duration like '90s', '30m', '2h'"
        )
    if not math.isfinite(seconds) or seconds <= 0:
        raise PydanticCustomError("duration_positive", "must be > 0 seconds")
    return seconds


def _seconds(value: Any) -> float:
    seconds = _duration(value)
    if seconds is None:
        raise PydanticCustomError(
            "duration_type", "must be seconds or a duration like '90s', '30m', '2h'"
        )
    return seconds


#: Seconds (> 0), never null: a setting that always has a value (its default lives on the model).
Seconds = Annotated[
    float,
    BeforeValidator(_seconds),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {"type": "string", "pattern": r"^(\d+(\.\d*)?(s|m|min|h|d)?)+$"},
            ]
        }
    ),
]


def _whole_seconds(value: Any) -> int | None:
    seconds = _duration(value)
    if seconds is None:
        return None
    if seconds != int(seconds):
        raise PydanticCustomError(
            "duration_whole", "must be whole seconds, such as 5, '5s' or '1m'"
        )
    return int(seconds)


#: Whole seconds (>= 1) or null: ``5``, ``"5s"``, ``"1m"``, for settings counted in seconds
#: (Optuna's heartbeat takes an integer).
WholeSeconds = Annotated[
    int | None,
    BeforeValidator(_whole_seconds),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "pattern": r"^(\d+(s|m|min|h|d)?)+$"},
                {"type": "null"},
            ]
        }
    ),
]

#: Seconds (> 0): a number, or a string such as ``"90s"``, ``"30m"``, ``"2h"``, ``"1h30m"``.
Duration = Annotated[
    float | None,
    BeforeValidator(_duration),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {"type": "string", "pattern": r"^(\d+(\.\d*)?(s|m|min|h|d)?)+$"},
                {"type": "null"},
            ]
        }
    ),
]
