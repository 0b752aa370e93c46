"""The campaign controller: Optuna ask/tell, trial launches on executor slots, metric
collection, pruning, failures, retries, recovery after a crash.

Budget accounting (the same rule as `tuner._heartbeat.counted_trials`, so that workers and
the controller agree): every trial of the study counts, whatever its state, except trials
*superseded* by a copy with the same parameters (system attribute ``tuner:stale``). A failed
attempt that is retried, or a trial interrupted by a crash or Ctrl-C and re-queued, is
superseded; a trial that failed its last attempt is not. So a campaign ends with exactly
``budget.trials`` counted trials, each COMPLETE, PRUNED or FAIL (failed after all its retries).
``budget.max_failures`` counts failed attempts (a retried failure counts too; an interrupted
trial does not).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lineage._secrets import scrub_text, secret_values
from tuner._campaign import CampaignDir
from tuner._errors import BudgetExhausted, ConfigError, TunerError
from tuner._heartbeat import (
    STALE_ATTR,
    Heartbeat,
    StudyLock,
    ask_within_budget,
    counted_trials,
    default_timing,
    live_trial_ids,
)
from tuner._intake import MetricIntake
from tuner._outcome import (
    _device_label,
    _load_online_check,
    _signal_name,
    _tail_text,
    best_of,
    judge,
)
from tuner._recovery import ATTEMPT_ATTR, FAIL_ATTR, LAUNCH_ATTR, recover_stale, supersede
from tuner._running import CampaignResult, Observer, Prepared, RunningTrial
from tuner._state import TrialState
from tuner._summary import campaign_params, campaign_tags, run_importance, summary_tags
from tuner.collectors import Collector, MlflowRunCollector, StdoutCollector, TrialApiCollector
from tuner.executors._base import Executor, TrialOutcome, TrialSpec
from tuner.executors._factory import default_executor

if TYPE_CHECKING:
    import optuna

    from tuner._lineage import LineageRecorder
    from tuner.config import CampaignConfig

__all__ = ["CampaignResult", "Controller", "Observer", "RunningTrial"]  # re-exported

PRUNE_ATTR = "prune_reason"
FAILED_ATTEMPT = "tuner:failed_attempt"


class _Interrupted(BaseException):
    """SIGTERM/SIGHUP to the controller: stop like Ctrl-C."""


class Controller:
    """Runs one campaign to its budget.

    The outside world is injected: ``executor`` (default: local slots from
    ``config.resources``), ``storage`` (an Optuna storage; default: the config's RDB URL with
    the exclusive write-through cache) and ``recorder`` (default: MLflow at
    ``config.tracking_uri()``). `run` may be called once.
    """

    def __init__(
        self,
        config: CampaignConfig,
        *,
        executor: Executor | None = None,
        storage: optuna.storages.BaseStorage | None = None,
        recorder: LineageRecorder | None = None,
        observer: Observer | None = None,
        poll_interval: float = 0.05,
        importance: bool = True,
        handle_signals: bool = True,
    ) -> None:
        self.config = config
        self.campaign_dir = CampaignDir(config.base_dir, config.name)
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
        self.failures = 0
        self.started_at = time.time()
        self.budget = config.budget.trials
        self._stop_reason: str | None = None
        self._launch_closed: str | None = None
        self._last_failure: str | None = None
        self._last_update = 0.0
        self._sampler_name = config.sampler.name
        self._host = socket.gethostname()
        self._patterns = {name: m.regex for name, m in config.metrics.items()}
        self.timings: list[float] = []  # controller seconds per trial (ask + launch + tell)
        # Set by `tuner worker` (tuner._worker): heartbeats of the trials this process runs.
        self.heartbeat: Heartbeat | None = None
        self._stale: list[Any] = []
        self._prepared: list[Prepared] = []

    # ----- public --------------------------------------------------------------------------

    @property
    def finished(self) -> int:
        assert self.study is not None
        return counted_trials(self.study) - len(self.running) - self._waiting()

    def run(self) -> CampaignResult:
        """Run the campaign until ``budget.trials`` trials are counted, the failure budget is
        spent (`BudgetExhausted`, after cleanup), ``budget.timeout`` passed, or it is stopped
        (Ctrl-C / SIGTERM: running trials are terminated, marked and re-queued; then
        `KeyboardInterrupt` is raised again)."""
        previous = self.campaign_dir.acquire()
        clean = False
        old_handlers: dict[signal.Signals, Any] = {}
        parent_status = "FAILED"
        try:
            self._setup(previous)
            if self._handle_signals and threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGTERM, signal.SIGHUP):
                    old_handlers[sig] = signal.signal(sig, self._on_signal)
            try:
                self._recover(previous)
                self._loop()
                parent_status = "FAILED" if self._stop_reason else "FINISHED"
            except (KeyboardInterrupt, _Interrupted) as exc:
                name = "SIGTERM" if isinstance(exc, _Interrupted) else "Ctrl-C"
                self._abort(f"interrupted: the controller received {name}")
                parent_status = "KILLED"
                raise KeyboardInterrupt from None
            except BaseException as exc:
                self._abort(f"controller error: {type(exc).__name__}: {exc}")
                raise
            clean = True
        finally:
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
            if self._executor is not None:
                self._executor.shutdown()
            if self._recorder is not None:
                self._recorder.close(
                    parent_status,
                    tags=summary_tags(
                        self.counts, self.best(), self._stop_reason or self._launch_closed
                    ),
                )
            self.campaign_dir.release(clean=clean)
        result = self._result()
        if self._importance and self._stop_reason is None and self.timings:
            result.importance = run_importance(self.config, self.counts["COMPLETE"])
        if self._stop_reason is not None and self.failures >= self.config.budget.max_failures:
            raise BudgetExhausted(self._stop_reason)
        return result

    # ----- setup and recovery --------------------------------------------------------------

    def _setup(self, previous: Mapping[str, Any]) -> None:
        import optuna

        from tuner._optuna_factory import make_pruner, make_sampler
        from tuner._study import open_storage

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        url = self.config.optuna_storage_url()
        if self._storage is None:
            # A server database may be shared with `tuner worker`s: no exclusive cache there.
            self._storage = open_storage(url, exclusive=url.startswith("sqlite"))
        self._lock = StudyLock(url, self.config.study_name)
        directions = self.config.directions
        try:
            self.study = optuna.create_study(
                storage=self._storage,
                study_name=self.config.study_name,
                directions=list(directions),  # type: ignore[arg-type]
                sampler=make_sampler(self.config),
                pruner=make_pruner(self.config),
                load_if_exists=True,
            )
        except ValueError as exc:
            raise TunerError(f"Optuna storage {url}: {exc}") from None
        have = [d.name.lower() for d in self.study.directions]
        if have != list(directions):
            raise ConfigError(
                f"Optuna storage {url}: study {self.config.study_name!r} exists with directions "
                f"{have}, but the config asks for {list(directions)}; use another name"
            )
        for trial in self.study.get_trials(deepcopy=False):
            if trial.state.name in self.counts and STALE_ATTR not in trial.system_attrs:
                self.counts[trial.state.name] += 1
            if trial.state.name == "FAIL" and trial.system_attrs.get(FAILED_ATTEMPT):
                self.failures += 1
        if self._recorder is None:
            from tuner._lineage import LineageRecorder
            from tuner._worker import check_tracking_access

            # A server that refuses the credentials: one line (exit 2), before any trial.
            check_tracking_access(self.config.tracking_uri())

            self._recorder = LineageRecorder(
                self.config.tracking_uri(),
                self.config.experiment,
                self.config.name,
                pool_size=self.config.resources.parallel + 1,
            )
        parent = self.study.user_attrs.get("mlflow_parent_run_id")
        # Trials with a fresh heartbeat belong to a live `tuner worker`: leave them alone.
        running = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        live = (
            live_trial_ids(url, self.config.study_name, default_timing()[1]) if running else set()
        )
        self._stale = [t for t in running if t._trial_id not in live]
        dirty = (bool(self._stale) or previous.get("clean_exit") is False) and not live
        self._recorder.start(
            parent_run_id=parent,
            params=campaign_params(self.config),
            tags=campaign_tags(self.config),
            reconcile=(
                "interrupted: the controller died while the trial ran; re-run as another trial"
                if dirty
                else None
            ),
            used_runs={
                str(t.user_attrs[LAUNCH_ATTR]["run_id"]): t.number
                for t in self._stale
                if (t.user_attrs.get(LAUNCH_ATTR) or {}).get("run_id")
            },
        )
        if self._recorder.parent_run_id and self._recorder.parent_run_id != parent:
            self.study.set_user_attr("mlflow_parent_run_id", self._recorder.parent_run_id)
        if self._executor is None:
            self._executor = default_executor(self.config, self.campaign_dir.trials)
        online_check = _load_online_check() if self.config.diagnosis.early_stop else None
        self._intake = MetricIntake(self.config, self._recorder, online_check)

    def _recover(self, previous: Mapping[str, Any]) -> None:
        """End what a dead controller left: orphan process groups, RUNNING trials, runs."""
        del previous
        assert self.study is not None
        grace = float(self.config.trial.grace_period or 5)
        recover_stale(self.study, self._stale, self._host, grace, self._observer.message)

    # ----- main loop -----------------------------------------------------------------------

    def _loop(self) -> None:
        assert self._executor is not None
        executor = self._executor
        deadline = (
            time.monotonic() + self.config.budget.timeout if self.config.budget.timeout else None
        )
        self._notify(force=True)
        if self.failures >= self.config.budget.max_failures:
            self._stop_reason = (
                f"campaign {self.config.name!r} already has {self.failures} failed trial "
                f"attempt(s), budget.max_failures={self.config.budget.max_failures}; raise it "
                "to continue"
            )
            return
        while True:
            ended = []
            for rt in list(self.running.values()):
                outcome = self._intake.collect(rt)
                if outcome is not None:
                    ended.append((rt, outcome))
            # A prepared trial takes a freed slot before the bookkeeping of the ended ones,
            # unless their failing could spend the failure budget (it would start only to be
            # killed).
            ahead = self.failures + len(ended) < self.config.budget.max_failures
            while (
                ended
                and ahead
                and self._prepared
                and not self._launch_closed
                and executor.free_slots()
            ):
                self._start(self._prepared.pop(0))
            for rt, outcome in ended:
                t0 = time.perf_counter()
                self._finalize(rt, outcome)
                if self.timings:
                    self.timings[-1] += time.perf_counter() - t0
            if self._stop_reason is not None:
                self._discard_prepared(f"interrupted: {self._stop_reason}")
                self._stop_all(self._stop_reason)
                return
            if deadline is not None and time.monotonic() > deadline and not self._launch_closed:
                self._launch_closed = "budget.timeout reached: no new trials are started"
                self._observer.message(self._launch_closed)
            if self._launch_closed:
                self._discard_prepared(f"not started: {self._launch_closed}")
            exhausted = False
            while not self._launch_closed and executor.free_slots() > 0:
                prepared = self._prepared.pop(0) if self._prepared else self._prepare()
                if prepared is None:
                    exhausted = True
                    break
                self._start(prepared)
            if not exhausted and not self._launch_closed and not self._prepared and self.running:
                # Ask for the next trial while the slots are busy: a freed slot then only
                # waits for the process to start.
                prepared = self._prepare()
                if prepared is not None:
                    self._prepared.append(prepared)
            if not self.running and (exhausted or self._launch_closed):
                self._discard_prepared("not started: the campaign ended")
                return
            self._notify()
            executor.wait(self._poll)

    def _waiting(self) -> int:
        import optuna

        assert self.study is not None
        return len(self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)))

    def _prepare(self) -> Prepared | None:
        """Ask Optuna for the next trial and build its spec (no process yet); None when the
        budget is reached."""
        from tuner._space import sample_params

        assert self.study is not None and self._recorder is not None
        t0 = time.perf_counter()
        trial = ask_within_budget(self.study, self.budget, self._lock, self.heartbeat)
        if trial is None:
            return None
        params = sample_params(trial, self.config)
        attempt = int(trial.user_attrs.get(ATTEMPT_ATTR, 1))
        run_id = self._recorder.reserve_run()
        env = {
            "TUNER_PARAMS": json.dumps(params),
            "MLFLOW_TRACKING_URI": self.config.tracking_uri(),
            "MLFLOW_EXPERIMENT_ID": str(self._recorder.experiment_id),
            "MLFLOW_RUN_ID": run_id,
            **self.config.env,
        }
        spec = TrialSpec(
            number=trial.number,
            attempt=attempt,
            params=params,
            argv=self.config.render_command(params),
            env=env,
            workdir=str(self.config.workdir) if self.config.workdir else None,
            timeout=self.config.trial.timeout,
            grace_period=float(self.config.trial.grace_period or 10.0),
            run_id=run_id,
        )
        flush = getattr(self.study._storage, "flush", None)
        if flush is not None:  # the params are in the database before the process starts
            flush(trial._trial_id)
        return Prepared(trial, spec, time.perf_counter() - t0)

    def _start(self, prepared: Prepared) -> None:
        assert self._executor is not None and self._recorder is not None
        t0 = time.perf_counter()
        trial, spec = prepared.trial, prepared.spec
        run_id = spec.run_id or ""
        handle = self._executor.submit(spec)
        device = _device_label(handle)
        collectors: list[Collector] = [TrialApiCollector()]
        if self._patterns:
            collectors.append(StdoutCollector(self._patterns))
        collectors.append(MlflowRunCollector(self._recorder.latest_metrics))
        params = dict(spec.params)
        rt = RunningTrial(trial, handle, params, spec.attempt, run_id, collectors, device)
        rt.secrets = secret_values(spec.argv, {**os.environ, **spec.env})
        self.running[trial.number] = rt
        launch = {
            **handle.process_info(),
            "host": self._host,
            "device": device,
            "run_id": run_id,
            "attempt": spec.attempt,
            "started": handle.started_at,
        }
        trial.set_user_attr(LAUNCH_ATTR, launch)
        self._recorder.trial_started(
            run_id,
            number=trial.number,
            attempt=spec.attempt,
            params=params,
            argv=spec.argv,
            env=self.config.env,
            device=device,
            sampler=self._sampler_name,
            extra_tags={"tuner.campaign": self.config.name},
        )
        self.timings.append(prepared.seconds + time.perf_counter() - t0)

    def _discard_prepared(self, reason: str) -> None:
        """Trials asked for but never started go back to WAITING (same params; the next
        controller takes them first); their reserved runs are freed."""
        import optuna

        assert self.study is not None and self._recorder is not None
        del reason  # nothing ran, so there is nothing to explain in the records
        while self._prepared:
            prepared = self._prepared.pop(0)
            self.study._storage.set_trial_state_values(
                prepared.trial._trial_id, optuna.trial.TrialState.WAITING
            )
            if prepared.spec.run_id:
                self._recorder.release_run(prepared.spec.run_id)

    def _finalize(self, rt: RunningTrial, outcome: TrialOutcome) -> None:
        import optuna

        assert self.study is not None and self._recorder is not None
        self.running.pop(rt.number, None)
        state, values, reason = self._judge(rt, outcome)
        if reason:
            reason = scrub_text(reason, rt.secrets)
        rt.state = rt.state.to(state)
        storage, trial_id = self.study._storage, rt.trial._trial_id
        tags = {
            "tuner.state": state.value,
            "tuner.duration_s": f"{outcome.duration:.3f}",
        }
        if outcome.exit_code is not None:
            tags["tuner.exit_code"] = str(outcome.exit_code)
        if outcome.signal is not None:
            tags["tuner.signal"] = _signal_name(outcome.signal)
        retry_number: int | None = None
        if state is TrialState.COMPLETE:
            assert values is not None
            self.study.tell(rt.trial, values if self.config.multi_objective else values[0])
        elif state is TrialState.PRUNED:
            tags["tuner.prune_reason"] = reason or "pruned"
            storage.set_trial_user_attr(trial_id, PRUNE_ATTR, reason)
            self.study.tell(rt.trial, state=optuna.trial.TrialState.PRUNED)
        else:
            tags["tuner.fail_reason"] = reason or "failed"
            self.failures += 1
            self._last_failure = f"trial {rt.number}: {reason}"
            storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
            storage.set_trial_system_attr(trial_id, FAILED_ATTEMPT, True)
            retries = self.config.trial.retries
            retry = rt.attempt <= retries and self.failures < self.config.budget.max_failures
            if retry:
                storage.set_trial_system_attr(
                    trial_id, STALE_ATTR, f"failed attempt {rt.attempt}, retried"
                )
            self.study.tell(rt.trial, state=optuna.trial.TrialState.FAIL)
            if retry:
                self.study.enqueue_trial(
                    rt.params,
                    user_attrs={ATTEMPT_ATTR: rt.attempt + 1, "tuner.retry_of": rt.number},
                    skip_if_exists=False,
                )
                retry_number = self.study._storage.get_n_trials(self.study._study_id) - 1
                tags["tuner.retried_as"] = str(retry_number)
            self._observer.message(
                f"trial {rt.number} failed (attempt {rt.attempt}): {reason}"
                + (f"; retried as trial {retry_number}" if retry_number is not None else "")
            )
            if self.failures >= self.config.budget.max_failures and self._stop_reason is None:
                self._stop_reason = (
                    f"campaign {self.config.name!r} stopped: {self.failures} failed trial "
                    f"attempt(s) reached budget.max_failures={self.config.budget.max_failures}; "
                    f"last: {self._last_failure}"
                )
        if state is not TrialState.FAIL or retry_number is None:
            self.counts[state.value] += 1
        if values is not None:
            for name, value in zip(self.config.metric_names, values, strict=True):
                tags[f"tuner.value.{name}"] = repr(value)
        if rt.run_id:
            self._recorder.trial_finished(
                rt.run_id,
                status=state.mlflow_status,
                tags=tags,
                output_tail=scrub_text(_tail_text(outcome), rt.secrets),
            )
        self._notify(force=True)

    def _judge(
        self, rt: RunningTrial, outcome: TrialOutcome
    ) -> tuple[TrialState, list[float] | None, str | None]:
        return judge(self.config, rt, outcome)

    # ----- stopping ------------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: Any) -> None:
        raise _Interrupted(signum)

    def _stop_all(self, reason: str) -> None:
        """Stop running trials (failure budget spent) and mark them; they are re-queued."""
        self._terminate_and_mark(f"interrupted: {reason}")

    def _abort(self, reason: str) -> None:
        self._launch_closed = reason
        # Further signals during cleanup must not leave trials RUNNING.
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
        try:
            self._terminate_and_mark(reason)
        finally:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.default_int_handler)

    def _terminate_and_mark(self, reason: str) -> None:
        if self.study is None:
            return
        if self._prepared and self._recorder is not None:
            self._discard_prepared(reason)
        if not self.running:
            return
        for rt in self.running.values():
            rt.handle.terminate()
        if self._executor is not None:
            self._executor.shutdown()
        for rt in list(self.running.values()):
            self.running.pop(rt.number, None)
            outcome = rt.handle.poll()
            try:
                frozen = self.study._storage.get_trial(rt.trial._trial_id)
                supersede(self.study, rt.number, rt.trial._trial_id, reason, rt.params, frozen)
            except Exception as exc:  # the storage itself may be what failed
                self._observer.message(f"trial {rt.number}: could not be marked: {exc}")
            if rt.run_id and self._recorder is not None:
                self._recorder.trial_finished(
                    rt.run_id,
                    status="KILLED",
                    tags={"tuner.state": "FAIL", "tuner.fail_reason": reason},
                    output_tail=scrub_text(_tail_text(outcome), rt.secrets) if outcome else "",
                )

    # ----- reporting -----------------------------------------------------------------------

    def _notify(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_update >= 0.25:
            self._last_update = now
            self._observer.update(self)

    def best(self) -> dict[str, Any] | None:
        if self.study is None:
            return None
        return best_of(self.study)

    def _result(self) -> CampaignResult:
        return CampaignResult(
            counts=dict(self.counts),
            finished=sum(self.counts.values()),
            budget=self.budget,
            best=self.best(),
            stop_reason=self._stop_reason or self._launch_closed,
            parent_run_id=self._recorder.parent_run_id if self._recorder else None,
            lineage_errors=self._recorder.errors if self._recorder else {},
        )
