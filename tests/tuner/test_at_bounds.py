"""Best trials at a range's bound: named in one line with a widened range to try."""

from __future__ import annotations

from pathlib import Path

import optuna

from tuner.search import IMPORTED_ATTR
from tuner.search._bounds import at_bounds, widened


def _study(best_lr: float, imported_at_low: bool = False) -> optuna.Study:
    study = optuna.create_study()
    lr = optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True)
    width = optuna.distributions.IntDistribution(8, 64)
    for i in range(10):
        x = min(1e-4 * 10 ** (3 * i / 8), 1e-1)
        study.add_trial(
            optuna.trial.create_trial(
                params={"lr": x, "width": 8 + 5 * i},
                distributions={"lr": lr, "width": width},
                value=abs(x - best_lr),
            )
        )
    if imported_at_low:
        study.add_trial(
            optuna.trial.create_trial(
                params={"lr": 1e-4, "width": 30},
                distributions={"lr": lr, "width": width},
                value=-1.0,
                system_attrs={IMPORTED_ATTR: "run"},
            )
        )
    return study


def test_best_trials_at_the_high_bound_are_named_with_a_widened_range() -> None:
    study = _study(best_lr=1.0)
    (hit,) = at_bounds(study.trials, study.directions, top=3)
    assert (hit.param, hit.side, hit.bound, hit.best, hit.of) == ("lr", "high", 0.1, 2, 3)
    assert hit.line().startswith("2 of the 3 best trials sit at the high bound of lr (0.1)")
    assert "low: 0.0001, high: 3.16228" in hit.line()


def test_an_optimum_inside_the_range_and_imported_runs_say_nothing() -> None:
    study = _study(best_lr=3e-3, imported_at_low=True)
    assert at_bounds(study.trials, study.directions, top=3) == []
    assert at_bounds(study.trials[:2], study.directions, top=3) == []


def test_widened_grows_past_the_bound_only() -> None:
    assert widened(-1.0, 1.0, False, "low") == (-2.0, 1.0)
    lo, hi = widened(1e-4, 1e-2, True, "low")
    assert hi == 1e-2 and abs(lo - 1e-5) < 1e-12


def test_bound_notes_read_the_campaign_study(tmp_path: Path) -> None:
    from tuner.config import parse_config
    from tuner.search import StudyPlan, bound_notes, create_rdb

    config = parse_config(
        {
            "name": "edge",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": {"metric": "loss", "goal": "minimize"},
            "parameters": {"lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True}},
            "budget": {"trials": 10},
        },
        base_dir=tmp_path,
    )
    assert bound_notes(StudyPlan.of(config)) == []  # no study yet: nothing, no error
    study = optuna.create_study(
        study_name=config.study_name, storage=create_rdb(config.optuna_storage_url())
    )
    for t in [*_study(best_lr=1.0).trials, *_study(best_lr=1.0).trials]:
        study.add_trial(t)
    (note,) = bound_notes(StudyPlan.of(config))
    assert note.startswith("at a bound: 4 of the 5 best trials sit at the high bound of lr")


def test_widened_keeps_the_grid_the_scale_and_the_sign() -> None:
    # an int on a step grid grows by whole steps; a count that starts above zero stays there
    assert widened(16, 128, False, "high", step=16, integer=True) == (16, 192)
    assert widened(48, 128, False, "low", step=16, integer=True) == (16, 128)
    assert widened(2, 10, False, "low", integer=True) == (1, 10)
    # a range of values at or above zero does not cross it; a log range stays positive
    assert widened(0.1, 0.9, False, "low") == (0.0, 0.9)
    lo, hi = widened(2, 64, True, "low", integer=True)
    assert (lo, hi) == (1, 64)


def test_the_at_bound_line_proposes_a_range_on_the_step_grid() -> None:
    study = optuna.create_study(direction="maximize")
    batch = optuna.distributions.IntDistribution(16, 128, step=16)
    for b in (128, 128, 128, 112, 16, 32, 48):
        study.add_trial(
            optuna.trial.create_trial(params={"batch": b}, distributions={"batch": batch}, value=b)
        )
    (hit,) = at_bounds(study.trials, study.directions, top=5)
    assert hit.line().endswith("try low: 16, high: 192")
