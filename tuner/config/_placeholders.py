"""``{name}`` placeholders in the trial command.

Only ``{identifier}`` is a placeholder; any other brace is left as written, so a JSON argument
such as ``'{"depth": 3}'`` passes through untouched. ``{{`` and ``}}`` write literal braces.
Substitution works on each argv element separately: a value never becomes more than one
argument and is never seen by a shell.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tuner._errors import TunerError

__all__ = ["BUILTINS", "placeholders", "render"]

#: Placeholders filled in for every trial, besides the parameters. (No ``{device}``: devices
#: are assigned by the executor after the command is rendered; the trial sees them as
#: ``CUDA_VISIBLE_DEVICES`` / ``ASCEND_RT_VISIBLE_DEVICES``, renumbered from 0.)
BUILTINS: dict[str, str] = {
    "trial": "the Optuna trial number",
    "run_id": "the trial's MLflow run id",
    "workdir": "the campaign's working directory",
}

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")


def placeholders(arg: str) -> Iterator[str]:
    """The names of the placeholders in one argv element, in order."""
    for m in _TOKEN.finditer(arg):
        if m.group(1):
            yield m.group(1)


def format_arg(value: Any) -> str:
    return str(value)


def render(arg: str, values: Mapping[str, Any]) -> str:
    """``arg`` with each ``{name}`` replaced by ``str(values[name])``."""

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = m.group(1)
        if name not in values:
            raise TunerError(f"command placeholder {{{name}}} has no value for this trial")
        return format_arg(values[name])

    return _TOKEN.sub(sub, arg)
