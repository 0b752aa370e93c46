"""Trial schedulers on top of checkpoints: asynchronous successive halving with pause and
promotion (``_asha``) and population-based training (``_pbt``). A scheduler decides which
attempts go on, stop or pause (a `Decision` the controller applies), and which continuations (a trial resumed from a checkpoint,
possibly another trial's, possibly with other parameters) join the study; the controller
and the executors run them as they run any trial. `make_scheduler` picks one from the
config's ``scheduler:`` section."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.schedulers._asha import Asha
from tuner.schedulers._base import Scheduler, SchedulerContext
from tuner.schedulers._brackets import Brackets, continuation
from tuner.schedulers._decision import (
    KEEP,
    AttemptView,
    Continue,
    Decision,
    Keep,
    Pause,
    Stop,
    strongest,
)
from tuner.schedulers._pbt import Pbt, explore, member_of

if TYPE_CHECKING:
    import optuna

    from tuner.config import SchedulerConfig

__all__ = [
    "KEEP",
    "Asha",
    "AttemptView",
    "Brackets",
    "Continue",
    "Decision",
    "Keep",
    "Pause",
    "Pbt",
    "Scheduler",
    "SchedulerContext",
    "Stop",
    "continuation",
    "explore",
    "make_scheduler",
    "member_of",
    "strongest",
]


def make_scheduler(
    section: SchedulerConfig | None,
    context: SchedulerContext,
    study: optuna.Study,
    *,
    locked: Callable[[], AbstractContextManager[Any]],
    folder: Callable[[Any], Path],
    message: Callable[[str], Any],
) -> Scheduler | None:
    """The scheduler the ``scheduler:`` section names, or None without one. ``context``: what
    it reads of the rest of the campaign; ``locked``: the study lock of the coordination;
    ``folder``: a trial's chain checkpoint folder."""
    if section is None:
        return None
    kwargs = {"locked": locked, "folder": folder, "message": message}
    if section.name == "asha":
        return Asha(section, context, study, **kwargs)
    return Pbt(section, context, study, **kwargs)
