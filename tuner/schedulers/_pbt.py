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

With ``synch: true`` the members decide together: a member that reaches a multiple of
``interval`` pauses there once its checkpoint of that step is committed (PRUNED,
``tuner.paused_at``); it is told the boundaries (`pause_every`), so it waits at each, after
that commit, for the controller's verdict, however fast it runs. When no member runs any
more (each is paused at its boundary, or ended), every paused member is decided about in
member order, by the values members trained themselves, with choices seeded by
``sampler.seed``, the member and the step: the bottom ``quantile`` exploit a top member's
checkpoint of that step, the others continue from their own. Decisions then depend on what
the trials reported, not on when, so a seeded campaign of deterministic trials makes the
same ones every time; each member's process restarts at each boundary.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import checkpoints, faults
from tuner.checkpoints import copy_latest
from tuner.schedulers._base import Scheduler, SchedulerContext
from tuner.schedulers._decision import KEEP, AttemptView, Continue, Decision, Pause
from tuner.search import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    IMPORTED_ATTR,
    LAUNCH_ATTR,
    MEMBER_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    STALE_ATTR,
    SUPERSEDES_ATTR,
    chain_attrs,
    first_trial,
    internals,
)

if TYPE_CHECKING:
    import optuna

    from tuner.config import Parameter, PbtConfig, Perturb

__all__ = ["Pbt", "explore", "member_of"]


def member_of(trial: optuna.trial.FrozenTrial | optuna.Trial) -> int:
    """The member a trial belongs to: the number of the member's first trial."""
    value = trial.user_attrs.get(MEMBER_ATTR)
    return first_trial(trial) if value is None else int(value)


def _copied_at(trial: optuna.Trial | optuna.trial.FrozenTrial) -> int:
    """The step a continuation copied its member's checkpoint at (0 for any other segment)."""
    exploit = trial.user_attrs.get(EXPLOIT_ATTR)
    return int(exploit.get("from_step", 0)) if isinstance(exploit, dict) else 0


