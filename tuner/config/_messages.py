"""How a config error reads: ``<file>: <key.path> <rule>, got <value>.``, and unknown names.

Every path that reports a key the config does not know (a typo in any section, an option
the Optuna class does not take) goes through :func:`unknown_key`, so all of them read
``unknown key 'budget.trails' (did you mean 'budget.trials'?)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tuner._errors import ConfigError
from tuner.config._types import closest, format_value, suggest

__all__ = ["config_error", "format_path", "message", "suggest", "unknown_key"]


def format_path(parts: Sequence[Any]) -> str:
    """``("parameters", "lr", "low")`` -> ``parameters.lr.low``; list indexes as ``[0]``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def message(where: str, path: Sequence[Any], rule: str, value: Any = ...) -> str:
    """One line: the file, the key path, the rule, then the value received (if any)."""
    key = format_path(path)
    head = f"{where}: {key}" if key else where
    text = f"{head}{rule}" if rule.startswith(":") else f"{head} {rule}"
    if value is not ...:
        text += f", got {format_value(value)}"
    return text if text.endswith((".", "?", "!")) else text + "."


def config_error(config: Any, path: Sequence[Any], rule: str, value: Any = ...) -> ConfigError:
    """A :class:`ConfigError` about ``path`` in ``config``'s file (a config, a path, or None)."""
    where = getattr(config, "display_name", None) or (str(config) if config else "config")
    return ConfigError(message(where, path, rule, value))


def unknown_key(
    where: str,
    path: Sequence[Any],
    known: Iterable[str],
    *,
    present: Iterable[str] = (),
    owner: str | None = None,
) -> str:
    """``<where>: unknown key 'a.b' (did you mean 'a.c'?).``, else ``...; known keys: ...``.

    ``present`` are the keys written beside it: a key already written is not suggested (a
    user with both ``trials`` and ``trails`` made a different mistake than a typo).
    """
    *parent, last = [str(p) if not isinstance(p, int) else p for p in path]
    known = list(known)
    written = set(present)
    candidates = [k for k in known if k not in written]
    close = closest(str(last), candidates)
    text = f"{where}: unknown key {format_path(path)!r}"
    if owner:
        text += f" ({owner} has no such option"
        text += f"; did you mean {format_path([*parent, close])!r}?)" if close else ")"
    elif close:
        text += f" (did you mean {format_path([*parent, close])!r}?)"
    if not close:
        listing = ", ".join(known) or "(none)"
        text += f"; known keys: {listing}" if not owner else f"; options: {listing}"
    return text + "."
