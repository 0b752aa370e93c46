"""The controller's parts, each built from the config sections it reads.

The controller holds the whole campaign config; this is where it is cut into what each part
reads: the recorder (the lineage store, experiment and campaign name), the executor (its
``executor:`` and ``resources:`` sections and the trial program), the launcher (a
`LaunchPlan`), the scheduler (its ``scheduler:`` section and a
`tuner.schedulers.SchedulerContext`), the metric intake (the metric Optuna prunes on) and
the bookkeeping of ended attempts (the objectives' names, ``trial.timeout``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.campaign._ahead import AskAhead
from tuner.campaign._decide import Decisions
from tuner.campaign._findings import end_check
from tuner.campaign._intake import MetricIntake, load_online_check
from tuner.campaign._launch import Launcher
from tuner.campaign._launch_plan import LaunchPlan
from tuner.campaign._outcome import Bookkeeping
from tuner.campaign._run_end import RunEnds
from tuner.records import open_recorder
from tuner.schedulers import Scheduler, SchedulerContext, make_scheduler

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._failures import FailureBudget
    from tuner.campaign._running import Prepared, RunningTrial
    from tuner.campaign._state import TrialState
    from tuner.config import CampaignConfig
    from tuner.coordination import Coordination
    from tuner.executors import Executor
    from tuner.records import LineageRecorder

__all__ = ["Parts", "build_executor", "build_parts", "build_recorder"]


@dataclass(frozen=True)
class Parts:
    """What the controller drives trials with, once the study is loaded."""

    launcher: Launcher
    scheduler: Scheduler | None
    intake: MetricIntake
    ahead: AskAhead
    bookkeeping: Bookkeeping
    #: The one place decisions about running attempts take effect.
    decisions: Decisions


def build_recorder(config: CampaignConfig) -> LineageRecorder:
    """The campaign's recorder, once the lineage store accepted our credentials."""
    return open_recorder(
        config.tracking_uri(),
        experiment=config.experiment,
        campaign=config.name,
        parallel=config.resources.parallel,
    )


def build_executor(config: CampaignConfig, trials_dir: Path) -> Executor:
    """The executor the config asks for; its warm parents start importing at once."""
    from tuner.executors import default_executor

    return default_executor(
        config.executor,
        config.resources,
        trials_dir,
        command=config.command,
        workdir=config.workdir,
        env=config.env,
        preload=config.trial.preload,
    )


def build_parts(
    config: CampaignConfig,
    *,
    study: optuna.Study,
    coordination: Coordination,
    recorder: LineageRecorder,
    executor: Executor,
    state_dir: Path,
    message: Callable[[str], Any],
    prepare: Callable[[], Prepared | None],
    started: Callable[[RunningTrial, float], None],
    failures: FailureBudget,
    count: Callable[[TrialState], None],
    stop: Callable[[str], None],
    take_step: Callable[[RunningTrial], bool] | None = None,
) -> Parts:
    """The parts of a campaign whose study is loaded: the launcher, the scheduler (None
    without a ``scheduler:`` section), the metric intake, the queue of trials asked ahead
    (``prepare`` and ``started``: see `AskAhead`) and the bookkeeping of ended attempts
    (``failures``, ``count`` and ``stop``: see `Bookkeeping`); ``take_step``: whether a
    trial may report one more step of ``budget.steps`` (`MetricIntake`). ``state_dir``: the campaign's
    local state folder (attempt channels, local checkpoints)."""
    launcher = Launcher(
        LaunchPlan.of(config),
        study=study,
        coordination=coordination,
        recorder=recorder,
        executor=executor,
        state_dir=state_dir,
        message=message,
    )
    scheduler = make_scheduler(
        config.scheduler,
        SchedulerContext(
            target=config.target,
            grace_period=config.trial.grace_period,
            parameters=config.parameters,
            seed=config.sampler.seed,
        ),
        study,
        locked=coordination.study_lock,
        folder=launcher.checkpoint_folder,
        message=message,
    )
    if scheduler is not None:
        launcher.pause_steps = scheduler.pause_steps
        launcher.pause_every = scheduler.pause_every
    decisions = Decisions(
        study,
        folder=launcher.checkpoint_folder,
        grace=config.trial.grace_period,
        message=message,
    )
    intake = MetricIntake(
        recorder,
        (
            load_online_check(dict(zip(config.metric_names, config.directions, strict=True)))
            if config.diagnosis.early_stop
            else None
        ),
        decisions=decisions,
        prune_on=None if config.multi_objective else config.target.metric,
        pruner=config.pruner.name,
        scheduler=scheduler,
        take_step=take_step,
    )
    ahead = AskAhead(launcher, prepare=prepare, started=started)
    bookkeeping = Bookkeeping(
        study,
        metric_names=config.metric_names,
        timeout=config.trial.timeout,
        failures=failures,
        coordination=coordination,
        launcher=launcher,
        scheduler=scheduler,
        run_ends=RunEnds(
            recorder,
            metric_names=config.metric_names,
            message=message,
            check=end_check(config.diagnosis.checks),
        ),
        message=message,
        count=count,
        stop=stop,
    )
    return Parts(launcher, scheduler, intake, ahead, bookkeeping, decisions)
