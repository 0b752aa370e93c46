"""Population-based training (Jaderberg et al. 2017), asynchronous, on the study.

The population's members are the campaign's first ``population`` trials (``budget.trials``
equals it). A member is a chain of segments: its first trial, then each continuation that
replaced it (``tuner.member`` names the member's first trial). When a member's segment
reports a step that crosses a multiple of ``interval``, it is ranked, by its latest value,
among every member's latest value. In the bottom ``quantile`` (at most half of them), it
*exploits*: a running member of the top quantile is picked (a seeded random choice), the
segment is marked superseded and stopped (PRUNED, ``tuner.exploited_at`` = the step), and a
WAITING continuation is added with the donor's parameters, those named in ``perturb``
changed (*explore*). The continuation starts from the donor's latest good checkpoint,
copied into its own folder (``tuner.parent_trial`` = the donor; ``tuner.exploit`` says which
member, which donor, the step and what changed), and takes over the donor's reports up to
that step, so the member's run shows one curve.

Crash safety: the segment is marked superseded before its continuation is added; a
controller that dies between the two leaves a superseded RUNNING trial, which the next
controller re-runs from the member's own checkpoint (the exploit is lost, the member is
not). One that dies after both, before the segment was told, leaves it RUNNING with its
continuation in the study: the next controller tells it PRUNED (`recover`), so the member
goes on once. Each decision is made under the study lock.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lineage import checkpoints, faults
from tuner.checkpoints import copy_latest
from tuner.schedulers._base import Scheduler, SchedulerContext
from tuner.search import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    IMPORTED_ATTR,
    MEMBER_ATTR,
    PARENT_ATTR,
    STALE_ATTR,
    first_trial,
    internals,
)

if TYPE_CHECKING:
    import optuna

    from tuner.campaign import RunningTrial
    from tuner.config import Parameter, PbtConfig, Perturb

__all__ = ["Pbt", "explore", "member_of"]


def member_of(trial: optuna.trial.FrozenTrial | optuna.Trial) -> int:
    """The member a trial belongs to: the number of the member's first trial."""
    value = trial.user_attrs.get(MEMBER_ATTR)
    return first_trial(trial) if value is None else int(value)


def _scores(
    trials: list[optuna.trial.FrozenTrial],
) -> dict[int, tuple[float, optuna.trial.FrozenTrial]]:
    """``{member: (latest value, its newest segment)}`` of the members that reported."""
    out: dict[int, tuple[float, optuna.trial.FrozenTrial]] = {}
    for t in trials:  # by number: a newer segment replaces an older one
        if IMPORTED_ATTR in t.system_attrs or not t.intermediate_values:
            continue
        value = t.intermediate_values[max(t.intermediate_values)]
        if math.isfinite(value):
            out[member_of(t)] = (value, t)
    return out


def explore(
    params: dict[str, Any],
    perturb: dict[str, Perturb],
    space: Mapping[str, Parameter],
    rng: random.Random,
) -> dict[str, Any]:
    """``params`` with each parameter of ``perturb`` changed as it says, within ``space``."""
    out = dict(params)
    for name, how in perturb.items():
        if name not in out:
            continue
        param, value = space[name], out[name]
        if how.resample is not None:
            if rng.random() < how.resample:
                value = _draw(param, rng)
        elif how.factor is not None:
            value = _clip(param, float(value) * rng.choice(how.factor))
        elif param.choices:
            i = param.choices.index(value) if value in param.choices else 0
            j = i + rng.choice((-1, 1))
            j = j if 0 <= j < len(param.choices) else i - (j - i)
            value = param.choices[min(max(j, 0), len(param.choices) - 1)]
        out[name] = value
    return out


def _draw(param: Parameter, rng: random.Random) -> Any:
    if param.type == "categorical":
        return rng.choice(param.choices or [None])
    assert param.low is not None and param.high is not None  # a number parameter
    low, high = float(param.low), float(param.high)
    value = (
        math.exp(rng.uniform(math.log(low), math.log(high)))
        if param.log
        else rng.uniform(low, high)
    )
    return _clip(param, value)


def _clip(param: Parameter, value: float) -> Any:
    assert param.low is not None and param.high is not None  # a number parameter
    low, high = float(param.low), float(param.high)
    value = min(max(value, low), high)
    if param.step:
        value = low + round((value - low) / float(param.step)) * float(param.step)
        value = min(value, high)
    return round(value) if param.type == "int" else value


