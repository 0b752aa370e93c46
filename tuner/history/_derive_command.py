"""The derived campaign's trial command, from what lineage recorded about the runs.

``lineage.command`` holds each run's argv (``[python, script, *flags]``, secrets masked) and
``lineage.cwd`` the directory it ran in. The best run's argv becomes the command: the flag
of each tuned parameter gets its placeholder (``--lr {lr}``; ``{momentum?}`` for a
conditional one; a flag the best run did not pass but another run did is appended), the
flag of each fixed parameter the best run's value (it holds it already).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lineage.store import RunRecord
    from tuner.history._derive_params import DerivedParameter

__all__ = ["command_flags", "derive_command", "recorded_argv"]


def recorded_argv(run: RunRecord) -> list[str] | None:
    """The run's recorded command line, or ``None`` when lineage recorded none."""
    from lineage import tags

    text = run.tags.get(tags.COMMAND)
    if not text:
        return None
    try:
        argv = json.loads(text)
    except ValueError:
        return None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    return argv


def _flag_names(name: str) -> list[str]:
    forms = [name, name.replace("_", "-"), name.replace("-", "_"), name.replace(".", "-")]
    return [f"--{f}" for f in dict.fromkeys(forms)]


def _find(argv: Sequence[str], flags: Sequence[str]) -> tuple[int, bool] | None:
    """``(index, inline)`` of the flag's value: ``--x v`` (the next element) or ``--x=v``."""
    for i, arg in enumerate(argv):
        for flag in flags:
            if arg.startswith(flag + "="):
                return i, True
            if arg == flag and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                return i + 1, False
    return None


def command_flags(rows: Sequence[RunRecord]) -> dict[str, str]:
    """``{param: flag}`` for every recorded param some run's command line passed a value to."""
    out: dict[str, str] = {}
    for run in rows:
        argv = recorded_argv(run)
        if argv is None:
            continue
        for name in run.params:
            if name in out:
                continue
            flags = _flag_names(name)
            found = _find(argv, flags)
            if found is not None:
                i, inline = found
                out[name] = argv[i].split("=", 1)[0] if inline else argv[i - 1]
    return out


def _value_text(value: Any) -> str:
    return str(value)


def derive_command(
    best: RunRecord, rows: Sequence[RunRecord], params: Sequence[DerivedParameter]
) -> tuple[list[str] | None, str, str | None]:
    """``(argv, where it came from, workdir)``; argv ``None`` when no run recorded one."""
    from lineage import tags

    source = best
    argv = recorded_argv(best)
    if argv is None:
        source = next((r for r in rows if recorded_argv(r) is not None), best)
        argv = recorded_argv(source)
    if argv is None:
        return None, "lineage recorded no command line for these runs", None
    argv = list(argv)
    for p in params:
        if p.flag is None:
            continue
        if p.tuned:
            text = "{" + p.name + ("?}" if p.spec.get("when") else "}")
        elif source is best or not p.in_best:
            continue  # the best run's own value is already there (or it had none)
        else:
            text = _value_text(p.best)
        found = _find(argv, [p.flag])
        if found is None:
            if p.tuned:
                argv += [p.flag, text]
            continue
        i, inline = found
        argv[i] = f"{p.flag}={text}" if inline else text
    what = f"lineage.command of run {source.run_id[:8]}"
    what += " (the best run)" if source is best else " (the best run recorded none)"
    cwd = source.tags.get(tags.CWD)
    workdir = cwd if cwd and Path(cwd).is_dir() else None
    return argv, what, workdir
