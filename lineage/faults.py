"""Named fault points: the moments of a trial's life at which a test kills the process or
fails the call, so that each moment is shown survivable rather than hoped to be.

Code that reaches a moment worth testing calls ``point("name")`` (one line; the names and
what each guarantees are `POINTS`). Nothing happens unless the environment variable
``LINEAGE_FAULT`` is set, and it is read once, when this module is imported: an unset switch
costs one comparison per call. Its value is ``POINT:KIND`` or ``POINT:KIND:MARKER``:

- ``KIND`` ``kill``: the process sends itself SIGKILL at ``POINT`` (nothing after it runs:
  no ``finally``, no ``atexit``, no flush), as a power cut or ``kill -9`` would;
- ``KIND`` ``raise``: the call raises `FaultInjected` at ``POINT``, as a failing store,
  disk or network would, and the code around it must cope;
- ``MARKER``, a file path: the fault fires once across every process that inherits the
  variable (the first to create the file, which then holds ``POINT KIND PID``); without
  it, once per process.

The tuner passes the variable on to its warm parents and trials as to any child process, so
a point inside a trial (a checkpoint commit) fires there. This module imports nothing but
the standard library: the lowest layer, which ``lineage`` and ``tuner`` both import.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "KINDS", "POINTS", "FaultInjected", "armed", "point"]

#: The environment variable that arms one point.
ENV = "LINEAGE_FAULT"

#: What a point may do: end the process with SIGKILL, or fail the call.
KINDS = ("kill", "raise")

#: Every named point, and what holds when the process dies or the call fails there.
POINTS: dict[str, str] = {
    "asked-not-started": (
        "a trial asked for (parameters fixed) whose process never started goes back to "
        "WAITING and runs once, with the same parameters"
    ),
    "claimed-before-heartbeat": (
        "a trial a controller or worker took from the study before its first heartbeat is "
        "found by the next controller and run once"
    ),
    "after-fork-before-launch-record": (
        "a trial whose process started (cold or forked from a warm parent) before its launch "
        "was recorded is found through its attempt folder and ended; its copy runs alone"
    ),
    "warm-forked-not-reported": (
        "a warm parent that dies after forking a trial and before saying so takes that fork "
        "with it; the trial starts cold instead, once"
    ),
    "checkpoint-written-not-committed": (
        "a checkpoint whose files are written but whose manifest is not is ignored; the "
        "retry resumes from the last committed step"
    ),
    "asha-pause-recorded-not-told": (
        "a trial whose pause was recorded before it was told is paused by the next "
        "controller, not re-run, and promoted at most once"
    ),
    "asha-promoted-not-started": (
        "a promotion queued before it started runs once from the paused trial's checkpoint; "
        "the chain is promoted once"
    ),
    "pbt-marked-not-enqueued": (
        "a member's segment marked superseded before its continuation was queued is re-run "
        "from the member's own checkpoint: the exploit is lost, the member is not"
    ),
    "pbt-copied-not-told": (
        "a segment whose continuation is queued but which was not told yet is told PRUNED "
        "by the next controller; the member goes on once"
    ),
    "recorder-batch-not-written": (
        "a failed write into the lineage store is said and the campaign goes on; after a kill "
        "there, a trial's run is closed by the next controller, and a campaign run the study "
        "never recorded (killed between its creation and its first write) is taken up again "
        "by the next controller, not doubled"
    ),
    "ended-not-told": (
        "an attempt that ended and was not told yet is re-run once; other attempts that "
        "ended at the same moment are told their results"
    ),
    "retry-queued-not-marked": (
        "a failed attempt whose retry is queued but which is not yet marked failed is marked "
        "by the next controller (a failed attempt, counted against budget.max_failures) "
        "without a second retry; the retry runs once"
    ),
    "supersede-copied-not-marked": (
        "an interrupted trial whose copy is queued but which is not yet marked superseded "
        "is marked by the next controller without a second copy"
    ),
}


class FaultInjected(RuntimeError):
    """The call failed at a fault point armed by ``LINEAGE_FAULT=POINT:raise``."""


def _parse(value: str | None) -> tuple[str, str, str | None] | None:
    if not value:
        return None
    name, _, rest = value.partition(":")
    kind, _, marker = rest.partition(":")
    if name not in POINTS or kind not in KINDS:
        raise ValueError(
            f"{ENV} must be POINT:KIND[:MARKER] with POINT one of {sorted(POINTS)} and KIND one "
            f"of {list(KINDS)}, got {value!r}"
        )
    return name, kind, marker or None


_ARMED = _parse(os.environ.get(ENV))
_FIRED = False


def armed() -> str | None:
    """The point armed in this process, or None."""
    return None if _ARMED is None else _ARMED[0]


def point(name: str) -> None:
    """Pass the fault point ``name`` (one of `POINTS`): a no-op unless ``LINEAGE_FAULT``
    armed it, then SIGKILL to this process or `FaultInjected`, once."""
    if _ARMED is None or _ARMED[0] != name:
        return
    _fire(*_ARMED)


def _fire(name: str, kind: str, marker: str | None) -> None:
    global _FIRED
    if _FIRED:
        return
    _FIRED = True
    if marker is not None:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return  # fired already, in another process
        os.write(fd, f"{name} {kind} {os.getpid()}\n".encode())
        os.fsync(fd)
        os.close(fd)
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise FaultInjected(f"fault injected at {name}")