class Pbt(Scheduler):
    """See the module's text."""

    def __init__(
        self, section: PbtConfig, context: SchedulerContext, study: Any, **kwargs: Any
    ) -> None:
        super().__init__(context, study, **kwargs)
        self.section = section
        self._maximize = context.target.goal == "maximize"

    def recover(
        self, orphans: list[optuna.trial.FrozenTrial], host: str
    ) -> list[optuna.trial.FrozenTrial]:
        """A member's trial its dead controller had replaced (its continuation is in the
        study) is told PRUNED as exploited, not re-run: the continuation goes on for it."""
        exploits = {
            int(t.user_attrs[EXPLOIT_ATTR]["replaces"]): t
            for t in self.study.get_trials(deepcopy=False)
            if isinstance(t.user_attrs.get(EXPLOIT_ATTR), dict)
        }
        left = []
        for frozen in orphans:
            cont = exploits.get(frozen.number)
            if cont is None:
                left.append(frozen)
                continue
            step = cont.user_attrs[EXPLOIT_ATTR].get("step")
            why = (
                f"exploited by pbt at step {step}: member {member_of(frozen)} continues as trial "
                f"{cont.number} (its controller died before this was told; the next one told it)"
            )
            self._end_pruned(frozen, host, why, {EXPLOITED_ATTR: step})
        return left

    def reported(self, rt: RunningTrial, before: int, step: int) -> None:
        if rt.prune_reason is not None or rt.superseded:
            return
        every = self.section.interval
        if step // every == max(before, 0) // every or step < every:
            return  # no multiple of interval crossed
        with self._locked():
            copy = self._judge(rt, step)
        if copy is not None:
            # Outside the lock (a checkpoint may be large): the donor's checkpoint the
            # decision saw, before the donor's own pruning of old checkpoints removes it.
            source, number, seen = copy
            copy_latest(source, self._folder(number), lambda text: None, at_most=seen)

    def _judge(self, rt: RunningTrial, step: int) -> tuple[Any, int, int] | None:
        import optuna

        trials = self.study.get_trials(deepcopy=False)
        scores = _scores(trials)
        me = member_of(rt.trial)
        n = len(scores)
        k = min(math.ceil(n * self.section.quantile), n // 2)
        if me not in scores or k == 0:
            return None
        order = sorted(scores, key=lambda m: (-scores[m][0] if self._maximize else scores[m][0], m))
        if me not in order[-k:]:
            return None
        running = optuna.trial.TrialState.RUNNING
        held: dict[int, int] = {}  # member: the step of its latest good checkpoint
        for m in order[:k]:
            segment = scores[m][1]
            if m == me or segment.state != running or STALE_ATTR in segment.system_attrs:
                continue
            found = checkpoints.latest_good(self._folder(segment))
            if found is not None:
                held[m] = found.step
        if not held:
            return None
        rng = random.Random(f"{self.context.seed}:{me}:{step}")
        chosen = rng.choice(sorted(held))
        donor = scores[chosen][1]
        params = explore(donor.params, self.section.perturb, self.context.parameters, rng)
        changed = {
            name: [donor.params[name], params[name]]
            for name in self.section.perturb
            if name in params and params[name] != donor.params[name]
        }
        storage, trial_id = internals.storage_of(self.study), internals.trial_id(rt.trial)
        number = internals.n_trials(self.study)
        why = (
            f"exploited by pbt at step {step} ({self.context.target.metric}="
            f"{scores[me][0]:.6g}, bottom {k} of {n}): member {me} continues as trial {number} "
            f"from trial {donor.number}'s checkpoint"
        )
        storage.set_trial_system_attr(trial_id, STALE_ATTR, why)  # first: see the module
        faults.point("pbt-marked-not-enqueued")
        self.study.add_trial(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState.WAITING,
                params=params,
                distributions=donor.distributions,
                user_attrs={
                    ATTEMPT_ATTR: 1,
                    PARENT_ATTR: donor.number,
                    MEMBER_ATTR: me,
                    EXPLOIT_ATTR: {
                        "member": me,
                        "replaces": rt.number,
                        "donor": donor.number,
                        "step": step,
                        "from_step": held[chosen],
                        "perturbed": changed,
                    },
                },
            )
        )
        faults.point("pbt-copied-not-told")
        rt.prune_reason = why
        rt.end_attrs[EXPLOITED_ATTR] = step
        rt.counted = False
        rt.handle.request_prune()
        self._message(f"trial {rt.number}: {why}" + (f"; explored {changed}" if changed else ""))
        return self._folder(donor), number, held[chosen]
