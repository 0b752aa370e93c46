"""The wait at a pause step: after a trial commits the checkpoint of a step at which its
scheduler may pause it (ASHA's rungs with ``mode: promote``, synchronous PBT's boundaries),
it waits for the controller's
verdict on that step, so that a pause stops the process at the step it was judged at instead
of some steps later.

The variables are part of the trial protocol the tuner hands a trial (``tuner._protocol``
re-exports them); they are spelled here because the framework helpers that commit
checkpoints (`lineage.pytorch.save_checkpoint`, the MindSpore, Lightning and Transformers
callbacks) wait too, and lineage never imports the tuner:

- ``TUNER_CONTROL``: a file whose existence means "stop now" (pruned, paused, or the
  campaign stops);
- ``TUNER_PAUSE_STEPS``: the steps (comma-separated) at which the scheduler may pause the
  trial;
- ``TUNER_PAUSE_EVERY``: a whole number N: every positive multiple of N is a pause step too
  (a scheduler whose pause steps have no last one, synchronous PBT's boundaries);
- ``TUNER_VERDICT``: a file holding the highest step the controller let the trial go on past;
- ``TUNER_PAUSE_WAIT``: the longest wait at one pause step, in seconds (the campaign's
  ``trial.grace_period``).

A step is waited at only once this process reported it (`reported`, which
``tuner.trial.report`` calls): the controller judges reports, and has nothing to judge
before. Nothing here imports a framework, MLflow or the tuner.
"""

from __future__ import annotations

import math
import os
import time

__all__ = [
    "CONTROL",
    "PAUSE_EVERY",
    "PAUSE_STEPS",
    "PAUSE_WAIT",
    "PAUSE_WAIT_S",
    "VERDICT",
    "await_verdict",
    "is_pause_step",
    "pause_steps",
    "pause_wait",
    "read_verdict",
    "reported",
    "stopped",
]

CONTROL = "TUNER_CONTROL"
"""The variable naming the file whose existence tells the trial to stop."""
PAUSE_STEPS = "TUNER_PAUSE_STEPS"
"""The variable listing the steps at which the scheduler may pause the trial."""
PAUSE_EVERY = "TUNER_PAUSE_EVERY"
"""The variable holding N where every positive multiple of N is a pause step."""
PAUSE_WAIT = "TUNER_PAUSE_WAIT"
"""The variable holding the longest wait at a pause step, in seconds."""
VERDICT = "TUNER_VERDICT"
"""The variable naming the file holding the highest step the trial may go on past."""
PAUSE_WAIT_S = 10.0
"""The longest wait (seconds) when ``TUNER_PAUSE_WAIT`` does not say: a slow or dead
controller costs a trial this much per pause step, never a hang."""
#: How often a trial waiting at a pause step looks for the verdict (two file checks).
_POLL_S = 0.005

#: The highest step this process reported (None: none yet).
_reported: int | None = None


def reported(step: int) -> None:
    """Note that this process reported ``step`` to the tuner (``tuner.trial.report`` calls
    it), so that `await_verdict` waits at that step.

    Args:
        step: the step just reported.
    """
    global _reported
    _reported = step if _reported is None else max(_reported, step)


def pause_steps(raw: str) -> frozenset[int]:
    """The steps in a ``TUNER_PAUSE_STEPS`` value; what is not a whole number is skipped (a
    malformed value makes the trial wait nowhere, as before the variable existed).

    Args:
        raw: the variable's value.
    """
    out = set()
    for part in raw.split(","):
        part = part.strip()
        if part.lstrip("-").isdigit():
            out.add(int(part))
    return frozenset(out)


def is_pause_step(step: int, steps: str | None, every: str | None) -> bool:
    """Whether ``step`` is one at which the scheduler may pause the trial: listed in
    ``steps`` (a ``TUNER_PAUSE_STEPS`` value) or a positive multiple of ``every`` (a
    ``TUNER_PAUSE_EVERY`` value; one that is not a whole number >= 1 adds no step).

    Args:
        step: the step just committed.
        steps: the ``TUNER_PAUSE_STEPS`` value; None when unset.
        every: the ``TUNER_PAUSE_EVERY`` value; None when unset.
    """
    if steps and step in pause_steps(steps):
        return True
    raw = (every or "").strip()
    return raw.isdigit() and int(raw) >= 1 and step > 0 and step % int(raw) == 0


def pause_wait(raw: str | None) -> float:
    """The seconds in a ``TUNER_PAUSE_WAIT`` value; `PAUSE_WAIT_S` when unset or not a
    finite number of seconds >= 0.

    Args:
        raw: the variable's value; None when unset.
    """
    try:
        wait = float(raw or "")
    except ValueError:
        return PAUSE_WAIT_S
    return wait if math.isfinite(wait) and wait >= 0 else PAUSE_WAIT_S


def read_verdict(path: str) -> int | None:
    """The step the trial may go on past, from its verdict file; None while there is none.

    Args:
        path: the verdict file (``TUNER_VERDICT``).
    """
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.lstrip("-").isdigit() else None


def stopped() -> bool:
    """Whether the tuner told this trial to stop (its ``TUNER_CONTROL`` file exists); False
    outside a campaign."""
    path = os.environ.get(CONTROL)
    return bool(path) and os.path.exists(path)  # type: ignore[arg-type]


def await_verdict(step: int) -> bool:
    """After the checkpoint of ``step`` was committed, wait for the controller's verdict on
    it when ``step`` is a pause step (`is_pause_step`) and this process reported it: return
    once the stop flag exists (the trial is paused or pruned), the verdict file names
    ``step`` or a later one (it goes on), or ``TUNER_PAUSE_WAIT`` seconds passed. Elsewhere
    (outside a campaign, another step, a scheduler that does not pause) it returns at once.

    Args:
        step: the step whose checkpoint was just committed.

    Returns:
        Whether the trial was told to stop (`stopped`): the training should end at this step.
    """
    verdict, control = os.environ.get(VERDICT), os.environ.get(CONTROL)
    if not verdict or not control or _reported is None or _reported < step:
        return stopped()
    if not is_pause_step(step, os.environ.get(PAUSE_STEPS), os.environ.get(PAUSE_EVERY)):
        return stopped()
    deadline = time.monotonic() + pause_wait(os.environ.get(PAUSE_WAIT))
    while True:
        if os.path.exists(control):
            return True
        cleared = read_verdict(verdict)
        if (cleared is not None and cleared >= step) or time.monotonic() >= deadline:
            return stopped()
        time.sleep(_POLL_S)
