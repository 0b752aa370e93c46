"""The multi-fidelity Hartmann arms of ``bench_schedulers.py``: each arm's campaign driven in
this process over mf-prior-bench's functions, one trial at a time, at an epoch budget.

A configuration's curve (its error at fidelity 1..100, read as epochs 1..100) comes from
mf-prior-bench (`_mfpbench.Hartmann`); each reported epoch counts one epoch of the budget,
continuations included. What decides is the real code of each arm:

- ``random``, ``tpe``, ``tpe-median`` (the tuner's default), ``optuna-hyperband``: the
  sampler and pruner the tuner builds from a campaign config (``tuner.search.make_sampler``,
  ``make_pruner``), asked and told through an in-memory Optuna study;
- ``tuner-asha``, ``tuner-hyperband``, ``tuner-bohb``: the tuner's rung and bracket logic
  (``tuner.schedulers.Brackets``: which rung a report crosses, the cut there, which paused
  trial is promoted next, the continuation that resumes it) and its sampler with
  ``model: rung`` for BOHB; a paused trial is told PRUNED with ``tuner.paused_at``, and a
  promotion resumes its curve at the next epoch, as a checkpoint would;
- ``ray-async-hyperband``: Ray Tune's ``AsyncHyperBandScheduler`` (its ``on_trial_add`` /
  ``on_trial_result`` decide; no Ray cluster is needed for them), with TPE told each trial's
  last result as ``OptunaSearch`` tells it;
- ``ray-hyperband``: Ray Tune's synchronous ``HyperBandScheduler``, driven as Tune's trial
  controller drives it with one trial running at a time (`_HyperBandController`): the
  scheduler picks the next trial to run (``choose_trial_to_run``: a pending trial, or a
  paused one its bracket promoted), pauses a trial at its bracket's milestone until the
  bracket's other trials reach it, and stops the bad half through the controller's
  ``stop_trial``; TPE is asked for a new trial whenever none waits to start, as Tune keeps
  one suggested trial pending (its limit for a searcher without a concurrency limit). TPE
  is told as ``OptunaSearch`` is: a trial stopped while running, its last result; one
  stopped while paused, nothing (pruned).

A campaign's trace is the list of its full-fidelity results in epoch order: ``[epochs spent
when it finished, error]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mfpbench import Hartmann

MAX = 100
ARMS = (
    "tpe-median",
    "tpe",
    "random",
    "optuna-hyperband",
    "ray-async-hyperband",
    "ray-hyperband",
    "tuner-asha",
    "tuner-hyperband",
    "tuner-bohb",
)


def _config(arm: str, names: list[str], seed: int, opts: dict[str, Any]) -> Any:
    from tuner.config import parse_config

    pruner: dict[str, Any] = {"name": "none"}
    if arm == "tpe-median":
        pruner = {"name": "median"}
    elif arm == "optuna-hyperband":
        pruner = {
            "name": "hyperband",
            "options": {"min_resource": 1, "max_resource": MAX, "reduction_factor": 3},
        }
    data: dict[str, Any] = {
        "name": f"{arm}-{seed}",
        "command": ["python", "train.py"],
        "target": {"metric": "error", "goal": "minimize"},
        "parameters": {n: {"type": "float", "low": 0.0, "high": 1.0} for n in names},
        "budget": {"trials": 100000},
        "sampler": {"name": "random" if arm == "random" else "tpe", "seed": seed},
        "pruner": pruner,
    }
    if arm.startswith("tuner-"):
        data["scheduler"] = {
            "name": "asha",
            "reduction_factor": 3,
            "min_resource": opts["min_resource"],
            "max_resource": MAX,
            "brackets": 1 if arm == "tuner-asha" else opts["brackets"],
            "model": "rung" if arm == "tuner-bohb" else "study",
        }
    return parse_config(data)


def _study(arm: str, names: list[str], task: str, seed: int, opts: dict[str, Any]) -> Any:
    import optuna

    from tuner.search import SamplerPlan, make_pruner, make_sampler

    config = _config(arm, names, seed, opts)
    return optuna.create_study(
        # Optuna's HyperbandPruner deals trials to brackets by the study's name.
        study_name=f"{task}-{seed}",
        direction="minimize",
        sampler=make_sampler(SamplerPlan.of(config)),
        pruner=make_pruner(config.pruner, error=config.error),
    ), config


def _ask(study: Any, config: Any) -> tuple[Any, dict[str, Any]]:
    from tuner.search import sample_params

    trial = study.ask()
    return trial, sample_params(trial, config.parameters)


def run(arm: str, task: str, seed: int, opts: dict[str, Any], bench: Hartmann) -> list[list[float]]:
    """One campaign of ``arm`` on ``task``: its full-fidelity results ``[epochs, error]``."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names, _ = bench.space(task, seed)
    study, config = _study(arm, names, task, seed, opts)
    budget = opts["budget"]
    if arm.startswith("tuner-"):
        return _tuner(study, config, bench, task, seed, budget)
    if arm == "ray-hyperband":
        return _ray_hyperband(study, config, bench, task, seed, budget)
    if arm.startswith("ray-"):
        return _ray(study, config, bench, task, seed, budget, opts)
    spent, out = 0, []
    while spent < budget:
        trial, params = _ask(study, config)
        curve = bench.curve(task, seed, params)
        state = optuna.trial.TrialState.COMPLETE
        for step in range(1, MAX + 1):
            if spent >= budget:
                return out
            spent += 1
            trial.report(curve[step - 1], step)
            if step == MAX:
                out.append([spent, curve[-1]])
            elif trial.should_prune():
                state = optuna.trial.TrialState.PRUNED
                break
        study.tell(
            trial, curve[-1] if state == optuna.trial.TrialState.COMPLETE else None, state=state
        )
    return out


