"""Masking of secrets wherever a command line, an environment or a configuration is recorded.

Rule: a value is secret when its name (an environment variable, a ``--flag``, a config key)
contains PASSWORD, PASSWD, SECRET, CREDENTIAL or PASSPHRASE, or has TOKEN, KEY or AUTH as a
word (``HF_TOKEN``, ``api-key``, ``apiKey``, ``accessToken``, ``hftoken``; not
``tokenizer``, ``max_tokens``, ``monkey`` or ``author``), case-insensitive; or when it is
the password part of a URI (``scheme://user:password@host``, a password holding ``@``
included), or the value of a secret-named URL query parameter (``?token=...``,
``&api_key=...``). Secret values are replaced by ``MASK``; their names stay so that the record
still says the setting was present. Free text (a trial's output) is scrubbed with
:func:`scrub_text`, which also replaces every known secret value literally.

The short flag ``-p VALUE`` is not treated as secret: ``-p`` is a port, a path or a prefix in
most tools, and masking it would hide ordinary settings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MASK = "****"

# Always secret when they appear anywhere in a name (no benign word contains them).
_SECRET_PART = re.compile(
    r"(PASSWORD|PASSWD|SECRET|CREDENTIAL|PASSPHRASE|PRIVATE_?KEY)", re.IGNORECASE
)
# Secret as whole words only: TOKENIZER, MAX_TOKENS, MONKEY, AUTHOR are ordinary settings.
_SECRET_WORDS = frozenset({"token", "key", "auth", "pwd", "authorization", "cookie"})
_SECRET_SUFFIXES = ("token", "apikey", "accesskey", "secretkey", "authkey", "sshkey", "licensekey")
# Names that hold a secret word but are not secrets: KEY in training configs, and the shell's
# working directories (PWD, OLDPWD: masking them would hide every path in a trial's output).
_NOT_SECRET = re.compile(
    r"^(KEYS?|SORT_KEY|PRIMARY_KEY|KEY_METRIC|METRIC_KEY|MONITOR_KEY|PWD|OLDPWD)$", re.IGNORECASE
)
# The password runs up to the LAST ``@`` of the authority (``user:p@ss@host``): the ``@`` that
# ends it is followed by no other ``@`` before whitespace or the path/query/fragment.
_URI_PASSWORD = re.compile(
    r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*:)(?P<pw>[^\s]+?)(?=@(?![^\s/?#]*@))"
)
# ``?name=value`` / ``&name=value`` / ``;name=value`` in a URL; the name decides.
_QUERY_PARAM = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.\-]+)=)(?P<value>[^&#;\s\"'<>]*)")
#: Known secret values shorter than this are not replaced in free text (too many false hits).
MIN_SECRET_LENGTH = 4


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_name(name: str) -> bool:
    """True when a variable, flag or key called ``name`` holds a secret.

    ``HF_TOKEN``, ``--api-key``, ``apiKey``, ``AWS_SECRET_ACCESS_KEY``, ``db.password`` and
    ``AUTH`` and ``DB_PWD`` are secret; ``tokenizer``, ``max_tokens``, ``author``, ``sort_key``
    and the shell's ``PWD`` are not.
    """
    bare = name.lstrip("-").replace("-", "_")
    if _NOT_SECRET.match(bare):
        return False
    if _SECRET_PART.search(bare):
        return True
    words = _words(bare)
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_SUFFIXES) for w in words)


def mask_uri(text: str) -> str:
    """Replace the password of every ``scheme://user:password@host`` inside ``text`` and the
    value of every secret-named query parameter (``?token=...``, ``&api_key=...``)."""
    text = _URI_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    if "=" not in text:
        return text
    return _QUERY_PARAM.sub(
        lambda m: (
            m.group("head") + MASK
            if m.group("value") and is_secret_name(m.group("name"))
            else m.group(0)
        ),
        text,
    )


def mask_nested(value: Any) -> Any:
    """``value`` with secrets masked at any depth: mappings by key name, lists item by item,
    strings by :func:`mask_uri`."""
    if isinstance(value, Mapping):
        return mask_mapping(value)
    if isinstance(value, list):
        return [mask_nested(v) for v in value]
    if isinstance(value, tuple):
        return tuple(mask_nested(v) for v in value)
    if isinstance(value, str):
        return mask_uri(value)
    return value


def mask_value(name: str, value: Any) -> Any:
    """Mask ``value`` if ``name`` is secret; otherwise mask URI passwords inside strings."""
    if is_secret_name(name):
        return MASK
    return mask_nested(value)


def mask_mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``values`` (nested mappings included) with secret values masked."""
    out: dict[str, Any] = {}
    for name, value in values.items():
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


def secret_values(argv: Sequence[str] = (), env: Mapping[str, Any] | None = None) -> frozenset[str]:
    """The secret values a command line and an environment hold (for :func:`scrub_text`):
    values of secret-named variables, ``--secret-flag VALUE``/``--secret-flag=VALUE`` and
    ``SECRET_NAME=VALUE`` arguments."""
    found: set[str] = set()
    for name, value in (env or {}).items():
        if isinstance(value, str) and is_secret_name(str(name)):
            found.add(value)
    take_next = False
    for arg in argv:
        if take_next:
            found.add(arg)
            take_next = False
        elif arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            if is_secret_name(flag):
                found.add(value)
        elif arg.startswith("-") and is_secret_name(arg):
            take_next = True
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", arg):
            name, _, value = arg.partition("=")
            if is_secret_name(name):
                found.add(value)
    return frozenset(v for v in found if len(v) >= MIN_SECRET_LENGTH)


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """Free text (a process's output) with URI passwords, secret query parameters and every
    known secret value (non-empty, at least ``MIN_SECRET_LENGTH`` characters) masked."""
    text = mask_uri(text)
    for secret in sorted(
        {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True
    ):
        text = text.replace(secret, MASK)
    return text
