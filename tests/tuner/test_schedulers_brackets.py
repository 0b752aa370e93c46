"""Hyperband brackets over the asha rungs: which bracket a chain joins, where its rungs sit,
the cut within a bracket, which paused trial is promoted, and what ``model: rung`` shows the
sampler. Plain trial records in a real in-memory Optuna study."""

from __future__ import annotations

from collections import Counter
from typing import Any

import optuna
import pytest

from tuner.schedulers import Brackets, continuation
from tuner.search import PAUSED_ATTR, first_trial
from tuner.search._rungs import RungModel, at_highest_rung

X = optuna.distributions.FloatDistribution(0.0, 1.0)


def _trial(number: int, curve: dict[int, float], paused: int | None = None) -> Any:
    state = (
        optuna.trial.TrialState.PRUNED if paused is not None else optuna.trial.TrialState.COMPLETE
    )
    frozen = optuna.trial.create_trial(
        state=state,
        value=None if paused is not None else curve[max(curve)],
        params={"x": number / 100},
        distributions={"x": X},
        intermediate_values=curve,
        user_attrs={} if paused is None else {PAUSED_ATTR: paused},
    )
    frozen.number = number
    return frozen


def test_bracket_s_starts_its_rungs_eta_to_the_s_later_and_one_bracket_is_plain_asha() -> None:
    b = Brackets(min_resource=1, max_resource=100, eta=3, count=3)
    assert b.ladder == (1, 3, 9, 27, 81)
    assert [b.rungs(s) for s in range(3)] == [(1, 3, 9, 27, 81), (3, 9, 27, 81), (9, 27, 81)]
    assert Brackets(1, 100, 3, 1).table == (0,) * 60
    # More brackets than rungs: one per rung.
    assert Brackets(1, 9, 3, 5).used == 2


def test_chains_are_dealt_so_that_each_bracket_spends_about_the_same_epochs() -> None:
    b = Brackets(1, 100, 3, 3)
    dealt = Counter(b.of(chain) for chain in range(600))
    spent = {s: dealt[s] * b.cost(s) for s in range(3)}
    assert min(spent.values()) / max(spent.values()) > 0.85, (dealt, spent)
    # Fewer chains join a later bracket, whose chains cost more.
    assert dealt[0] > dealt[1] > dealt[2] > 0
    # The same chain always lands in the same bracket (any controller, any restart).
    assert [b.of(c) for c in range(100)] == [Brackets(1, 100, 3, 3).of(c) for c in range(100)]
    # Interleaved: a short campaign already tries every bracket.
    assert set(b.table[:8]) == {0, 1, 2}


def test_a_chain_is_ranked_only_among_the_chains_of_its_bracket() -> None:
    b = Brackets(1, 100, 3, 2)
    zero = [c for c in range(40) if b.of(c) == 0][:4]
    one = [c for c in range(40) if b.of(c) == 1][:2]
    # Bracket 0 has a rung at step 1, bracket 1 does not.
    assert b.crossed(zero[0], 0, 1) == 1 and b.crossed(one[0], 0, 1) is None
    assert b.crossed(one[0], 2, 5) == 3
    # Bracket 1's chains are far worse at step 3; they do not count in bracket 0's cut.
    trials = [_trial(c, {1: 5.0, 3: 5.0}) for c in one]
    trials += [_trial(c, {1: float(i), 3: float(i)}) for i, c in enumerate(zero)]
    ok, rank, n, value = b.cut(trials, zero[1], 3, maximize=False) or ()
    assert (ok, rank, n, value) == (True, 1, 4, 1.0)  # top ceil(4/3) = 2 of bracket 0
    assert b.cut(trials, zero[2], 3, maximize=False)[:3] == (False, 2, 4)  # type: ignore[index]
    # The worse of bracket 1's two is cut among its bracket's two alone.
    assert b.cut(trials, one[1], 3, maximize=False)[:3] == (False, 1, 2)  # type: ignore[index]
    assert b.cut(trials, zero[0], 9, maximize=False) is None  # no value there yet


def test_the_paused_trial_promoted_is_the_highest_rung_first_that_now_ranks_in_the_top() -> None:
    b = Brackets(1, 100, 3, 1)
    trials = [
        _trial(0, {1: 1.0, 3: 1.0}),
        _trial(1, {1: 2.0}, paused=1),
        _trial(2, {1: 3.0, 3: 3.0}, paused=3),
        _trial(3, {1: 4.0}, paused=1),
        _trial(4, {1: 5.0, 3: 5.0}),
        _trial(5, {1: 6.0, 3: 6.0}),
    ]
    found = b.promotable(trials, maximize=False)
    assert found is not None
    paused, rank, n = found
    # Trial 2 ranks 2nd of 4 at rung 3 (top 2 go on): promoted before trial 1 at rung 1.
    assert (paused.number, rank, n) == (2, 1, 4)
    nxt = continuation(paused)
    assert nxt.state == optuna.trial.TrialState.WAITING and nxt.params == paused.params
    assert first_trial(nxt) == 2 and nxt.user_attrs["tuner.promoted_from"] == 2
    # Its continuation is the record of the promotion: next is trial 1 (2nd of 6 at rung 1).
    nxt.number = 6
    again = b.promotable([*trials, nxt], maximize=False)
    assert again is not None and again[0].number == 1
    # Once both are promoted, trial 3 (4th of 6 at rung 1, the top 2 go on) stays paused.
    other = continuation(again[0])
    other.number = 7
    assert b.promotable([*trials, nxt, other], maximize=False) is None


def test_model_rung_shows_the_sampler_each_chain_at_the_highest_rung_with_enough_values() -> None:
    trials = [_trial(i, {1: float(i), 3: float(10 + i)}, paused=3) for i in range(4)]
    trials += [_trial(4 + i, {1: float(4 + i)}, paused=1) for i in range(6)]
    # Rung 3 has 4 values: below 5; rung 1 has all 10.
    seen = at_highest_rung(trials, (1, 3, 9), points=5)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in seen)
    assert [t.value for t in seen] == [float(i) for i in range(10)]
    seen = at_highest_rung(trials, (1, 3, 9), points=4)
    done = [t for t in seen if t.state == optuna.trial.TrialState.COMPLETE]
    assert [t.value for t in done] == [10.0, 11.0, 12.0, 13.0]
    assert sum(t.state == optuna.trial.TrialState.FAIL for t in seen) == 6
    # Too few anywhere: the study as it is.
    assert at_highest_rung(trials, (9,), points=1) is trials


@pytest.mark.parametrize("model", ["study", "rung"])
def test_the_campaign_sampler_is_fitted_at_a_rung_only_with_model_rung(model: str) -> None:
    from tuner.config import parse_config
    from tuner.search import SamplerPlan, make_sampler

    config = parse_config(
        {
            "name": "b",
            "command": ["python", "train.py"],
            "target": {"metric": "loss", "goal": "minimize"},
            "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
            "budget": {"trials": 10},
            "scheduler": {"name": "asha", "max_resource": 27, "brackets": 2, "model": model},
        },
        check_options=False,
    )
    sampler = make_sampler(SamplerPlan.of(config))
    found = sampler
    while not isinstance(found, RungModel) and hasattr(found, "sampler"):
        found = found.sampler
    assert isinstance(found, RungModel) == (model == "rung")
    if model == "rung":
        assert found.levels == (1, 3, 9, 27) and found.points == 10
