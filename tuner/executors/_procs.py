"""Finding trial process groups again after the controller died (Linux ``/proc``).

A pid alone is not an identity: after a crash or a reboot the number may belong to another
process. A trial is recorded as ``(pid, pgid, start_ticks, boot_id)``; it is the same process
only when the boot id matches and ``/proc/<pid>/stat`` gives the same start time.

Some launchers move the processes they start out of the trial's process group: ``msrun``
starts each worker in a session of its own, and its workers outlive a SIGTERM of the group.
Every process of an attempt inherits the attempt's report channel path in its environment
(``TUNER_CHANNEL``, unique per attempt), so `attempt_processes` finds those too, also after
their parent died.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner import _protocol as protocol

__all__ = [
    "attempt_processes",
    "boot_id",
    "end_group",
    "group_members",
    "identity",
    "is_alive",
    "record_self",
    "session_of",
    "signal_all",
]


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[int, int] | None:
    """``(pgrp, start_ticks)`` of a live process, None when it is gone (or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = text[text.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[2]), int(fields[19])


def session_of(pid: int) -> int | None:
    """The session ``pid`` belongs to (None: no such process). Every trial leads a session of
    its own, so a device tool's per-process figures are matched to trials by it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[3]) if len(fields) > 3 else None  # state ppid pgrp session


def identity(pid: int) -> dict[str, Any]:
    """What to record so that `group_members` can find this process group again."""
    stat = _stat(pid)
    return {
        "pid": pid,
        "pgid": stat[0] if stat else pid,
        "start_ticks": stat[1] if stat else None,
        "boot_id": boot_id(),
    }


def is_alive(info: Mapping[str, Any]) -> bool:
    """True when the process recorded in ``info`` (see `identity`) still runs."""
    if info.get("boot_id") != boot_id():
        return False
    stat = _stat(int(info["pid"]))
    return stat is not None and stat[1] == info.get("start_ticks")


def known_ended(info: Mapping[str, Any]) -> bool:
    """True when the process recorded in ``info`` ran on this machine since its last boot
    and is gone; False while it runs, and where this machine cannot tell (another host)."""
    if info.get("boot_id") != boot_id() or "pid" not in info:
        return False
    return not is_alive(info)


def group_members(info: Mapping[str, Any]) -> list[int]:
    """Live pids in the recorded process group that started no earlier than its leader.

    Linux does not hand out a pid that is still some group's id, so members of ``pgid`` that
    started after the leader belong to that trial even when the leader is gone.
    """
    if info.get("boot_id") != boot_id() or info.get("start_ticks") is None:
        return []
    pgid, start = int(info["pgid"]), int(info["start_ticks"])
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        if stat is not None and stat[0] == pgid and stat[1] >= start:
            members.append(int(entry))
    return members


def attempt_processes(channel: str) -> list[int]:
    """Live pids (of this user) whose environment names ``channel`` as the attempt's report
    channel: the attempt's processes, in its process group or not."""
    needle = f"{protocol.CHANNEL}={channel}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:  # gone, or another user's
            continue
        if (b"\0" + environ).find(b"\0" + needle) >= 0 and _stat(int(entry)) is not None:
            found.append(int(entry))
    return found


def signal_all(pids: list[int], sig: int) -> None:
    """Send ``sig`` to each of ``pids`` that still runs."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _members(info: Mapping[str, Any]) -> list[int]:
    found = set(group_members(info))
    if info.get("channel") and info.get("boot_id") == boot_id():
        found.update(attempt_processes(str(info["channel"])))
        found.update(group_members(_recorded(str(info["channel"]))))
    return sorted(found)


def record_self(channel: str) -> None:
    """Write this process's `identity` beside its attempt's ``channel`` (`PROCESS_FILE`), for a
    process that `attempt_processes` cannot find (a fork keeps its parent's environment in
    ``/proc``). Written to a temporary name first: a reader sees the whole record or none;
    where nothing can be written (a full disk), nothing is, and the trial goes on to fail on
    its own writes."""
    target = Path(channel).with_name(protocol.PROCESS_FILE)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(identity(os.getpid())))
        os.replace(tmp, target)
    except OSError:  # a full disk: the trial's own writes fail next, and say so once
        tmp.unlink(missing_ok=True)


def _recorded(channel: str) -> dict[str, Any]:
    """The identity a warm trial recorded beside ``channel`` (`record_self`), else ``{}``."""
    try:
        data = json.loads(Path(channel).with_name(protocol.PROCESS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def end_group(info: Mapping[str, Any], *, grace: float) -> int:
    """SIGTERM the recorded group (and the attempt's processes that left it, when ``info``
    names its ``channel``), SIGKILL what is left after ``grace`` s; returns how many
    processes were found. Never signals a process that is not provably the trial's.

    One scan of ``/proc`` can miss a process: while it is inside ``execve`` its environment
    cannot be read yet. So every scan while the group ends counts, and a process first seen
    by a later scan gets its SIGTERM then. The SIGKILL is sent, not awaited.
    """
    seen = set(_members(info))
    if not seen:
        return 0
    if "pgid" in info:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(info["pgid"]), signal.SIGTERM)
    signal_all(sorted(seen), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        left = _members(info)
        if not left:
            break
        signal_all([pid for pid in left if pid not in seen], signal.SIGTERM)
        seen.update(left)
        time.sleep(0.05)
    left = _members(info)
    signal_all(left, signal.SIGKILL)
    return len(seen.union(left))


def end_attempt(channel: str, *, grace: float) -> int:
    """`end_group` for an attempt whose launch was never recorded (no group is known): the
    processes whose environment names ``channel`` as their report channel."""
    return end_group({"channel": channel, "boot_id": boot_id()}, grace=grace)
