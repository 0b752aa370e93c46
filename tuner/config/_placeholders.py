"""``{name}`` and ``{name?}`` placeholders in the trial command.

Only ``{identifier}`` (or ``{identifier?}``) is a placeholder; any other brace is left as
written, so a JSON argument such as ``'{"depth": 3}'`` passes through untouched. ``{{`` and
``}}`` write literal braces. Substitution works on each argv element separately: a value never
becomes more than one argument and is never seen by a shell.

``{name?}`` is for a conditional parameter (one with ``when:``): in a trial where it is
inactive, the whole argv element holding it is left out, never rendered empty. When that
element is the placeholder alone and the element before it is an option flag
(``--momentum {momentum?}``), the flag is left out with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tuner._errors import TunerError

__all__ = ["BUILTINS", "free_port", "placeholders", "render", "render_argv"]

#: Placeholders filled in for every trial, besides the parameters. Devices are assigned by
#: the executor after the command is rendered; the trial sees them as
#: ``CUDA_VISIBLE_DEVICES`` / ``ASCEND_RT_VISIBLE_DEVICES`` renumbered from 0, which is why
#: ``{devices}`` can be known here.
BUILTINS: dict[str, str] = {
    "trial": "the Optuna trial number",
    "run_id": "the trial's MLflow run id",
    "workdir": "the campaign's working directory",
    "nproc": "the number of devices a trial holds (resources.per_trial): the process count "
    "of a multi-device launcher such as torchrun --nproc-per-node {nproc}",
    "devices": "the trial's device ids as the trial sees them (0,1,...,per_trial-1: its "
    "visible-device list is renumbered from 0)",
    "port": "a free TCP port on the controller's host, for a launcher's rendezvous "
    "(torchrun --master-port {port}, msrun --master_port {port})",
}


def free_port() -> int:
    """A TCP port free on this host now (the OS picks it)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_.\-]*)(\?)?\}")
_NUMBER = re.compile(r"-\d|-\.\d")


def placeholders(arg: str) -> Iterator[tuple[str, bool]]:
    """``(name, optional)`` for each placeholder in one argv element, in order."""
    for m in _TOKEN.finditer(arg):
        if m.group(1):
            yield m.group(1), bool(m.group(2))


def format_arg(value: Any) -> str:
    return str(value)


def render(arg: str, values: Mapping[str, Any]) -> str:
    """``arg`` with each ``{name}`` / ``{name?}`` replaced by ``str(values[name])``."""

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


def is_option_flag(arg: str) -> bool:
    """``--momentum`` or ``-m``: a flag waiting for the next element as its value."""
    return (
        arg.startswith("-")
        and len(arg) > 1
        and "=" not in arg
        and not _NUMBER.match(arg)
        and not any(True for _ in placeholders(arg))
    )


def _lone_optional(arg: str) -> bool:
    m = _TOKEN.fullmatch(arg)
    return bool(m and m.group(1) and m.group(2))


def render_argv(command: Sequence[str], values: Mapping[str, Any]) -> list[str]:
    """The argv of one trial: each element rendered, inactive ``{name?}`` elements left out."""
    out: list[str] = []
    kept_previous = False
    for i, arg in enumerate(command):
        if any(optional and name not in values for name, optional in placeholders(arg)):
            if _lone_optional(arg) and kept_previous and is_option_flag(command[i - 1]):
                out.pop()
            kept_previous = False
            continue
        out.append(render(arg, values))
        kept_previous = True
    return out