def _tuner(
    study: Any, config: Any, bench: Hartmann, task: str, seed: int, budget: int
) -> list[list[float]]:
    import optuna

    from tuner.schedulers import Brackets, continuation
    from tuner.search import PAUSED_ATTR, PROMOTED_FROM_ATTR, continue_history, first_trial

    section = config.scheduler
    brackets = Brackets(
        section.min_resource, section.max_resource, section.reduction_factor, section.brackets
    )
    spent, out = 0, []
    curves: dict[int, list[float]] = {}
    while spent < budget:
        trials = study.get_trials(deepcopy=False)
        found = brackets.promotable(trials, maximize=False)
        if found is not None:
            study.add_trial(continuation(found[0]))
        trial, params = _ask(study, config)
        chain = first_trial(trial)
        start = 0
        parent = trial.user_attrs.get(PROMOTED_FROM_ATTR)
        if parent is not None:
            start = int(study.get_trials(deepcopy=False)[parent].user_attrs[PAUSED_ATTR])
            continue_history(study, trial, parent, start)
        if chain not in curves:
            curves[chain] = bench.curve(task, seed, params)
        curve = curves[chain]
        paused = None
        for step in range(start + 1, MAX + 1):
            if spent >= budget:
                return out
            spent += 1
            trial.report(curve[step - 1], step)
            if step == MAX:
                out.append([spent, curve[-1]])
                break
            rung = brackets.crossed(chain, step - 1, step)
            if rung is None:
                continue
            cut = brackets.cut(study.get_trials(deepcopy=False), chain, rung, maximize=False)
            if cut is not None and not cut[0]:
                paused = rung
                break
        if paused is None:
            study.tell(trial, curve[-1])
        else:
            trial.set_user_attr(PAUSED_ATTR, paused)
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    return out


