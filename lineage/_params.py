"""Hyperparameters as MLflow params: flattening, string encoding, and recovering the types.

MLflow stores every param as a string. ``flatten`` turns nested mappings into dotted keys
(``{"optimizer": {"lr": 0.1}}`` -> ``optimizer.lr``), ``encode`` turns each value into the
string MLflow keeps and notes its original type, and the run records those types in the
``lineage.param_types`` tag (JSON ``{key: type}``; plain strings are left out to keep it short)
so that ``decode_params`` gives back ``0.1`` (float), ``32`` (int), ``True`` (bool), ``None``
and lists instead of strings. Values of params named like secrets (``api_key``,
``db.password``) are masked before they are encoded.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from lineage import tags
from lineage._errors import UsageError
from lineage._secrets import MASK, is_secret_name, mask_nested, mask_uri

TYPES_TAG = tags.PARAM_TYPES
MAX_KEY_LENGTH = 250  # MLflow's MAX_ENTITY_KEY_LENGTH
MAX_PARAM_VALUE_LENGTH = 6000  # MLflow's MAX_PARAM_VAL_LENGTH
MAX_TAG_VALUE_LENGTH = 8000  # MLflow's MAX_TAG_VAL_LENGTH
_VALID_NAME = re.compile(r"^[/\w.\- :]*$")

_TYPE_NAMES = ("int", "float", "bool", "none", "list", "dict")


def validate_key(key: str, what: str = "param") -> None:
    """Raise :class:`UsageError` unless ``key`` is a name MLflow accepts for a param/metric/tag."""
    if not isinstance(key, str) or not key:
        raise UsageError(f"{what} names must be non-empty strings, got {key!r}")
    if len(key) > MAX_KEY_LENGTH:
        raise UsageError(
            f"{what} names must be at most {MAX_KEY_LENGTH} characters, got {len(key)}: {key[:60]!r}..."
        )
    if not _VALID_NAME.match(key):
        raise UsageError(
            f"{what} names may only contain letters, digits, '_', '-', '.', ' ', ':' and '/', got {key!r}"
        )
    norm = posixpath.normpath(key)
    if norm != key or norm == "." or norm.startswith("..") or norm.startswith("/"):
        raise UsageError(
            f"{what} names must not look like a relative or absolute path ('..', '//', leading '/'), got {key!r}"
        )


def flatten(params: Mapping[str, Any], prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """Nested mappings flattened to ``{"a.b.c": value}``; non-mapping values are kept as they are."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        key = f"{prefix}{sep}{name}" if prefix else str(name)
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, key, sep))
        else:
            out[key] = value
    return out


def _plain(value: Any) -> Any:
    # numpy / torch scalars and 0-d arrays answer .item(); dataclass-like objects stay as str.
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 0) == 0:
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


def _jsonable(value: Any) -> Any:
    value = _plain(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def encode(key: str, value: Any) -> tuple[str, str]:
    """``(string stored in MLflow, type name)`` for one flat param; secrets come back masked."""
    if any(is_secret_name(part) for part in key.split(".")):
        return MASK, "str"
    value = _plain(value)
    if value is None:
        text, kind = "None", "none"
    elif isinstance(value, bool):
        text, kind = str(value), "bool"
    elif isinstance(value, int):
        text, kind = str(value), "int"
    elif isinstance(value, float):
        text, kind = repr(value), "float"
    elif isinstance(value, str):
        text, kind = mask_uri(value), "str"
    elif isinstance(value, list | tuple):
        text, kind = json.dumps(mask_nested(_jsonable(value)), allow_nan=True), "list"
    elif isinstance(value, Mapping):  # an empty mapping (non-empty ones are flattened)
        text, kind = json.dumps(mask_nested(_jsonable(value))), "dict"
    else:
        text, kind = mask_uri(str(value)), "str"
    if len(text) > MAX_PARAM_VALUE_LENGTH:
        raise UsageError(
            f"param {key!r}: MLflow keeps at most {MAX_PARAM_VALUE_LENGTH} characters per value, "
            f"got {len(text)} (log large values as an artifact instead)"
        )
    return text, kind


def encode_params(params: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Flatten, validate and encode ``params``: ``(strings to log, {key: type} for non-strings)``."""
    texts: dict[str, str] = {}
    types: dict[str, str] = {}
    for key, value in flatten(params).items():
        validate_key(key, "param")
        text, kind = encode(key, value)
        texts[key] = text
        if kind != "str":
            types[key] = kind
    return texts, types


def split_types_tag(types: Mapping[str, str]) -> dict[str, str]:
    """The ``lineage.param_types`` tag(s) for ``types``; past 8,000 characters the JSON object is
    continued in ``lineage.param_types.1``, ``.2``... (each a JSON object of its own)."""
    tags: dict[str, str] = {}
    chunk: dict[str, str] = {}
    index = 0

    def emit() -> None:
        nonlocal index, chunk
        name = TYPES_TAG if index == 0 else f"{TYPES_TAG}.{index}"
        tags[name] = json.dumps(chunk, separators=(",", ":"), sort_keys=True)
        index += 1
        chunk = {}

    size = 2
    for key in sorted(types):
        entry = len(json.dumps(key)) + len(json.dumps(types[key])) + 2
        if chunk and size + entry > MAX_TAG_VALUE_LENGTH:
            emit()
            size = 2
        chunk[key] = types[key]
        size += entry
    if chunk or not tags:
        emit()
    return tags


def types_tag_from_tags(tags: Mapping[str, str]) -> str | None:
    """One JSON object merging ``lineage.param_types`` and its continuations, or None."""
    if TYPES_TAG not in tags:
        return None
    merged: dict[str, str] = {}
    index = 0
    while True:
        name = TYPES_TAG if index == 0 else f"{TYPES_TAG}.{index}"
        if name not in tags:
            break
        try:
            part = json.loads(tags[name])
        except ValueError:
            break
        if isinstance(part, dict):
            merged.update(part)
        index += 1
    return json.dumps(merged)


def decode_value(text: str, kind: str | None) -> Any:
    """The original value of one param string, given its recorded type (None: keep the string)."""
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            return text == "True"
        if kind == "none":
            return None
        if kind in ("list", "dict"):
            return json.loads(text)
    except ValueError:
        return text
    return text


def decode_params(params: Mapping[str, str], types_tag: str | None) -> dict[str, Any]:
    """``params`` (MLflow strings) with their original types restored from ``types_tag``.

    ``types_tag`` is the value of the ``lineage.param_types`` tag (see ``types_tag_from_tags``
    when a run has many params). Keys it does not name stay strings; a missing or malformed
    tag leaves every value a string.
    """
    types: dict[str, Any] = {}
    if types_tag:
        try:
            loaded = json.loads(types_tag)
        except ValueError:
            loaded = {}
        if isinstance(loaded, dict):
            types = loaded
    return {key: decode_value(text, types.get(key)) for key, text in params.items()}


def same_param_value(old: str, new: str) -> bool:
    """True when two param strings denote the same value (``"3"`` and ``"3.0"`` do)."""
    if old == new:
        return True
    try:
        a, b = float(old), float(new)
    except ValueError:
        return False
    return a == b or (math.isnan(a) and math.isnan(b))
