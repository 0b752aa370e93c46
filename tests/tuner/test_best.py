"""The best trials: one rule for the campaign's result (`best_of`, through Optuna) and for
`tuner status` (`read_study`, from the study's tables), on a real SQLite study."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tuner.search import best_numbers


def test_one_objective_takes_the_best_value_and_the_first_of_equals() -> None:
    assert best_numbers([(0, [2.0]), (1, [1.0]), (2, [1.0])], [False]) == [1]
    assert best_numbers([(0, [2.0]), (1, [1.0]), (2, [2.0])], [True]) == [0]
    assert best_numbers([], [False]) == []


def test_the_front_keeps_every_trial_of_equal_values_and_drops_the_dominated() -> None:
    trials = [(0, [1.0, 1.0]), (1, [1.0, 1.0]), (2, [0.5, 0.5]), (3, [2.0, 0.2])]
    # Maximize the first, minimize the second: 3 is the best in both. Minimize both: 2 and
    # 3 trade one for the other; 0 and 1 are beaten by 2 in both.
    assert best_numbers(trials, [True, False]) == [3]
    assert best_numbers(trials, [False, False]) == [2, 3]
    assert best_numbers([(4, [1.0, 2.0]), (5, [1.0, 2.0])], [False, False]) == [4, 5]


@pytest.mark.parametrize("directions", [["minimize"], ["maximize", "minimize"]])
def test_run_and_status_name_the_same_best_trials(directions: list[str], tmp_path: Path) -> None:
    from tuner.campaign._outcome import best_of
    from tuner.status import read_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="ties", storage=url, directions=directions)
    rows = [[1.0, 1.0], [1.0, 1.0], [0.5, 3.0], [2.0, 1.5], [0.2, 4.0]]
    for values in rows:
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": values[0]},
                distributions={"x": optuna.distributions.FloatDistribution(0, 5)},
                values=values[: len(directions)],
            )
        )
    run = best_of(study)
    assert run is not None
    run_numbers = [t["number"] for t in run["trials"]] if "trials" in run else [run["number"]]
    status_numbers = [t.number for t in read_study(url, "ties").best]
    assert run_numbers == status_numbers
    expected = {1: [4], 2: [0, 1, 3]}[len(directions)]
    assert status_numbers == expected
