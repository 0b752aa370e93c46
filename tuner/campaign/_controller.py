"""The campaign controller: Optuna ask/tell, trial launches on executor slots, metric
collection, pruning, failures, retries, recovery after a crash.

Budget accounting (the rule of `tuner.coordination.counted_trials`, so that workers and the
controller agree): every trial of the study counts, whatever its state, except trials
*superseded* by a copy with the same parameters (system attribute ``tuner:stale``). A failed
attempt that is retried, or a trial interrupted by a crash or Ctrl-C and re-queued, is
superseded; a trial that failed its last attempt is not. A scheduler's continuation
supersedes the trial it continues (a promoted paused trial, an exploited PBT segment), so
a chain of segments counts once. So a campaign ends with exactly
``budget.trials`` counted trials, each COMPLETE, PRUNED or FAIL (failed after all its retries).
``budget.max_failures`` counts failed attempts (a retried failure counts too; an interrupted
trial does not). Earlier runs imported by ``warm_start:`` (system attribute ``tuner:imported``)
are finished trials of the study that never count: the controller asks up to
``budget.trials`` plus their number. ``budget.steps`` and ``budget.device_hours`` count what
every trial spent (`tuner.campaign._spending`): no trial is asked once one is spent, and the
running ones are stopped there.

Whether this controller is the campaign's only one (``tuner run``) or one of several on a
shared study (``tuner worker``) is the injected `tuner.coordination.Coordination`'s business.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tuner._errors import BudgetExhausted
from tuner.campaign._closing import CampaignEnd, close_campaign, stop_and_mark, stop_lost
from tuner.campaign._failures import FailureBudget
from tuner.campaign._history import (
    Preflight,
    count_imported,
    note_space_changes,
    preflight,
    read_history,
    tally,
)
from tuner.campaign._outcome import best_of
from tuner.campaign._parts import build_executor, build_parts, build_recorder
from tuner.campaign._result import analyse, campaign_result, study_counts
from tuner.campaign._running import CampaignResult, Observer, Prepared, RunningTrial
from tuner.campaign._signals import (
    Interrupted,
    cleanup_shielded,
    interruptible,
    raise_pending,
    release_frames,
    terminate_interrupts,
)
from tuner.campaign._spending import Spending, limits_of
from tuner.campaign._state import TrialState
from tuner.coordination import Coordination, Spent, Standalone, StudySite, counted_trials
from tuner.executors import Executor, TrialOutcome
from tuner.records import disk_full, placed_trials, start_campaign_run

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._parts import Parts
    from tuner.config import CampaignConfig
    from tuner.history import WarmStartPlan
    from tuner.records import LineageRecorder

__all__ = ["CampaignResult", "Controller", "Observer", "RunningTrial"]  # re-exported


class Controller:
    """Runs one campaign to its budget.

    The outside world is injected: ``coordination`` (default: `tuner.coordination.Standalone`,
    the campaign's only controller; ``tuner worker`` passes a `tuner.coordination.SharedStudy`),
    ``executor`` (default: local slots from ``config.resources``, or Ray), ``storage`` (an
    Optuna storage; default: the coordination's) and ``recorder`` (default: MLflow at
    ``config.tracking_uri()``). ``warm_start``: the plan of `tuner.history.load_history`
    (default: read from ``config.warm_start`` when the study has not imported yet).
    ``allow_space_change``: go on when the study was run with another search space (the
    change is recorded); else that is a `ConfigError`. `run` may be called once.
    """

    def __init__(
        self,
        config: CampaignConfig,
        *,
        coordination: Coordination | None = None,
        executor: Executor | None = None,
        storage: optuna.storages.BaseStorage | None = None,
        recorder: LineageRecorder | None = None,
        observer: Observer | None = None,
        poll_interval: float = 0.05,
        importance: bool = True,
        handle_signals: bool = True,
        warm_start: WarmStartPlan | None = None,
        allow_space_change: bool = False,
    ) -> None:
        self.config = config
        self._coordination = coordination or Standalone(StudySite.of(config))
        self.campaign_dir = self._coordination.campaign_dir()
        self._executor = executor
        self._storage = storage
        self._recorder = recorder
        self._observer = observer or Observer()
        self._poll = poll_interval
        self._importance = importance
        self._handle_signals = handle_signals
        self.study: optuna.Study | None = None
        self.running: dict[int, RunningTrial] = {}
        self.counts = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0}
        self._failures = FailureBudget(config.name, config.budget, config.trial)
        self.started_at = time.time()
        #: Counted trials the campaign asks for (None: steps, device-hours or time end it).
        self.budget = config.trial_limit
        self._spending = Spending(limits_of(config), 0, self._observer.message)
        self._stop_reason: str | None = None
        self._launch_closed: str | None = None
        self._last_update = 0.0
        self.timings: list[float] = []  # controller seconds per trial (ask + launch + tell)
        self._stale: list[Any] = []
        #: What drives the trials (launcher, scheduler, intake, ...), once the study is loaded.
        self._parts: Parts | None = None
        self._plan = warm_start
        self._allow_space_change = allow_space_change
        self._preflight: Preflight | None = None
        #: Trials imported by ``warm_start:`` (finished, never counted against the budget).
        self.imported = 0

    # ----- public --------------------------------------------------------------------------

    @property
    def failures(self) -> int:
        """Failed trial attempts counted against ``budget.max_failures``."""
        return self._failures.failures

    @property
    def finished(self) -> int:
        assert self.study is not None
        return counted_trials(self.study) - self.imported - len(self.running) - self._waiting()

    def run(self) -> CampaignResult:
        """Run the campaign until ``budget.trials`` trials are counted, ``budget.steps`` or
        ``budget.device_hours`` are spent, the failure budget is
        spent (`BudgetExhausted`, after cleanup), ``budget.timeout`` passed, or it is stopped
        (Ctrl-C / SIGTERM: running trials are terminated, marked and re-queued; then
        `KeyboardInterrupt` is raised again).

        Whatever ends it (an exception from any layer included), `close_campaign` runs: the executor
        is shut down and every MLflow run of the campaign is ended (the parent, trial runs,
        reserved runs), so none is left RUNNING; the exception then propagates."""
        self._open()
        previous = self.campaign_dir.acquire()
        clean = False
        status = "FAILED"
        error: BaseException | None = None
        try:
            self._setup(previous)
            with terminate_interrupts(self._handle_signals):
                try:
                    self._recover()
                    self._loop()
                    status = "FAILED" if self._stop_reason else "FINISHED"
                except (KeyboardInterrupt, Interrupted) as exc:
                    name = "SIGTERM" if isinstance(exc, Interrupted) else "Ctrl-C"
                    release_frames(exc)
                    self._abort(f"interrupted: the controller received {name}")
                    status = "KILLED"
                    raise KeyboardInterrupt from None
                except BaseException as exc:
                    # A full disk under any store ends the campaign with its one line.
                    full = disk_full(exc, self.config.tracking_uri())
                    self._abort(f"controller error: {type(full or exc).__name__}: {full or exc}")
                    if full is not None and full is not exc:
                        raise full from None
                    raise
            clean = True
        except BaseException as exc:
            error = exc
            raise
        finally:
            with cleanup_shielded(second_exits=self._handle_signals):
                close_campaign(
                    self._end(),
                    status,
                    executor=self._executor,
                    coordination=self._coordination,
                    campaign_dir=self.campaign_dir,
                    clean=clean,
                    error=error,
                )
                note_space_changes(self._end())
        result = campaign_result(self._end(), self.budget)
        if self._importance and self._stop_reason is None and self.timings:
            result.importance = analyse(self._end())
        if self._stop_reason is not None and self._failures.spent():
            raise BudgetExhausted(self._stop_reason)
        return result

    # ----- setup and recovery --------------------------------------------------------------

    def _open(self) -> None:
        """What `run` checks before anything is created (campaign directory, study, MLflow
        run): the lineage store's access; the ``warm_start`` sources (a bad one: one line,
        exit 2); the study's search space, refused (one line, exit 2) when the study was run
        with another one, unless ``allow_space_change``. See `tuner.campaign._history`."""
        if self._recorder is None:
            self._recorder = build_recorder(self.config)  # checks the lineage store's access
        # A bad warm_start source or a changed space: refused before anything is made.
        plan, unread = read_history(self.config, self._plan)
        if self._storage is None:
            self._storage = self._coordination.open_storage()
        self._preflight = preflight(
            self.config,
            self._storage,
            allow_space_change=self._allow_space_change,
            plan=plan,
            unread=unread,
        )

    def _setup(self, previous: Mapping[str, Any]) -> None:
        import optuna

        from tuner.search import StudyPlan, create_study

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        assert self._storage is not None and self._preflight is not None  # made by `_open`
        assert self._recorder is not None
        with self._coordination.setting_up():
            # First: the executor's warm parents import the trials' framework while the
            # study and the lineage store are set up.
            if self._executor is None:
                self._executor = build_executor(self.config, self.campaign_dir.trials)
            # Shared devices found at run time: the sampler and the progress line plan for
            # the trials the executor can run at once.
            self.config.resources.fit(self._executor.capacity)
            self.study = study = create_study(StudyPlan.of(self.config), self._storage)
            recalled = self._executor.recall(placed_trials(study.get_trials(deepcopy=False)))
            if recalled is not None:
                self._observer.message(recalled)
            for line in self._preflight.apply(study):
                self._observer.message(line)
            self.imported = count_imported(study)
            self._spending = Spending(
                limits_of(self.config, self.imported), self.imported, self._observer.message
            )
            self.counts, self._failures.failures = tally(study)
            # Trials with a fresh heartbeat belong to a live `tuner worker`: left alone.
            self._stale, live = self._coordination.orphans(study)
            dirty = (bool(self._stale) or previous.get("clean_exit") is False) and not live
            start_campaign_run(self._recorder, self.config, study, self._stale, reconcile=dirty)
            self._preflight.record(self._recorder)
            self._parts = build_parts(
                self.config,
                study=study,
                coordination=self._coordination,
                recorder=self._recorder,
                executor=self._executor,
                state_dir=self.campaign_dir.path,
                message=self._observer.message,
                prepare=self._prepare,
                started=self._started,
                failures=self._failures,
                count=self._count,
                stop=self._stop,
                take_step=self._spending.take_step if self.config.budget.steps else None,
            )
            self._spending.apply = self._parts.decisions.apply
        self._coordination.joined(study)

    def _recover(self) -> None:
        """End what dead controllers left: orphan process groups, RUNNING trials, runs."""
        assert self.study is not None and self._recorder is not None
        assert self._parts is not None
        if self._parts.scheduler is not None:
            import socket

            self._stale = self._parts.scheduler.recover(self._stale, socket.gethostname())
        self._coordination.recover(
            self.study, self._stale, recorder=self._recorder, message=self._observer.message
        )

    # ----- main loop -----------------------------------------------------------------------

    def _loop(self) -> None:
        assert self._executor is not None and self._parts is not None
        executor, queue, intake = self._executor, self._parts.ahead, self._parts.intake
        deadline = (
            time.monotonic() + self.config.budget.timeout if self.config.budget.timeout else None
        )
        self._notify(force=True)
        if self._failures.spent():
            self._stop_reason = self._failures.already_spent()
            return
        while True:
            raise_pending()  # a stop signal lands here, between two store operations
            stop_lost(self.running, self._coordination.lost_trials(), self._observer.message)
            ended = []
            for rt in list(self.running.values()):
                outcome = intake.collect(rt)
                if outcome is not None:
                    ended.append((rt, outcome))
            # A prepared trial takes a freed slot before the bookkeeping of the ended ones,
            # unless their failing could spend the failure budget (it would start only to be
            # killed).
            ahead = not self._failures.spent(len(ended))
            if ended and ahead and not self._launch_closed:
                queue.start_waiting(executor)
            self._settle(ended)
            fatal = getattr(self._recorder, "fatal", None)
            if fatal is not None:  # the lineage store or its spool is on a full disk
                raise fatal
            if self._stop_reason is not None:
                queue.discard()
                # Running trials are stopped (failure budget spent), marked and re-queued.
                self._terminate_and_mark(f"interrupted: {self._stop_reason}")
                return
            if self._spending.stop_spent(self.study, self.running.values()):
                # The message is the spending's; the running trials stop at their next step.
                self._launch_closed = self._launch_closed or f"{self._spending.reached} reached"
            if deadline is not None and time.monotonic() > deadline and not self._launch_closed:
                self._launch_closed = "budget.timeout reached: no new trials are started"
                self._observer.message(self._launch_closed)
            if self._launch_closed:
                queue.discard()
            exhausted = not self._launch_closed and not queue.fill(executor)
            if not exhausted and not self._launch_closed and self.running:
                queue.ask_ahead()
            if not self.running and (exhausted or self._launch_closed):
                queue.discard()
                assert self.study is not None
                self._spending.close_waiting(self.study, self._coordination.study_lock)
                return
            self._notify()
            with interruptible():
                executor.wait(self._poll)

    def _waiting(self) -> int:
        import optuna

        assert self.study is not None
        return len(self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)))

    def _prepare(self) -> Prepared | None:
        assert self._parts is not None
        scheduler = self._parts.scheduler
        if scheduler is not None:
            # A promoted trial no longer counts: its continuation (enqueued now) does.
            self.counts["PRUNED"] = max(0, self.counts["PRUNED"] - scheduler.before_ask())
        return self._parts.launcher.prepare(self._spending.limits)

    def _started(self, rt: RunningTrial, seconds: float) -> None:
        self.running[rt.number] = rt
        self.timings.append(seconds)

    def _settle(self, ended: list[tuple[RunningTrial, TrialOutcome]]) -> None:
        """Ended attempts leave `running`; each is judged, told, counted and its MLflow run
        ended (`tuner.campaign._outcome.Bookkeeping`). One failing does not stop the others
        (an unsettled one would be re-queued and trained again); its error is raised after."""
        assert self._parts is not None
        error: Exception | None = None
        for rt, outcome in ended:
            t0 = time.perf_counter()
            self.running.pop(rt.number, None)
            try:
                self._parts.bookkeeping.settle(rt, outcome)
                self._notify(force=True)
            except Exception as exc:  # settle the others first; the first error is raised below
                error = error or exc
            if self.timings:
                self.timings[-1] += time.perf_counter() - t0
        if error is not None:
            raise error

    def _count(self, state: TrialState) -> None:
        self.counts[state.value] += 1

    def _stop(self, reason: str) -> None:
        """The failure budget is spent: the loop stops its running trials and ends."""
        if self._stop_reason is None:
            self._stop_reason = reason

    # ----- stopping ------------------------------------------------------------------------

    def _abort(self, reason: str) -> None:
        self._launch_closed = reason
        with cleanup_shielded(second_exits=self._handle_signals):
            self._terminate_and_mark(reason)

    def _terminate_and_mark(self, reason: str) -> None:
        if self.study is None:
            return
        if self._parts is not None:
            try:
                self._parts.ahead.drop()
            except Exception as exc:  # the storage may be what failed: stop the trials anyway
                self._observer.message(f"trials asked ahead were not put back: {exc}")
        stop_and_mark(
            self.study,
            self.running,
            reason,
            executor=self._executor,
            recorder=self._recorder,
            message=self._observer.message,
        )

    # ----- reporting -----------------------------------------------------------------------

    def _notify(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_update >= 0.25:
            self._last_update = now
            self._observer.update(self)

    def spent(self) -> Spent:
        """What the study's trials spent so far: counted trials (imported ones left out),
        reported steps, device-hours (every controller's)."""
        return self._spending.spent(self.study)

    def study_counts(self) -> dict[str, int]:
        """The study's counted trials by final state (COMPLETE, PRUNED, FAIL), every
        controller's: on a study shared with workers, `counts` holds only this one's."""
        return study_counts(self.study, self.counts)

    def best(self) -> dict[str, Any] | None:
        """The best trial so far; None before the study is loaded or when its storage
        cannot be read (the closing steps still run: the storage may be what failed)."""
        if self.study is None:
            return None
        try:
            return best_of(self.study)
        except Exception:  # the storage may be what failed; closing goes on without a best
            return None

    def _end(self) -> CampaignEnd:
        """What the campaign's closing steps read, as it stands now."""
        return CampaignEnd(
            config=self.config,
            study=self.study,
            recorder=self._recorder,
            counts=dict(self.counts),
            best=self.best(),
            stop_reason=self._stop_reason or self._launch_closed,
            message=self._observer.message,
        )
