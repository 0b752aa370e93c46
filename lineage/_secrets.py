"""Masking of secrets wherever a command line, an environment or a configuration is recorded.

Rule: a value is secret when its name (an environment variable, a ``--flag``, a config key)
contains TOKEN, PASSWORD, PASSWD, SECRET, KEY or CREDENTIAL (case-insensitive), or when it is
the password part of a URI (``scheme://user:password@host``). Secret values are replaced by
``MASK``; their names stay so that the record still says the setting was present.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

MASK = "****"

_SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|PASSWD|SECRET|KEY|CREDENTIAL|AUTH)", re.IGNORECASE)
# Names that contain KEY but are not secrets (keyboard, monkey, ...) are rare in training
# configs; the few that matter in this field are listed so they stay readable.
_NOT_SECRET = re.compile(r"^(KEYS?|SORT_KEY|PRIMARY_KEY|KEY_METRIC|MONKEY.*)$", re.IGNORECASE)
_URI_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*:)(?P<pw>[^@\s]+)(?=@)")


def is_secret_name(name: str) -> bool:
    """True when a variable, flag or key called ``name`` holds a secret."""
    bare = name.lstrip("-").replace("-", "_")
    return bool(_SECRET_NAME.search(bare)) and not _NOT_SECRET.match(bare)


def mask_uri(text: str) -> str:
    """Replace the password of every ``scheme://user:password@host`` inside ``text``."""
    return _URI_PASSWORD.sub(lambda m: m.group("head") + MASK, text)


def mask_value(name: str, value: Any) -> Any:
    """Mask ``value`` if ``name`` is secret; otherwise mask URI passwords inside strings."""
    if is_secret_name(name):
        return MASK
    if isinstance(value, str):
        return mask_uri(value)
    return value


def mask_mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``values`` (nested mappings included) with secret values masked."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, Mapping) and not is_secret_name(str(name)):
            out[name] = mask_mapping(value)
        else:
            out[name] = mask_value(str(name), value)
    return out


def mask_argv(argv: Sequence[str]) -> list[str]:
    """A copy of a command line with secret flag values and URI passwords masked.

    Handles ``--api-key VALUE``, ``--api-key=VALUE``, ``API_KEY=VALUE`` and URIs anywhere.
    """
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-") and "=" in arg:
            flag, _, _ = arg.partition("=")
            out.append(f"{flag}={MASK}" if is_secret_name(flag) else mask_uri(arg))
        elif arg.startswith("-") and is_secret_name(arg):
            out.append(arg)
            hide_next = True
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", arg):
            name, _, _ = arg.partition("=")
            out.append(f"{name}={MASK}" if is_secret_name(name) else mask_uri(arg))
        else:
            out.append(mask_uri(arg))
    return out
