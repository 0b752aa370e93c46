"""From an asked trial to a running attempt: the parameters, then at start the MLflow run, the
spec (argv with ``{trial}`` and ``{run_id}`` filled) and the launch record."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import checkpoints
from lineage.masking import secret_values
from tuner import _protocol as protocol
from tuner.campaign._running import Prepared, RunningTrial
from tuner.checkpoints import copy_latest, make_store
from tuner.collectors import Collector, MlflowRunCollector, StdoutCollector, TrialApiCollector
from tuner.executors import TrialSpec, attempt_folder
from tuner.records import _tags as T
from tuner.search import _internals as internals
from tuner.search import continue_history, first_trial, parent_trial
from tuner.search._attrs import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    LAUNCH_ATTR,
    MEMBER_ATTR,
    PARENT_ATTR,
    PROMOTED_FROM_ATTR,
    RERUN_OF_ATTR,
    RESUMED_STEP_ATTR,
    RETRY_OF_USER_ATTR,
)

if TYPE_CHECKING:
    import optuna

    from tuner.config import CampaignConfig
    from tuner.coordination import Coordination
    from tuner.executors import Executor
    from tuner.records import LineageRecorder

__all__ = ["HPARAM_PREFIX", "PARAMS_FROM_TAG", "Launcher"]

#: The metric series of a PBT trial's changing parameters: ``hparam/<name>``.
HPARAM_PREFIX = "hparam/"
#: On a PBT continuation's run: the trial whose starting values its params hold.
PARAMS_FROM_TAG = "tuner.params_from"


class Launcher:
    """Prepares trials (ask, parameters; no run, no process yet), starts them on the executor
    (reserved MLflow run, spec, submit), and puts prepared trials that never start back in
    the queue.
    ``state_dir`` is the campaign's local state folder (attempt channels; checkpoints unless
    ``checkpoint.path`` names another). Called from the controller's thread only."""

    def __init__(
        self,
        config: CampaignConfig,
        *,
        study: optuna.Study,
        coordination: Coordination,
        recorder: LineageRecorder,
        executor: Executor,
        state_dir: Path,
        message: Callable[[str], Any] = lambda text: None,
    ) -> None:
        self.config = config
        self._study = study
        self._coordination = coordination
        self._recorder = recorder
        self._executor = executor
        self._message = message
        self._host = socket.gethostname()
        self._patterns = {name: m.regex for name, m in config.metrics.items()}
        self._trials_dir = state_dir / "trials"
        self._checkpoints = make_store(
            config.checkpoint,
            state_dir=state_dir,
            campaign=config.name,
            tracking_uri=config.tracking_uri(),
        )
        #: What ended attempts reported, for the continuation that resumes them (a retry
        #: started by this controller: its parent's run may still be in the recorder's queue).
        self._histories: dict[int, dict[str, tuple[list[int], list[float]]]] = {}

    def remember(self, number: int, history: dict[str, tuple[list[int], list[float]]]) -> None:
        """Keep what trial ``number``'s attempt reported, for a retry that resumes it."""
        self._histories[number] = history

    def checkpoint_folder(self, trial: optuna.Trial | optuna.trial.FrozenTrial | int) -> Path:
        """The checkpoint folder every attempt of ``trial``'s chain shares (a number: the
        folder of a chain that trial starts)."""
        return self._checkpoints.folder(trial if isinstance(trial, int) else first_trial(trial))

    def chain_ended(self, rt: RunningTrial) -> None:
        """Trim the checkpoints of ``rt``'s chain, which ended for good (COMPLETE, a FAIL not
        retried, PRUNED), to ``checkpoint.keep_finished``. A trial a scheduler
        stopped to continue later (ASHA's pause, PBT's exploit: ``end_attrs``) keeps them, and
        so does every trial under PBT, whose members' checkpoints seed continuations."""
        scheduler = self.config.scheduler
        if rt.end_attrs or (scheduler is not None and scheduler.name == "pbt"):
            return
        folder = self.checkpoint_folder(rt.trial)
        self._checkpoints.retire(folder, self.config.checkpoint.keep_finished)

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

    def _spec(
        self,
        trial: optuna.Trial,
        params: dict[str, Any],
        run_id: str,
        resume: tuple[str, int] | None = None,
    ) -> TrialSpec:
        env = protocol.run_env(
            params,
            tracking_uri=self.config.tracking_uri(),
            experiment_id=str(self._recorder.experiment_id),
            run_id=run_id,
        )
        env.update(
            protocol.checkpoint_env(
                str(self.checkpoint_folder(trial)),
                self.config.checkpoint.keep,
                resume,
                every=self.config.checkpoint.every,
            )
        )
        env.update(self._checkpoints.env())
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
        resume = self._resume_point(trial)
        run_id = self._recorder.reserve_run()
        try:
            spec = self._spec(trial, dict(prepared.params), run_id, resume)
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
        for attr in (
            RERUN_OF_ATTR,
            RETRY_OF_USER_ATTR,
            PARENT_ATTR,
            PROMOTED_FROM_ATTR,
            MEMBER_ATTR,
        ):
            if trial.user_attrs.get(attr) is not None:
                extra[attr] = str(trial.user_attrs[attr])
        if resume is not None:
            extra[RESUMED_STEP_ATTR] = str(resume[1])
        recorded = params
        if self._pbt and parent_trial(trial) is not None:
            # The run's params are the values its lineage started with (what importance
            # reads); the values each segment used are the run's hparam/<name> series.
            root = self._root(trial)
            recorded = {**params, **root.params}
            extra[PARAMS_FROM_TAG] = str(root.number)
        self._recorder.trial_started(
            run_id,
            number=trial.number,
            attempt=spec.attempt,
            params=recorded,
            argv=spec.argv,
            env=self.config.env,
            device=device,
            sampler=self.config.sampler.name,
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
        return self.config.scheduler is not None and self.config.scheduler.name == "pbt"

    def _root(self, trial: optuna.Trial) -> optuna.trial.FrozenTrial:
        """The first trial of ``trial``'s lineage (through every parent, across chains)."""
        trials = self._study.get_trials(deepcopy=False)
        at = parent_trial(trial)
        assert at is not None
        for _ in range(len(trials)):
            up = parent_trial(trials[at])
            if up is None:
                break
            at = up
        return trials[at]

    def _log_schedule(self, rt: RunningTrial, resumed: int | None) -> None:
        """The parameters PBT may change, as metric series ``hparam/<name>`` in the trial's
        run: the value each segment of its lineage started with, at the step it started."""
        assert self.config.scheduler is not None and self.config.scheduler.name == "pbt"
        names = [n for n in self.config.scheduler.perturb if n in rt.params]
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
        target = self.config.target.metric
        history = self._history(parent)
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
        self._message(
            f"trial {rt.number} continues trial {parent} from its checkpoint of step {step} "
            f"({copied} report(s) of {target!r} kept)"
        )

    def _history(self, number: int, depth: int = 0) -> dict[str, tuple[list[int], list[float]]]:
        """What trial ``number`` reported, completed with what the trials it continues
        reported up to the step it resumed from (its own attempt's channel holds only the
        steps after it)."""
        own = (
            self._histories.pop(number, None)
            or self._channel_history(number)
            or self._recorded_history(number)
        )
        frozen = self._study.get_trials(deepcopy=False)[number]
        parent, resumed = parent_trial(frozen), frozen.user_attrs.get(RESUMED_STEP_ATTR)
        target = own.get(self.config.target.metric, ([], []))[0]
        if resumed is None and parent is not None and target:
            # Its controller died before recording the step it resumed from: the attempt
            # reported from the step after it.
            resumed = min(target) - 1
        if parent is None or resumed is None or depth > 100:
            return own
        merged: dict[str, tuple[list[int], list[float]]] = {}
        for key, (steps, values) in self._history(parent, depth + 1).items():
            kept = [(s, v) for s, v in zip(steps, values, strict=True) if s <= int(resumed)]
            merged[key] = ([s for s, _ in kept], [v for _, v in kept])
        for key, (steps, values) in own.items():
            have = set(merged.get(key, ([], []))[0])
            old_steps, old_values = merged.setdefault(key, ([], []))
            for s, v in zip(steps, values, strict=True):
                if s > int(resumed) or s not in have:
                    old_steps.append(s)
                    old_values.append(v)
        return merged

    def _channel_history(self, number: int) -> dict[str, tuple[list[int], list[float]]]:
        """What trial ``number``'s attempt reported, read back from its channel file where
        this host has it (a local attempt whose controller died before reading it all)."""
        frozen = self._study.get_trials(deepcopy=False)[number]
        attempt = int(frozen.user_attrs.get(ATTEMPT_ATTR, 1))
        folder = attempt_folder(self._trials_dir, number, attempt)
        try:
            data = (folder / protocol.CHANNEL_FILE).read_bytes()
        except OSError:
            return {}
        history: dict[str, tuple[list[int], list[float]]] = {}
        for report in protocol.ChannelReader().feed(data):
            for key, value in report.metrics.items():
                steps, values = history.setdefault(key, ([], []))
                if report.step in steps:  # reported twice: the last one counts
                    values[steps.index(report.step)] = value
                else:
                    steps.append(report.step)
                    values.append(value)
        return history

    def _recorded_history(self, number: int) -> dict[str, tuple[list[int], list[float]]]:
        """Trial ``number``'s metric history as its MLflow run holds it (a continuation of a
        trial another controller ran); empty when the run cannot be read."""
        frozen = self._study.get_trials(deepcopy=False)[number]
        run_id = (frozen.user_attrs.get(LAUNCH_ATTR) or {}).get("run_id")
        if not run_id:
            return {}
        try:
            from mlflow.tracking import MlflowClient

            client = MlflowClient(tracking_uri=self.config.tracking_uri())
            history: dict[str, tuple[list[int], list[float]]] = {}
            for key in client.get_run(run_id).data.metrics:
                got = sorted(client.get_metric_history(run_id, key), key=lambda m: m.step)
                history[key] = ([m.step for m in got], [m.value for m in got])
            return history
        except Exception as exc:  # the copy in the study is what matters; say what is missing
            self._message(f"trial {number}: its MLflow run could not be read ({exc})")
            return {}

    def discard(self, prepared: Prepared) -> None:
        """A trial asked for but never started goes back to WAITING (same params; the next
        controller takes it first). It has no run yet."""
        import optuna

        internals.storage_of(self._study).set_trial_state_values(
            internals.trial_id(prepared.trial), optuna.trial.TrialState.WAITING
        )
