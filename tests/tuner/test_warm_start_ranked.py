"""``warm_start.compare: rank``: the sampler weighs imported runs against the campaign's own
trials by rank within each set, so earlier runs that scored better than the new task can do
no longer pin the search to their optimum. The study keeps the recorded values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuner.search import IMPORTED_ATTR, IMPORTED_FROM_ATTR


def _config(tmp_path: Path, compare: str | None, sampler: str = "tpe") -> Any:
    from tuner.config import parse_config

    warm: dict[str, Any] = {"from": [{"experiment": "earlier"}]}
    if compare is not None:
        warm["compare"] = compare
    return parse_config(
        {
            "name": "ranked",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": {"metric": "rmse", "goal": "minimize"},
            "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
            "budget": {"trials": 20},
            "sampler": {"name": sampler, "seed": 3},
            "warm_start": warm,
        },
        base_dir=tmp_path,
    )


def _imported(config: Any, x: float, value: float, i: int, source: str = "earlier") -> Any:
    import optuna

    from tuner.search import distributions

    return optuna.trial.create_trial(
        state=optuna.trial.TrialState.COMPLETE,
        value=value,
        params={"x": x},
        distributions=distributions(config.parameters, {"x": x}),
        system_attrs={IMPORTED_ATTR: f"run{i}"},
        user_attrs={IMPORTED_FROM_ATTR: {"run_id": f"run{i}", "source": source}},
    )


def _proposals(tmp_path: Path, compare: str) -> tuple[list[float], Any]:
    """An earlier task whose optimum was x = 0.2 and whose metric sits 10 below anything the
    new task reaches; the new task's optimum is x = 0.8. After 8 new trials spread over the
    space, where does TPE propose over the next 24?"""
    import optuna

    from tuner.history import WarmStartPlan, apply
    from tuner.search import SamplerPlan, make_sampler

    config = _config(tmp_path, compare)
    olds = [i / 23 for i in range(24)]
    plan = WarmStartPlan([_imported(config, x, (x - 0.2) ** 2, i) for i, x in enumerate(olds)], [])
    study = optuna.create_study(sampler=make_sampler(SamplerPlan.of(config)))
    apply(study, plan)
    for x in (0.05, 0.2, 0.35, 0.5, 0.6, 0.7, 0.8, 0.95):
        study.enqueue_trial({"x": x})
        trial = study.ask()
        study.tell(trial, 10 + (trial.suggest_float("x", 0.0, 1.0) - 0.8) ** 2)
    proposed = []
    for _ in range(24):
        trial = study.ask()
        x = trial.suggest_float("x", 0.0, 1.0)
        proposed.append(x)
        study.tell(trial, 10 + (x - 0.8) ** 2)
    return proposed, study


def test_rank_lets_the_new_task_lead_where_raw_values_pin_the_old_optimum(
    tmp_path: Path,
) -> None:
    ranked, study = _proposals(tmp_path, "rank")
    raw, _ = _proposals(tmp_path, "value")

    def near(xs: list[float], at: float) -> int:
        return sum(abs(x - at) < 0.15 for x in xs[12:])  # the last 12 of 24 proposals

    # Raw values: the imported runs (all better) are TPE's whole good group: it stays at 0.2.
    assert near(raw, 0.8) == 0 and near(raw, 0.2) >= 6, raw
    # By rank: the campaign's own best trials count among the good ones, and the search
    # moves to the new optimum.
    assert near(ranked, 0.8) >= 4 and near(ranked, 0.8) > near(ranked, 0.2), ranked
    # Only the sampler's view changes: the study holds the recorded values.
    imported = [t for t in study.trials if IMPORTED_ATTR in t.system_attrs]
    assert len(imported) == 24
    assert all(t.value == pytest.approx((t.params["x"] - 0.2) ** 2) for t in imported)
    own = [t for t in study.trials if IMPORTED_ATTR not in t.system_attrs]
    assert all(t.value is not None and t.value >= 10 for t in own)


def test_ranked_view_scores_each_set_on_its_own() -> None:
    import optuna

    from tuner.search._ranked import ranked_view

    def trial(number: int, values: list[float], source: str | None) -> Any:
        t = optuna.trial.create_trial(
            state=optuna.trial.TrialState.COMPLETE,
            values=values,
            system_attrs={IMPORTED_ATTR: f"r{number}"} if source else {},
            user_attrs={IMPORTED_FROM_ATTR: {"source": source}} if source else {},
        )
        t.number = number
        return t

    old = [trial(i, [50.0 + i, -i], "a") for i in range(4)]  # a, 4 runs
    other = [trial(10 + i, [900.0 + i, 0.0], "b") for i in range(2)]  # b, a tie on 2nd
    own = [trial(20 + i, [70.0 - i, i], None) for i in range(2)]
    running = optuna.trial.create_trial(state=optuna.trial.TrialState.RUNNING)
    running.number = 30
    both = [optuna.study.StudyDirection.MINIMIZE] * 2
    seen = ranked_view([*old, *other, *own, running], both)
    z = {t.number: t.values for t in seen}
    # Within each set, the order is kept; across sets, the same rank gives the same score.
    assert z[0][0] < z[1][0] < z[2][0] < z[3][0]
    assert z[21][0] < z[20][0]
    assert z[10][0] == pytest.approx(z[21][0]) and z[11][0] == pytest.approx(z[20][0])
    assert z[10][1] == z[11][1] == pytest.approx(0.0)  # ties: the mean rank
    assert z[30] is None  # a running trial is left as it is
    # The study's trials are not touched: the view holds copies.
    assert old[0].values == [50.0, 0.0] and own[0].values == [70.0, 0.0]
    # Without finished trials of the campaign's own there is nothing to rank against.
    assert ranked_view([*old, running], both) == [*old, running]
    # Once the campaign's best beats every imported value, raw values: its trials lead.
    ahead = [trial(40, [40.0, -5.0], None), trial(41, [45.0, -4.0], None)]
    assert ranked_view([*old, *ahead], both) == [*old, *ahead]
    # Per objective: ranked only where an imported run is still ahead (maximize: higher).
    mixed = ranked_view([*old, *ahead], [both[0], optuna.study.StudyDirection.MAXIMIZE])
    assert [t.values[0] for t in mixed] == [50.0, 51.0, 52.0, 53.0, 40.0, 45.0]
    assert mixed[0].values[1] > mixed[3].values[1] and mixed[4].values[1] < mixed[5].values[1]


@pytest.mark.parametrize("compare, sampler", [("value", "tpe"), ("rank", "random")])
def test_value_compare_and_non_learning_samplers_are_not_wrapped(
    tmp_path: Path, compare: str | None, sampler: str
) -> None:
    from tuner.search import SamplerPlan, make_sampler
    from tuner.search._ranked import RankedWarmStart

    assert not isinstance(
        make_sampler(SamplerPlan.of(_config(tmp_path, compare, sampler))), RankedWarmStart
    )
