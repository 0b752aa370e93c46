"""A seeded sampler is reproducible for a fresh campaign and never replays its proposals when
another controller opens the study (`tuner run` again, `tuner resume`, a second worker)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna

from tests.tuner.conftest import trials_of
from tuner.config import CampaignConfig


def test_a_second_controller_does_not_replay_the_seeded_sequence(
    campaign: Callable[..., CampaignConfig], run_campaign: Callable[..., Any]
) -> None:
    first = campaign(budget={"trials": 3})  # random sampler, seed 7
    run_campaign(first)
    # the same seed in a fresh study gives the same proposals: a fresh campaign reproduces
    fresh = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=7))
    expected = [fresh.ask().suggest_float("x", 0.0, 1.0) for _ in range(3)]
    assert [t.params["x"] for t in trials_of(first)] == expected
    # a later controller of the same study (the budget raised, as after a resume) goes on with
    # new proposals instead of the first controller's again
    second = campaign(budget={"trials": 6})
    run_campaign(second)
    xs = [t.params["x"] for t in trials_of(second)]
    assert len(xs) == 6 and len(set(xs)) == 6
    study = optuna.load_study(study_name=second.study_name, storage=second.optuna_storage_url())
    assert study.user_attrs["tuner.sampler_starts"] == 2


def test_controller_seeds_differ_per_start_and_keep_the_first() -> None:
    from tuner.search._registry import controller_seed

    seeds = [controller_seed(7, k) for k in range(4)]
    assert seeds[0] == 7 and len(set(seeds)) == 4
    assert controller_seed(7, 2) == seeds[2]  # the same in every process
