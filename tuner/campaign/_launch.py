"""From an asked trial to a running attempt: the parameters, then at start the MLflow run, the
spec (argv with ``{trial}`` and ``{run_id}`` filled) and the launch record."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import checkpoints, faults
from lineage.masking import secret_values
from tuner import _protocol as protocol
from tuner.campaign._launch_plan import HPARAM_PREFIX, LaunchPlan
from tuner.campaign._reported import History, ReportedHistory
from tuner.campaign._running import Prepared, RunningTrial
from tuner.checkpoints import copy_latest, make_store
from tuner.collectors import Collector, MlflowRunCollector, StdoutCollector, TrialApiCollector
from tuner.executors import TrialHandle, TrialSpec
from tuner.records import tags as T
from tuner.search import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    EXPLORING_ATTR,
    LAUNCH_ATTR,
    MEMBER_ATTR,
    PARENT_ATTR,
    PROMOTED_FROM_ATTR,
    RERUN_OF_ATTR,
    RESUMED_STEP_ATTR,
    RETRY_OF_USER_ATTR,
    continue_history,
    first_trial,
    internals,
    parent_trial,
)

if TYPE_CHECKING:
    import optuna

    from tuner.coordination import Coordination, Limits
    from tuner.executors import Executor
    from tuner.records import LineageRecorder

__all__ = ["Launcher"]


class Launcher:
    """Prepares trials (ask, parameters; no run, no process yet), starts them on the executor
    (reserved MLflow run, spec, submit), and puts prepared trials that never start back in
    the queue.
    ``state_dir`` is the campaign's local state folder (attempt channels; checkpoints unless
    ``checkpoint.path`` names another). Called from the controller's thread only."""

    def __init__(
        self,
        plan: LaunchPlan,
        *,
        study: optuna.Study,
        coordination: Coordination,
        recorder: LineageRecorder,
        executor: Executor,
        state_dir: Path,
        message: Callable[[str], Any] = lambda text: None,
    ) -> None:
        self.plan = plan
        self._study = study
        self._coordination = coordination
        self._recorder = recorder
        self._executor = executor
        self._message = message
        #: The steps at which the scheduler may pause a trial (`Scheduler.pause_steps`); set
        #: once the scheduler exists, which needs this launcher's checkpoint folders.
        self.pause_steps: Callable[[optuna.Trial], tuple[int, ...]] = lambda trial: ()
        #: N where every positive multiple of N is such a step (`Scheduler.pause_every`).
        self.pause_every: Callable[[optuna.Trial], int | None] = lambda trial: None
        self._host = socket.gethostname()
        self._checkpoints = make_store(
            plan.checkpoint,
            state_dir=state_dir,
            campaign=plan.campaign,
            tracking_uri=plan.tracking_uri,
        )
        self._reported = ReportedHistory(
            study,
            trials_dir=state_dir / "trials",
            tracking_uri=plan.tracking_uri,
            target=plan.target,
            message=message,
        )

    def remember(self, number: int, history: History) -> None:
        """Keep what trial ``number``'s attempt reported, for a retry that resumes it."""
        self._reported.remember(number, history)

    def checkpoint_folder(self, trial: optuna.Trial | optuna.trial.FrozenTrial | int) -> Path:
        """The checkpoint folder every attempt of ``trial``'s chain shares (a number: the
        folder of a chain that trial starts)."""
        return self._checkpoints.folder(trial if isinstance(trial, int) else first_trial(trial))

    def chain_ended(self, rt: RunningTrial) -> None:
        """Trim the checkpoints of ``rt``'s chain, which ended for good (COMPLETE, a FAIL not
        retried, PRUNED), to ``checkpoint.keep_finished``. A trial a scheduler
        stopped to continue later (ASHA's pause, PBT's exploit: ``end_attrs``) keeps them, and
        so does every trial under PBT, whose members' checkpoints seed continuations."""
        if rt.end_attrs or self._pbt:
            return
        folder = self.checkpoint_folder(rt.trial)
        self._checkpoints.retire(folder, self.plan.checkpoint.keep_finished)

    def _resume_point(self, trial: optuna.Trial) -> tuple[str, int] | None:
        parent = parent_trial(trial)
        if parent is None:
            return None

        def warn(text: str) -> None:
            self._message(f"trial {trial.number}: {text}")

        folder = self.checkpoint_folder(trial)
        source = self.checkpoint_folder(self._study.get_trials(deepcopy=False)[parent])
        try:
            self._checkpoints.fetch(source, self._chain_runs(parent))
        except Exception as exc:  # resume from what the folder holds, or from scratch
            warn(
                f"checkpoints could not be fetched from the {self._checkpoints.name} store ({exc})"
            )
        if source != folder and checkpoints.latest_good(folder) is None:
            # A continuation that starts from another chain's checkpoint (a PBT exploit):
            # that checkpoint is copied into its own folder, which it then goes on writing;
            # the one the decision saw when it is still there (the other chain went on).
            exploit = trial.user_attrs.get(EXPLOIT_ATTR)
            seen = exploit.get("from_step") if isinstance(exploit, dict) else None
            copy_latest(source, folder, warn, at_most=seen)
        found = checkpoints.latest_good(folder, warn=warn)
        return None if found is None else (str(found.path), found.step)

    def _changed(self, trial: optuna.Trial, params: Mapping[str, Any], step: int) -> list[str]:
        """The parameters whose values ``trial`` changed from those of the trial that wrote
        the checkpoint of ``step`` it continues (a PBT exploit's explored ones): the
        script's values of these win over the checkpoint's."""
        trials = self._study.get_trials(deepcopy=False)
        at = parent_trial(trial)
        # Up the parents to the trial that trained ``step``, past each one that resumed
        # from that step or a later one (it holds that checkpoint without having written it).
        while at is not None:
            t = trials[at]
            resumed, up = t.user_attrs.get(RESUMED_STEP_ATTR), parent_trial(t)
            if up is None or resumed is None or int(resumed) < step:
                break
            at = up
        if at is None:
            return []
        before = trials[at].params
        return sorted(n for n, v in before.items() if n in params and params[n] != v)

    def _chain_runs(self, number: int) -> list[str]:
        """The MLflow runs of trial ``number``'s attempt and of the earlier attempts of its
        chain (the trials that share its checkpoint folder), newest first."""
        trials = self._study.get_trials(deepcopy=False)
        chain = first_trial(trials[number])
        runs: list[str] = []
        at: int | None = number
        while at is not None and at < len(trials) and first_trial(trials[at]) == chain:
            run_id = (trials[at].user_attrs.get(LAUNCH_ATTR) or {}).get("run_id")
            if run_id:
                runs.append(run_id)
            at = parent_trial(trials[at])
        return runs

    def prepare(self, budget: int | Limits) -> Prepared | None:
        """Ask for the next trial and fix its parameters; None when the budget is reached.
        Its MLflow run and argv come when it starts (`start`)."""
        t0 = time.perf_counter()
        trial = self._coordination.ask(self._study, budget)
        if trial is None:
            return None
        params = self.plan.sample(trial)
        flush = getattr(internals.storage_of(self._study), "flush", None)
        if flush is not None:  # the params are in the database before the process starts
            flush(internals.trial_id(trial))
        faults.point("asked-not-started")
        return Prepared(trial, params, time.perf_counter() - t0)

    def _spec(
        self,
        trial: optuna.Trial,
        params: dict[str, Any],
        run_id: str,
        resume: tuple[str, int] | None = None,
    ) -> TrialSpec:
        env = protocol.run_env(
            params,
            tracking_uri=self.plan.tracking_uri,
            experiment_id=str(self._recorder.experiment_id),
            run_id=run_id,
        )
        env.update(
            protocol.checkpoint_env(
                str(self.checkpoint_folder(trial)),
                self.plan.checkpoint.keep,
                resume,
                every=self.plan.checkpoint.every,
                changed=() if resume is None else self._changed(trial, params, resume[1]),
            )
        )
        env.update(self._checkpoints.env())
        # A continuation is not judged again at or before the step it resumes from.
        after = -1 if resume is None else resume[1]
        steps = [s for s in self.pause_steps(trial) if s > after]
        env.update(
            protocol.pause_env(
                steps, wait=self.plan.trial.grace_period, every=self.pause_every(trial)
            )
        )
        env.update(self.plan.env)
        return TrialSpec(
            number=trial.number,
            attempt=int(trial.user_attrs.get(ATTEMPT_ATTR, 1)),
            params=params,
            argv=self.plan.argv(params, trial=trial.number, run_id=run_id),
            env=env,
            workdir=str(self.plan.workdir) if self.plan.workdir else None,
            timeout=self.plan.trial.timeout,
            grace_period=self.plan.trial.grace_period,
            run_id=run_id,
        )

    def start(self, prepared: Prepared) -> RunningTrial:
        """Take a run for the attempt, submit it, and record where it runs (in the study, for
        `tuner resume`, and in its MLflow run, whose start time becomes the process's)."""
        trial = prepared.trial
        resume = self._resume_point(trial)
        if resume is not None:
            # Before the process starts: a controller that dies before `_continue` leaves a
            # trial whose reports (maybe none: a checkpoint of the last step) the next one
            # completes from its parent's up to this step.
            trial.set_user_attr(RESUMED_STEP_ATTR, resume[1])
        run_id = self._recorder.reserve_run()
        try:
            spec = self._spec(trial, dict(prepared.params), run_id, resume)
            handle = self._executor.submit(spec)
        except BaseException:
            self._recorder.release_run(run_id)
            raise
        try:
            return self._started(trial, spec, handle, resume)
        except BaseException:
            # The process runs but the controller will not follow it: it is stopped now,
            # not at the executor's shutdown, and the trial goes back to WAITING with it.
            handle.terminate()
            self._recorder.release_run(run_id)
            raise

    def _started(
        self,
        trial: optuna.Trial,
        spec: TrialSpec,
        handle: TrialHandle,
        resume: tuple[str, int] | None,
    ) -> RunningTrial:
        """Follow and record the attempt whose process ``handle`` runs."""
        faults.point("after-fork-before-launch-record")
        run_id = spec.run_id
        assert run_id is not None
        device = handle.device_label()
        collectors: list[Collector] = [TrialApiCollector()]
        if self.plan.patterns:
            collectors.append(StdoutCollector(self.plan.patterns))
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
        extra = {T.CAMPAIGN: self.plan.campaign}
        # From the storage: the sampler marks an exploring trial as it is asked, after the
        # trial object took its copy of the attributes.
        attrs = internals.storage_of(self._study).get_trial_user_attrs(internals.trial_id(trial))
        for attr in (
            RERUN_OF_ATTR,
            RETRY_OF_USER_ATTR,
            PARENT_ATTR,
            PROMOTED_FROM_ATTR,
            MEMBER_ATTR,
            EXPLORING_ATTR,
        ):
            if attrs.get(attr) is not None:
                extra[attr] = str(attrs[attr])
        if resume is not None:
            extra[RESUMED_STEP_ATTR] = str(resume[1])
        # The run's params are the values on this attempt's command line (a PBT
        # continuation's explored ones), which a script logging its own params repeats;
        # the values earlier segments of its lineage used are its hparam/<name> series.
        self._recorder.trial_started(
            run_id,
            number=trial.number,
            attempt=spec.attempt,
            params=params,
            argv=spec.argv,
            env=self.plan.env,
            device=device,
            sampler=self.plan.sampler,
            started_at=handle.started_at,
            extra_tags=extra,
        )
        if resume is not None:
            self._continue(rt, resume[1])
        if self._pbt:
            self._log_schedule(rt, resume[1] if resume is not None else None)
        return rt

    @property
    def _pbt(self) -> bool:
        return self.plan.perturbed is not None

    def _log_schedule(self, rt: RunningTrial, resumed: int | None) -> None:
        """The parameters PBT may change, as metric series ``hparam/<name>`` in the trial's
        run: the value each segment of its lineage started with, at the step it started."""
        assert self.plan.perturbed is not None
        names = [n for n in self.plan.perturbed if n in rt.params]
        trials = self._study.get_trials(deepcopy=False)
        segments = [(0 if resumed is None else resumed + 1, rt.params)]
        at = parent_trial(rt.trial)
        while at is not None and at < len(trials):
            t = trials[at]
            step = t.user_attrs.get(RESUMED_STEP_ATTR)
            segments.append((0 if parent_trial(t) is None else int(step or 0) + 1, t.params))
            at = parent_trial(t)
        now = time.time()
        points = []
        seen: set[int] = set()
        for start, params in segments:  # newest first: a later segment's value wins its step
            if start in seen:
                continue
            seen.add(start)
            for name in names:
                value = params.get(name)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    points.append((f"{HPARAM_PREFIX}{name}", float(value), start, now))
        if rt.run_id and points:
            self._recorder.trial_metrics(rt.run_id, points)

    def _continue(self, rt: RunningTrial, step: int) -> None:
        """The attempt resumes its chain's checkpoint of ``step``: it takes over the parent's
        reports up to ``step``, in the study (the pruner's curve) and in its MLflow run (one
        continuous curve; the lost attempt's later reports are dropped)."""
        parent = parent_trial(rt.trial)
        assert parent is not None
        rt.resumed_step = step
        target = self.plan.target
        history = self._reported.of(parent)
        steps, values = history.get(target, ([], []))
        reported = dict(zip(steps, values, strict=True))
        copied = continue_history(self._study, rt.trial, parent, step, reported)
        points: list[tuple[str, float, int, float]] = []
        now = time.time()
        for key, (steps, values) in history.items():
            kept = [(s, v) for s, v in zip(steps, values, strict=True) if s <= step]
            if not kept or key.startswith(HPARAM_PREFIX):  # the schedule: `_log_schedule`
                continue
            rt.history[key] = ([s for s, _ in kept], [v for _, v in kept])
            rt.latest[key] = kept[-1][1]
            points += [(key, v, s, now) for s, v in kept]
            if key == target:
                rt.reported_steps.update(s for s, _ in kept)
        if rt.run_id and points:
            self._recorder.trial_metrics(rt.run_id, points)
        if not self._pbt:  # a PBT segment's series start where it was copied over
            rt.carry_from = tuple(self._chain_runs(parent))
        self._message(
            f"trial {rt.number} continues trial {parent} from its checkpoint of step {step} "
            f"({copied} report(s) of {target!r} kept)"
        )

    def discard(self, prepared: Prepared) -> None:
        """A trial asked for but never started goes back to WAITING (same params; the next
        controller takes it first). It has no run yet."""
        import optuna

        trial_id = internals.trial_id(prepared.trial)
        internals.storage_of(self._study).set_trial_state_values(
            trial_id, optuna.trial.TrialState.WAITING
        )
        # No longer this controller's: its heartbeat stops now, or a worker that takes the
        # trial and dies would leave it beaten here, never stale.
        self._coordination.trial_ended(trial_id)