def _standing(
    trials: list[optuna.trial.FrozenTrial], interval: int, *, at_pause: bool = False
) -> dict[int, tuple[float, optuna.trial.FrozenTrial, int | None]]:
    """``{member: (latest value it trained itself, its newest segment, the step of its last
    copy or None)}``
    of the members that are ready: their newest segment has reported a value of its own (a
    step past the checkpoint it copied, if it copied one) and has trained ``interval`` steps
    of its own since it started or last copied. ``at_pause``: values up to the step each
    segment paused at (``synch``: a step it reported after, before its process stopped, is
    left out, so that the ranking does not depend on how fast the pause took effect)."""
    base: dict[int, int] = {}
    newest: dict[int, optuna.trial.FrozenTrial] = {}
    for t in sorted(trials, key=lambda t: t.number):
        if IMPORTED_ATTR in t.system_attrs:
            continue
        member = member_of(t)
        newest[member] = t  # a continuation not yet started makes its member not ready
        if isinstance(t.user_attrs.get(EXPLOIT_ATTR), dict):
            base[member] = _copied_at(t)
    out: dict[int, tuple[float, optuna.trial.FrozenTrial, int | None]] = {}
    for member, t in newest.items():
        copied = base.get(member)
        upto = t.user_attrs.get(PAUSED_ATTR) if at_pause else None
        own = [
            s
            for s in t.intermediate_values
            if (copied is None or s > copied) and (upto is None or s <= int(upto))
        ]
        if not own or max(own) - (copied or 0) < interval:
            continue
        value = t.intermediate_values[max(own)]
        if math.isfinite(value):
            out[member] = (value, t, copied)
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
        study) is told PRUNED as exploited, not re-run: the continuation goes on for it; one
        it had paused (``synch``) is told PRUNED as paused."""
        exploits = {
            int(t.user_attrs[EXPLOIT_ATTR]["replaces"]): t
            for t in self.study.get_trials(deepcopy=False)
            if isinstance(t.user_attrs.get(EXPLOIT_ATTR), dict)
        }
        left = []
        for frozen in orphans:
            cont = exploits.get(frozen.number)
            paused = frozen.user_attrs.get(PAUSED_ATTR)
            if cont is None and paused is not None and frozen.user_attrs.get(LAUNCH_ATTR):
                why = (
                    f"paused by the pbt scheduler at step {paused} (its controller died before "
                    "the pause was told; the next controller told it)"
                )
                self._end_pruned(frozen, host, why, {})
                continue
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

    def reported(self, rt: AttemptView, before: int, step: int) -> Decision:
        if self.section.synch:
            return self._at_boundary(before, step)
        every, base = self.section.interval, _copied_at(rt.trial)
        if step - base < every or (step - base) // every == (max(before, base) - base) // every:
            return KEEP  # not another `interval` of its own steps since it started or copied
        with self._locked():
            judged = self._judge(rt, step)
        if judged is None:
            return KEEP
        decision, (source, number, seen) = judged
        # Outside the lock (a checkpoint may be large): the donor's checkpoint the decision
        # saw, before the donor's own pruning of old checkpoints removes it.
        copy_latest(source, self._folder(number), lambda text: None, at_most=seen)
        return decision

    def pause_every(self, trial: optuna.Trial | optuna.trial.FrozenTrial) -> int | None:
        """With ``synch``, every multiple of ``interval``: the trial waits at each boundary
        for the verdict, so a member that runs faster than its reports are read still pauses
        at the boundary instead of at a later one."""
        return self.section.interval if self.section.synch else None

    def _at_boundary(self, before: int, step: int) -> Decision:
        every = self.section.interval
        boundary = step // every * every
        if boundary <= max(before, 0) or boundary < every:
            return KEEP
        self._dirty = True
        return Pause(boundary, f"at step {boundary} until every member reached it", by="pbt")

    def _continuations(self) -> int:
        """With ``synch``: once no member runs or waits to start (each is paused at a
        boundary or ended), every paused member is decided about, in member order, from the
        values the members trained themselves up to their boundary, and continues: as itself
        from its own checkpoint, or exploiting a top member's (also paused there)."""
        import optuna

        if not self.section.synch:
            return 0
        trials = self.study.get_trials(deepcopy=False)
        newest: dict[int, optuna.trial.FrozenTrial] = {}
        for t in sorted(trials, key=lambda t: t.number):
            if IMPORTED_ATTR not in t.system_attrs:
                newest[member_of(t)] = t
        live = (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)
        if len(newest) < self.section.population or any(t.state in live for t in newest.values()):
            return 0
        paused = {
            m: t
            for m, t in newest.items()
            if t.state == optuna.trial.TrialState.PRUNED and t.user_attrs.get(PAUSED_ATTR)
        }
        scores = {
            m: score
            for m, score in _standing(trials, self.section.interval, at_pause=True).items()
            if m in paused
        }
        n = len(scores)
        k = min(math.ceil(n * self.section.quantile), n // 2)
        order = sorted(scores, key=lambda m: (-scores[m][0] if self._maximize else scores[m][0], m))
        top, bottom = order[:k], set(order[-k:]) if k else set()
        for me in sorted(paused):
            segment = paused[me]
            rng = random.Random(f"{self.context.seed}:{me}:{segment.user_attrs[PAUSED_ATTR]}")
            if me in bottom:
                self._exploit(me, segment, paused[rng.choice(top)], rng)
            else:
                self.study.add_trial(
                    optuna.trial.create_trial(
                        state=optuna.trial.TrialState.WAITING,
                        params=segment.params,
                        distributions=segment.distributions,
                        user_attrs={
                            ATTEMPT_ATTR: int(segment.user_attrs.get(ATTEMPT_ATTR, 1)) + 1,
                            **chain_attrs(segment.user_attrs, segment.number),
                            MEMBER_ATTR: me,
                        },
                        system_attrs={SUPERSEDES_ATTR: segment.number},
                    )
                )
        return len(paused)

    def _explored(
        self, donor: optuna.trial.FrozenTrial, rng: random.Random
    ) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """The donor's parameters with those named in ``perturb`` explored, and what changed
        (``{name: [before, after]}``)."""
        params = explore(donor.params, self.section.perturb, self.context.parameters, rng)
        changed = {
            name: [donor.params[name], params[name]]
            for name in self.section.perturb
            if name in params and params[name] != donor.params[name]
        }
        return params, changed

    @staticmethod
    def _continuation(
        me: int,
        donor: optuna.trial.FrozenTrial,
        params: dict[str, Any],
        *,
        replaces: int,
        step: int,
        from_step: int,
        changed: dict[str, list[Any]],
        system_attrs: dict[str, Any] | None = None,
    ) -> optuna.trial.FrozenTrial:
        """The WAITING trial by which member ``me`` goes on from ``donor``'s checkpoint of
        ``from_step`` with ``params``, in place of trial ``replaces`` at ``step``."""
        import optuna

        return optuna.trial.create_trial(
            state=optuna.trial.TrialState.WAITING,
            params=params,
            distributions=donor.distributions,
            user_attrs={
                ATTEMPT_ATTR: int(donor.user_attrs.get(ATTEMPT_ATTR, 1)) + 1,
                PARENT_ATTR: donor.number,
                MEMBER_ATTR: me,
                EXPLOIT_ATTR: {
                    "member": me,
                    "replaces": replaces,
                    "donor": donor.number,
                    "step": step,
                    "from_step": from_step,
                    "perturbed": changed,
                },
            },
            system_attrs=system_attrs or {},
        )

    def _exploit(
        self,
        me: int,
        segment: optuna.trial.FrozenTrial,
        donor: optuna.trial.FrozenTrial,
        rng: random.Random,
    ) -> None:

        step = int(donor.user_attrs[PAUSED_ATTR])
        params, changed = self._explored(donor, rng)
        number = internals.n_trials(self.study)
        self.study.add_trial(
            self._continuation(
                me,
                donor,
                params,
                replaces=segment.number,
                step=int(segment.user_attrs[PAUSED_ATTR]),
                from_step=step,
                changed=changed,
                system_attrs={SUPERSEDES_ATTR: segment.number},
            )
        )
        self._message(
            f"trial {segment.number}: exploited by pbt at step {step}: member {me} continues "
            f"as trial {number} from trial {donor.number}'s checkpoint"
            + (f"; explored {changed}" if changed else "")
        )

    def _judge(self, rt: AttemptView, step: int) -> tuple[Continue, tuple[Path, int, int]] | None:
        import optuna

        trials = self.study.get_trials(deepcopy=False)
        scores = _standing(trials, self.section.interval)
        me = member_of(rt.trial)
        n = len(scores)
        k = min(math.ceil(n * self.section.quantile), n // 2)
        if me not in scores or scores[me][1].number != rt.number or k == 0:
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
            copied = scores[m][2]
            if found is not None and (copied is None or found.step > copied):
                held[m] = found.step  # a checkpoint of its own training
        if not held:
            return None
        rng = random.Random(f"{self.context.seed}:{me}:{step}")
        chosen = rng.choice(sorted(held))
        donor = scores[chosen][1]
        params, changed = self._explored(donor, rng)
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
            self._continuation(
                me,
                donor,
                params,
                replaces=rt.number,
                step=step,
                from_step=held[chosen],
                changed=changed,
            )
        )
        faults.point("pbt-copied-not-told")
        self._message(f"trial {rt.number}: {why}" + (f"; explored {changed}" if changed else ""))
        decision = Continue(number, why, {EXPLOITED_ATTR: step})
        return decision, (self._folder(donor), number, held[chosen])