def _ray(
    study: Any,
    config: Any,
    bench: Hartmann,
    task: str,
    seed: int,
    budget: int,
    opts: dict[str, Any],
) -> list[list[float]]:
    import numpy as np
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import AsyncHyperBandScheduler, TrialScheduler

    np.random.seed(seed)  # the bracket each trial joins
    scheduler = AsyncHyperBandScheduler(
        time_attr="epoch",
        metric="error",
        mode="min",
        max_t=MAX,
        grace_period=1,
        reduction_factor=3,
        brackets=opts["ray_brackets"],
    )
    spent, out = 0, []
    while spent < budget:
        trial, params = _ask(study, config)
        ray_trial = Trial("mfh", config=params, stub=True)
        scheduler.on_trial_add(None, ray_trial)
        curve = bench.curve(task, seed, params)
        for step in range(1, MAX + 1):
            if spent >= budget:
                return out
            spent += 1
            result = {"epoch": step, "error": curve[step - 1]}
            if step == MAX:
                out.append([spent, curve[-1]])
                scheduler.on_trial_complete(None, ray_trial, result)
                break
            if scheduler.on_trial_result(None, ray_trial, result) == TrialScheduler.STOP:
                scheduler.on_trial_remove(None, ray_trial)
                break
        # OptunaSearch tells a stopped trial its last result, as a completed one.
        study.tell(trial, curve[step - 1])
    return out


class _HyperBandController:
    """What ``HyperBandScheduler`` asks of Tune's trial controller: ``stop_trial`` of a trial
    that is not running (a paused trial its bracket cut), as ``TuneController.stop_trial``
    does it: the scheduler removes the trial, the searcher is told no result."""

    def __init__(self, scheduler: Any, study: Any) -> None:
        self.scheduler = scheduler
        self.study = study
        self.optuna_trials: dict[Any, Any] = {}

    def stop_trial(self, trial: Any) -> None:
        import optuna
        from ray.tune.experiment import Trial

        if trial.status in (Trial.PENDING, Trial.PAUSED):
            self.scheduler.on_trial_remove(self, trial)
            self.study.tell(self.optuna_trials[trial], state=optuna.trial.TrialState.PRUNED)
        trial.set_status(Trial.TERMINATED)


def _ray_hyperband(
    study: Any, config: Any, bench: Hartmann, task: str, seed: int, budget: int
) -> list[list[float]]:
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import HyperBandScheduler, TrialScheduler

    scheduler = HyperBandScheduler(
        time_attr="epoch", metric="error", mode="min", max_t=MAX, reduction_factor=3
    )
    # Ray types the argument as its TuneController; this stands in for the part used.
    controller: Any = _HyperBandController(scheduler, study)
    curves: dict[Any, list[float]] = {}
    done: dict[Any, int] = {}  # epochs each trial has trained
    spent, out = 0, []
    while spent < budget:
        # Tune keeps one trial a searcher suggested waiting to start (its pending-trials
        # limit for a searcher without a ConcurrencyLimiter is 1): the scheduler adds it to a
        # bracket when it is suggested, before the trials ahead of it have results.
        if not any(t.status == Trial.PENDING and done[t] == 0 for t in done):
            trial, params = _ask(study, config)
            new = Trial("mfh", config=params, stub=True)
            controller.optuna_trials[new] = trial
            curves[new] = bench.curve(task, seed, params)
            done[new] = 0
            scheduler.on_trial_add(controller, new)
        ray_trial = scheduler.choose_trial_to_run(controller)
        if ray_trial is None:
            raise RuntimeError("HyperBandScheduler chose no trial beside a pending one")
        ray_trial.set_status(Trial.RUNNING)
        curve = curves[ray_trial]
        for step in range(done[ray_trial] + 1, MAX + 1):
            if spent >= budget:
                return out
            spent += 1
            done[ray_trial] = step
            result = {"epoch": step, "error": curve[step - 1]}
            if step == MAX:
                out.append([spent, curve[-1]])
                decision = TrialScheduler.STOP  # the trainable ends: Tune completes it
            else:
                decision = scheduler.on_trial_result(controller, ray_trial, result)
            if decision == TrialScheduler.PAUSE:
                ray_trial.set_status(Trial.PAUSED)
                break
            if decision == TrialScheduler.STOP:
                # TuneController.stop_trial of a running trial: both are told its last result.
                scheduler.on_trial_complete(controller, ray_trial, result)
                study.tell(controller.optuna_trials[ray_trial], curve[step - 1])
                ray_trial.set_status(Trial.TERMINATED)
                break
    return out
