"""From an asked trial to a running attempt: the parameters, then at start the MLflow run, the
spec (argv with ``{trial}`` and ``{run_id}`` filled) and the launch record."""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING, Any

from lineage.masking import secret_values
from tuner import _protocol as protocol
from tuner.campaign._running import Prepared, RunningTrial
from tuner.collectors import Collector, MlflowRunCollector, StdoutCollector, TrialApiCollector
from tuner.executors import TrialSpec
from tuner.records import _tags as T
from tuner.search import _internals as internals
from tuner.search._attrs import ATTEMPT_ATTR, LAUNCH_ATTR, RERUN_OF_ATTR, RETRY_OF_USER_ATTR

if TYPE_CHECKING:
    import optuna

    from tuner.config import CampaignConfig
    from tuner.coordination import Coordination
    from tuner.executors import Executor
    from tuner.records import LineageRecorder

__all__ = ["Launcher"]


class Launcher:
    """Prepares trials (ask, parameters; no run, no process yet), starts them on the executor
    (reserved MLflow run, spec, submit), and puts prepared trials that never start back in
    the queue.
    Called from the controller's thread only."""

    def __init__(
        self,
        config: CampaignConfig,
        *,
        study: optuna.Study,
        coordination: Coordination,
        recorder: LineageRecorder,
        executor: Executor,
    ) -> None:
        self.config = config
        self._study = study
        self._coordination = coordination
        self._recorder = recorder
        self._executor = executor
        self._host = socket.gethostname()
        self._patterns = {name: m.regex for name, m in config.metrics.items()}

    def prepare(self, budget: int) -> Prepared | None:
        """Ask for the next trial and fix its parameters; None when the budget is reached.
        Its MLflow run and argv come when it starts (`start`)."""
        from tuner.search import sample_params

        t0 = time.perf_counter()
        trial = self._coordination.ask(self._study, budget)
        if trial is None:
            return None
        params = sample_params(trial, self.config)
        flush = getattr(internals.storage_of(self._study), "flush", None)
        if flush is not None:  # the params are in the database before the process starts
            flush(internals.trial_id(trial))
        return Prepared(trial, params, time.perf_counter() - t0)

    def _spec(self, trial: optuna.Trial, params: dict[str, Any], run_id: str) -> TrialSpec:
        env = protocol.run_env(
            params,
            tracking_uri=self.config.tracking_uri(),
            experiment_id=str(self._recorder.experiment_id),
            run_id=run_id,
        )
        env.update(self.config.env)
        return TrialSpec(
            number=trial.number,
            attempt=int(trial.user_attrs.get(ATTEMPT_ATTR, 1)),
            params=params,
            argv=self.config.argv(params, trial=trial.number, run_id=run_id),
            env=env,
            workdir=str(self.config.workdir) if self.config.workdir else None,
            timeout=self.config.trial.timeout,
            grace_period=self.config.trial.grace_period,
            run_id=run_id,
        )

    def start(self, prepared: Prepared) -> RunningTrial:
        """Take a run for the attempt, submit it, and record where it runs (in the study, for
        `tuner resume`, and in its MLflow run, whose start time becomes the process's)."""
        trial = prepared.trial
        run_id = self._recorder.reserve_run()
        try:
            spec = self._spec(trial, dict(prepared.params), run_id)
            handle = self._executor.submit(spec)
        except BaseException:
            self._recorder.release_run(run_id)
            raise
        device = handle.device_label()
        collectors: list[Collector] = [TrialApiCollector()]
        if self._patterns:
            collectors.append(StdoutCollector(self._patterns))
        collectors.append(MlflowRunCollector(self._recorder.latest_metrics))
        params = dict(spec.params)
        rt = RunningTrial(trial, handle, params, spec.attempt, run_id, collectors, device)
        rt.secrets = secret_values(spec.argv, {**os.environ, **spec.env})
        launch = {
            **handle.process_info(),
            "host": self._host,
            "device": device,
            "run_id": run_id,
            "attempt": spec.attempt,
            "started": handle.started_at,
        }
        trial.set_user_attr(LAUNCH_ATTR, launch)
        extra = {T.CAMPAIGN: self.config.name}
        for attr in (RERUN_OF_ATTR, RETRY_OF_USER_ATTR):
            if trial.user_attrs.get(attr) is not None:
                extra[attr] = str(trial.user_attrs[attr])
        self._recorder.trial_started(
            run_id,
            number=trial.number,
            attempt=spec.attempt,
            params=params,
            argv=spec.argv,
            env=self.config.env,
            device=device,
            sampler=self.config.sampler.name,
            started_at=handle.started_at,
            extra_tags=extra,
        )
        return rt

    def discard(self, prepared: Prepared) -> None:
        """A trial asked for but never started goes back to WAITING (same params; the next
        controller takes it first). It has no run yet."""
        import optuna

        internals.storage_of(self._study).set_trial_state_values(
            internals.trial_id(prepared.trial), optuna.trial.TrialState.WAITING
        )
