"""``warm_start.compare: auto`` (the default): each source of earlier runs is measured against
the campaign's own trials, seen by value, by rank or discounted, and weighted by how well it
agrees, fading with the campaign's own evidence, down to none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest

from tuner.search import ENQUEUED_FROM_ATTR, IMPORTED_ATTR, IMPORTED_FROM_ATTR


def _config(
    tmp_path: Path, compare: str | None = None, focus: dict[str, float] | None = None
) -> Any:
    from tuner.config import parse_config

    warm: dict[str, Any] = {"from": [{"experiment": "earlier"}]}
    if compare is not None:
        warm["compare"] = compare
    return parse_config(
        {
            "name": "transfer",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": {"metric": "rmse", "goal": "minimize"},
            "parameters": {
                "x": {"type": "float", "low": 0.0, "high": 1.0}
                | ({"focus": focus} if focus else {})
            },
            "budget": {"trials": 20},
            "sampler": {"name": "tpe", "seed": 3},
            "warm_start": warm,
        },
        base_dir=tmp_path,
    )


def _imported(x: float, value: float, i: int, source: str = "earlier") -> Any:
    return optuna.trial.create_trial(
        state=optuna.trial.TrialState.COMPLETE,
        value=value,
        params={"x": x},
        distributions={"x": optuna.distributions.FloatDistribution(0.0, 1.0)},
        system_attrs={IMPORTED_ATTR: f"{source}-{i}"},
        user_attrs={IMPORTED_FROM_ATTR: {"run_id": f"{source}-{i}", "source": source}},
    )


def _study(
    tmp_path: Path, old: Any, new: Any, n_own: int, sources: tuple[str, ...] = ("a",)
) -> Any:
    """A study holding 24 imported runs per source (scored by ``old(x)``) and ``n_own`` own
    trials spread over the space (scored by ``new(x)``); the first 3 re-run imported
    configurations, as ``enqueue_best`` does."""
    from tuner.search import SamplerPlan, make_sampler

    study = optuna.create_study(sampler=make_sampler(SamplerPlan.of(_config(tmp_path))))
    for source in sources:
        for i in range(24):
            study.add_trial(_imported(i / 23, old(i / 23), i, source))
    for k in range(n_own):
        x = (k * 7 % n_own + 0.5) / n_own
        attrs = {}
        if k < 3:
            x = 3 * k / 23
            attrs = {ENQUEUED_FROM_ATTR: f"{sources[0]}-{3 * k}"}
        study.enqueue_trial({"x": x}, user_attrs=attrs)
        trial = study.ask()
        study.tell(trial, new(trial.suggest_float("x", 0.0, 1.0)))
    return study


def _measured(study: Any) -> Any:
    from tuner.search._transfer import measure

    return measure(study.get_trials(deepcopy=False), study.directions)


def test_auto_is_the_default(tmp_path: Path) -> None:
    from tuner.search import SamplerPlan, make_sampler

    config = _config(tmp_path)
    assert config.warm_start.compare == "auto"
    assert "auto" in str(make_sampler(SamplerPlan.of(config)))
    assert "auto" not in str(make_sampler(SamplerPlan.of(_config(tmp_path, "value"))))


def test_same_task_same_level_is_seen_by_value(tmp_path: Path) -> None:
    (d,) = _measured(_study(tmp_path, lambda x: (x - 0.3) ** 2, lambda x: (x - 0.3) ** 2, 12))
    assert d.mode == "value" and d.exact_pairs == 3 and d.pairs == 12
    assert d.agreement is not None and d.agreement > 0.9 and d.shift == 0.0
    assert 0.3 < d.weight < 1.0 and d.shown == round(d.weight * 24)


def test_same_order_other_level_is_seen_by_rank(tmp_path: Path) -> None:
    (d,) = _measured(
        _study(tmp_path, lambda x: (x - 0.3) ** 2, lambda x: 10 + 2 * (x - 0.3) ** 2, 12)
    )
    assert d.mode == "rank" and d.shift is not None and d.shift > 0.5
    assert d.agreement is not None and d.agreement > 0.9


def test_a_misleading_source_is_discounted_to_nothing(tmp_path: Path) -> None:
    from tuner.search._transfer import transfer_view

    study = _study(tmp_path, lambda x: (x - 0.1) ** 2, lambda x: (x - 0.9) ** 2, 8)
    (d,) = _measured(study)
    assert d.mode == "discount" and d.agreement is not None and d.agreement < 0
    assert d.weight == 0.0 and d.shown == 0
    view = transfer_view(study.get_trials(deepcopy=False), study.directions)
    # the campaign's own trials only: a cold campaign from here on (the imported ones hidden
    # as FAIL trials without values, so the view keeps one trial per number)
    done = [t for t in view if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 8 and not any(IMPORTED_ATTR in t.system_attrs for t in done)
    assert [t.number for t in view] == [t.number for t in study.trials]
    assert all(IMPORTED_ATTR in t.system_attrs for t in study.trials[:24])  # study keeps them


def _moved_at_the_top(x: float) -> tuple[float, float]:
    """(earlier, this task) at ``x``: alike over most of the space (a ramp), but the earlier
    best region (x < 0.08) is this task's worst and this task's best (0.08 to 0.16) was
    middling before."""
    if x < 0.08:
        return -1.0 + x, 2.0 + x
    if x < 0.16:
        return 0.6, -1.0 + x
    return x, x


def test_agreement_on_a_plateau_does_not_hide_a_moved_optimum() -> None:
    """Most pairs agree (the ramp where both tasks score alike), so Kendall's tau over all
    pairs would trust the source; the agreement is weighted toward each side's best pairs,
    where the two tasks disagree, and the source is discounted."""
    import scipy.stats

    import tuner.search._transfer as transfer

    pairs = [_moved_at_the_top(k / 23) for k in range(24)]
    agreement = transfer._agreement(pairs)
    assert agreement < transfer.AGREE
    chance = transfer._chance(pairs)
    assert transfer._decide(agreement, 0.0, chance, 24)[0] in ("discount", "thin")
    # The same pairs by plain Kendall's tau: the plateau outvotes the top.
    plain = scipy.stats.kendalltau(*zip(*pairs, strict=True)).statistic
    assert transfer._decide(plain, 0.0, chance, 24)[0] == "value"


def test_before_enough_pairs_the_evidence_is_thin_and_the_prior_waits(tmp_path: Path) -> None:
    """Trust is earned: until enough of the campaign's own trials are compared with the
    earlier runs, the sampler sees none of them (a cold campaign's first trials)."""
    from tuner.search._transfer import transfer_view

    study = _study(tmp_path, lambda x: x, lambda x: x, 3)
    (d,) = _measured(study)
    assert d.agreement is None and d.mode == "thin" and d.weight == 0.0 and d.shown == 0
    view = transfer_view(study.get_trials(deepcopy=False), study.directions)
    assert [t.number for t in view if t.state == optuna.trial.TrialState.COMPLETE] == [
        24,
        25,
        26,
    ]


def test_an_agreement_beyond_chance_waits_for_the_first_trials(tmp_path: Path) -> None:
    """The campaign's first trials explore the whole space, as a cold TPE's random first ten
    do, whatever the earlier runs say: a source that agrees beyond chance over fewer than
    `MIN_OWN` trials still weighs nothing, and its line says why."""
    from tuner.search._transfer import MIN_OWN, line

    same = lambda x: (x - 0.3) ** 2  # noqa: E731
    (early,) = _measured(_study(tmp_path, same, same, MIN_OWN - 2))
    assert early.agreement is not None and early.noise is not None
    assert early.agreement > early.noise
    assert early.mode == "thin" and early.weight == 0.0 and early.shown == 0
    assert f"beyond chance, but over fewer than {MIN_OWN} trials: weight 0.00" in line(early)
    (later,) = _measured(_study(tmp_path, same, same, MIN_OWN))
    assert later.mode == "value" and later.weight > 0


def test_an_agreement_within_chance_is_too_thin_to_act_on(tmp_path: Path) -> None:
    """Over few pairs a weak agreement is what unrelated tasks show by chance: the source
    weighs nothing, and its line says the evidence is too thin; the same agreement over
    many pairs is no longer chance."""
    from tuner.search._transfer import SourceTransfer, _decide, line

    assert _bar(4) > _bar(10) > 0.4 > _bar(20) > 0.3 > _bar(60)
    assert _decide(0.3, 0.0, _bar(5), 5) == ("thin", 0.0)
    assert _decide(0.4, 0.0, _bar(12), 12) == ("thin", 0.0)
    mode, weight = _decide(0.3, 0.0, _bar(60), 60)
    assert mode == "discount" and 0 < weight < 1
    assert _decide(-0.9, 0.0, _bar(8), 8) == ("discount", 0.0)
    d = SourceTransfer("a", 24, 5, 0, 0.2, round(_bar(5), 3), 0.1, "thin", 0.0, 0)
    assert f"+0.20 over 5 pairs (0 re-runs; chance alone reaches {_bar(5):+.2f} one time" in line(d)
    assert "within chance, too thin to act on: weight 0.00" in line(d)


def _bar(n: int) -> float:
    """The chance bar over ``n`` pairs without ties."""
    from tuner.search._transfer import _chance

    return _chance([(float(i), float(i)) for i in range(n)])


def test_the_chance_bar_is_the_weighted_taus_own_one_in_twenty() -> None:
    """Between unrelated tasks the agreement clears the bar about one time in twenty (the
    weighted tau strays further by chance than plain Kendall's tau, whose standard deviation
    an earlier bar used, and which unrelated tasks cleared about one time in five)."""
    import numpy as np

    from tuner.search._transfer import _agreement

    # as the warm-start guide gives them
    assert [round(_bar(n), 2) for n in (4, 10, 20, 30)] == [0.81, 0.49, 0.36, 0.30]
    rng = np.random.default_rng(7)
    for n in (10, 20, 30):
        bar = _bar(n)
        cleared = np.mean(
            [
                _agreement(list(zip(rng.random(n), rng.random(n), strict=True))) > bar
                for _ in range(600)
            ]
        )
        assert 0.02 < cleared < 0.09, (n, bar, cleared)


def test_the_chance_bar_keeps_ties() -> None:
    """Tied values (failed trials scored alike, a flat region) narrow what the ranking can
    show; the bar is measured on the pairs themselves, ties included, and is reproducible."""
    from tuner.search._transfer import _chance

    tied = [(float(i), float(i // 4)) for i in range(16)]
    assert _chance(tied) == _chance(tied)
    assert _chance(tied) != _bar(16)


def test_a_trial_far_from_every_earlier_run_pairs_with_their_prediction(tmp_path: Path) -> None:
    """The earlier runs cover only the lower half of the space; the campaign's trials lie in
    the upper half, where the earlier runs' model still tells which is better."""
    from tuner.search._prior_model import PriorModel

    members = [_imported(i / 46, (i / 46 - 0.8) ** 2, i) for i in range(24)]
    own = [_imported(0.6 + 0.1 * k, 0.0, 100 + k) for k in range(4)]
    predicted = PriorModel(members, 1.0).predict(own)
    assert predicted[2] < predicted[1] < predicted[0]  # 0.8 best, as the parabola says


def test_a_large_source_is_modelled_from_an_even_pick_of_its_runs() -> None:
    from tuner.search._prior_model import MAX_FIT, PriorModel

    members = [_imported(i / 999, (i / 999 - 0.3) ** 2, i) for i in range(1000)]
    model = PriorModel(members, 1.0)
    assert model.fitted_runs == MAX_FIT
    low, mid, high = model.predict([_imported(x, 0.0, 0) for x in (0.0, 0.3, 0.9)])
    assert mid < low < high


def test_the_weight_fades_with_own_evidence(tmp_path: Path) -> None:
    weights = [
        _measured(_study(tmp_path, lambda x: (x - 0.3) ** 2, lambda x: (x - 0.3) ** 2, n))[0]
        for n in (12, 20, 40)
    ]
    assert weights[0].weight > weights[1].weight > weights[2].weight > 0


def test_sources_are_weighted_each_by_its_own_agreement(tmp_path: Path) -> None:
    from tuner.search._transfer import describe

    study = _study(tmp_path, lambda x: (x - 0.3) ** 2, lambda x: (x - 0.3) ** 2, 12, ("a", "b"))
    for i in range(24):  # a third source that ranks the space backwards
        study.add_trial(_imported(i / 23, -((i / 23 - 0.3) ** 2), i, "c"))
    by_source = {d["source"]: d for d in describe(study.get_trials(), study.directions)}
    assert by_source["a"]["weight"] > 0 and by_source["b"]["weight"] > 0
    assert by_source["c"]["mode"] == "discount" and by_source["c"]["weight"] == 0.0


def test_the_decision_is_recomputed_from_the_stored_study(tmp_path: Path) -> None:
    """A resumed controller (another process, the same storage) decides the same."""
    from tuner.search import SamplerPlan, make_sampler

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(
        storage=storage, study_name="s", sampler=make_sampler(SamplerPlan.of(_config(tmp_path)))
    )
    for i in range(24):
        study.add_trial(_imported(i / 23, (i / 23 - 0.1) ** 2, i))
    for _ in range(6):
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
        study.tell(trial, (trial.params["x"] - 0.9) ** 2)
    before = _measured(study)
    resumed = optuna.load_study(study_name="s", storage=storage)
    assert _measured(resumed) == before
    resumed.sampler = make_sampler(SamplerPlan.of(_config(tmp_path)))
    resumed.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0) - 0.9) ** 2, n_trials=2)
    assert len(resumed.trials) == 32


def test_the_decision_reads_as_one_line_per_source(tmp_path: Path) -> None:
    from tuner.search._transfer import line

    (d,) = _measured(_study(tmp_path, lambda x: (x - 0.1) ** 2, lambda x: (x - 0.9) ** 2, 8))
    text = line(d)
    assert text.startswith("warm start from a: rank agreement -")
    assert f"over 8 pairs (3 re-runs; chance alone reaches {_bar(8):+.2f} one time in 20)" in text
    assert "discount, weight 0.00 (0 of 24" in text
    (early,) = _measured(_study(tmp_path, lambda x: x, lambda x: x, 2))
    assert "fewer than 4: too thin to act on, none of the 24 earlier runs" in line(early)


@pytest.mark.parametrize(
    ("sampler", "objectives"), [("tpe", 2), ("nsga2", 2), ("gp", 2), ("cmaes", 1), ("tpe", 1)]
)
def test_every_learning_sampler_with_a_focus_and_several_objectives(
    tmp_path: Path, sampler: str, objectives: int
) -> None:
    """Each sampler that learns from values asks through the measured view and a focus, with
    one objective or two (the decision is measured on the first objective, the ranks taken on
    each); the focus holds four trials in five while the best trial stays inside it."""
    from tuner.config import parse_config
    from tuner.search import SamplerPlan, make_sampler, sample_params
    from tuner.search._focus import EXPLORE_EVERY, OPEN

    metrics = [{"metric": "loss", "goal": "minimize"}, {"metric": "size", "goal": "minimize"}]
    config = parse_config(
        {
            "name": "many",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": metrics[0],
            "objectives": metrics[1:objectives],
            "parameters": {
                "x": {"type": "float", "low": 0.0, "high": 1.0, "focus": {"low": 0.2, "high": 0.6}},
                "y": {"type": "float", "low": 0.0, "high": 1.0},
            },
            "budget": {"trials": 16},
            "sampler": {"name": sampler, "seed": 2},
            "warm_start": {"from": [{"experiment": "earlier"}], "enqueue_best": 2},
        },
        base_dir=tmp_path,
    )

    def values(x: float, y: float) -> list[float]:
        return [(x - 0.4) ** 2 + (y - 0.5) ** 2, x + y][:objectives]

    study = optuna.create_study(
        directions=["minimize"] * objectives, sampler=make_sampler(SamplerPlan.of(config))
    )
    unit = optuna.distributions.FloatDistribution(0.0, 1.0)
    for i in range(16):
        x, y = (i % 4 + 0.5) / 4, (i // 4 + 0.5) / 4
        study.add_trial(
            optuna.trial.create_trial(
                values=values(x, y),
                params={"x": x, "y": y},
                distributions={"x": unit, "y": unit},
                system_attrs={IMPORTED_ATTR: f"run{i}"},
                user_attrs={IMPORTED_FROM_ATTR: {"run_id": f"run{i}", "source": "earlier"}},
            )
        )
    for i in (5, 9):  # enqueue_best: two earlier configurations re-run first
        study.enqueue_trial(
            {"x": (i % 4 + 0.5) / 4, "y": (i // 4 + 0.5) / 4},
            user_attrs={ENQUEUED_FROM_ATTR: f"run{i}"},
        )
    for _ in range(16):
        trial = study.ask()
        p = sample_params(trial, config.parameters)
        study.tell(trial, values(p["x"], p["y"]))
    own = [t for t in study.trials if IMPORTED_ATTR not in t.system_attrs]
    assert len(own) == 16 and all(t.state.name == "COMPLETE" for t in own)
    # The first OPEN own trials sample the whole range; the focus holds from then on.
    focused = [t for t in own[OPEN:] if (t.number + 1) % EXPLORE_EVERY]
    assert focused and all(0.2 <= t.params["x"] <= 0.6 for t in focused)
    (d,) = _measured(study)
    assert (d.pairs, d.exact_pairs) == (16, 2) and d.mode in ("value", "rank")


class _Seeing(optuna.samplers.RandomSampler):
    """A sampler that notes, per trial, how many imported and own finished trials it reads."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.seen: dict[int, tuple[int, int]] = {}

    def sample_independent(self, study: Any, trial: Any, name: str, dist: Any) -> Any:
        done = study._get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        imported = sum(IMPORTED_ATTR in t.system_attrs for t in done)
        self.seen[trial.number] = (imported, len(done) - imported)
        return super().sample_independent(study, trial, name, dist)


@pytest.mark.parametrize("focus", [None, {"low": 0.2, "high": 0.4}])
def test_exploring_trials_go_on_as_a_cold_campaign(
    tmp_path: Path, focus: dict[str, float] | None
) -> None:
    """Every fifth trial of a warm start (``compare: auto``) is proposed as a cold campaign's
    would be: it sees neither the earlier runs nor the campaign's trials they steered, so
    earlier runs that agree where the campaign has been but mislead where it has not cannot
    steer those trials, directly or through the trials they led to. The other trials see
    them, and each is marked steered exactly when it did. The same holds with a focus (what
    ``tuner init`` writes): the trials that check the focus do not see the earlier runs it
    was built from."""
    from tuner.search import STEERED_ATTR, sample_params
    from tuner.search._registry import wrap_sampler
    from tuner.search._transfer import MIN_OWN
    from tuner.search._view import EXPLORE_EVERY

    config = _config(tmp_path, focus=focus)
    seeing = _Seeing()
    study = optuna.create_study(
        sampler=wrap_sampler(
            seeing,
            name=config.sampler.name,
            parameters=config.parameters,
            warm_start=config.warm_start,
        )
    )
    for i in range(24):
        study.add_trial(_imported(i / 23, (i / 23 - 0.3) ** 2, i))
    for _ in range(20):
        trial = study.ask()
        study.tell(trial, (sample_params(trial, config.parameters)["x"] - 0.3) ** 2)
    steered = {t.number for t in study.trials if t.system_attrs.get(STEERED_ATTR)}
    for number, (imported, own) in seeing.seen.items():
        done = number - 24  # every own trial finished before the next is proposed
        unsteered = done - len({n for n in steered if n < number})
        if (number + 1) % EXPLORE_EVERY == 0 or done < MIN_OWN:
            assert imported == 0, number  # exploring, or trust not yet earned
            assert number not in steered, number
        else:
            assert imported > 0, number
            assert number in steered, number
        # a focus hides the own trials outside it, once it narrows
        if (number + 1) % EXPLORE_EVERY == 0:
            assert own == unsteered if focus is None else own <= unsteered, number
        else:
            assert own == done if focus is None else own <= done, number
    assert len(steered) > 5  # the earlier runs agree here: most later trials are steered
    imported_trials = [t for t in study.trials if IMPORTED_ATTR in t.system_attrs]
    assert len(study.trials) == 44 and len(imported_trials) == 24


def test_the_cold_view_hides_what_earlier_runs_chose_or_steered() -> None:
    """What an exploring trial sees: the campaign's own trials, less the imported runs, the
    re-runs of earlier configurations and the trials proposed while earlier runs were shown
    (hidden as FAIL copies, one per number, so samplers that find trials by number still
    can)."""
    from optuna.trial import TrialState, create_trial

    from tuner.search import ENQUEUED_FROM_ATTR, STEERED_ATTR
    from tuner.search._view import cold_only

    dist = {"x": optuna.distributions.FloatDistribution(0.0, 1.0)}
    trials = [
        create_trial(params={"x": 0.1}, distributions=dist, value=1.0,
                     system_attrs={IMPORTED_ATTR: "run-a"}),
        create_trial(params={"x": 0.2}, distributions=dist, value=2.0,
                     user_attrs={ENQUEUED_FROM_ATTR: "run-a"}),
        create_trial(params={"x": 0.3}, distributions=dist, value=3.0,
                     system_attrs={STEERED_ATTR: True}),
        create_trial(params={"x": 0.4}, distributions=dist, value=4.0),
    ]  # fmt: skip
    for number, trial in enumerate(trials):
        trial.number = number
    seen = cold_only(trials)
    assert [t.number for t in seen] == [0, 1, 2, 3]
    assert [t.state for t in seen] == [TrialState.FAIL] * 3 + [TrialState.COMPLETE]
    assert seen[3] is trials[3] and seen[3].value == 4.0
    assert all(t.values is None for t in seen[:3])


def test_a_warm_start_no_earlier_run_earns_trust_in_is_a_cold_campaign(tmp_path: Path) -> None:
    """Earlier runs that never agree with the campaign's own trials beyond chance are never
    shown: the warm-started campaign proposes the same trials as a cold one with the same
    seed, its exploring trials included, and marks none steered."""
    from tuner.search import STEERED_ATTR, sample_params
    from tuner.search._registry import wrap_sampler

    config = _config(tmp_path)

    def campaign(warm: bool) -> optuna.Study:
        sampler = optuna.samplers.TPESampler(seed=3)
        study = optuna.create_study(
            sampler=wrap_sampler(
                sampler,
                name="tpe",
                parameters=config.parameters,
                warm_start=config.warm_start if warm else None,
            )
        )
        if warm:  # earlier values unrelated to this task's
            for i in range(24):
                study.add_trial(_imported(i / 23, float((i * 7) % 5), i))
        for _ in range(25):
            trial = study.ask()
            study.tell(trial, (sample_params(trial, config.parameters)["x"] - 0.8) ** 2)
        return study

    def own(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
        return [t for t in study.trials if IMPORTED_ATTR not in t.system_attrs]

    warm, cold = campaign(True), campaign(False)
    assert [t.params for t in own(warm)] == [t.params for t in own(cold)]
    assert not any(t.system_attrs.get(STEERED_ATTR) for t in warm.trials)


def test_exploring_trials_are_marked_on_the_trial_and_in_the_report(tmp_path: Path) -> None:
    """The exploring trials a warm start's sampler proposed carry ``tuner.exploring``, and
    the report lists them (``report.json``) and draws them apart in the history."""
    import json

    from lineage.report import render_report
    from tuner.search import EXPLORING_ATTR, SamplerPlan, make_sampler, sample_params

    config = _config(tmp_path)
    study = optuna.create_study(sampler=make_sampler(SamplerPlan.of(config)))
    for i in range(24):
        study.add_trial(_imported(i / 23, (i / 23 - 0.3) ** 2, i))
    study.enqueue_trial({"x": 0.3}, user_attrs={ENQUEUED_FROM_ATTR: "earlier-7"})
    for _ in range(10):
        trial = study.ask()
        study.tell(trial, (sample_params(trial, config.parameters)["x"] - 0.3) ** 2)
    marked = [t.number for t in study.trials if t.user_attrs.get(EXPLORING_ATTR)]
    # numbers 24 (enqueued: a re-run, not proposed) and 29 are the exploring ones
    assert marked == [29]
    report = render_report(study, tmp_path / "report", target_names=["rmse"])
    assert json.loads((tmp_path / "report" / "report.json").read_text())["exploring"] == [29]
    history = next(v for v in report.views if v["name"] == "history")
    assert "exploring trials, proposed without the earlier runs" in history["caption"]


def _two_params(x: float, act: str) -> dict[str, Any]:
    return {
        "params": {"x": x, "act": act},
        "distributions": {
            "x": optuna.distributions.FloatDistribution(0.0, 1.0),
            "act": optuna.distributions.CategoricalDistribution(["relu", "tanh"]),
        },
    }


def test_a_parameter_the_earlier_runs_show_no_effect_of_is_sampled_without_them(
    tmp_path: Path,
) -> None:
    """The earlier task's loss does not depend on ``act``; this task's does. The earlier
    runs still carry over on ``x``, but their values of ``act`` are whatever their search
    tried: the sampler samples ``act`` from the campaign's own trials alone."""
    from tuner.config import parse_config
    from tuner.search import SamplerPlan, make_sampler
    from tuner.search._transfer import line, transfer_view

    config = parse_config(
        {
            "name": "blind",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": {"metric": "loss", "goal": "minimize"},
            "parameters": {
                "x": {"type": "float", "low": 0.0, "high": 1.0},
                "act": {"type": "categorical", "choices": ["relu", "tanh"]},
            },
            "budget": {"trials": 20},
            "sampler": {"name": "tpe", "seed": 3},
            "warm_start": {"from": [{"experiment": "earlier"}]},
        },
        base_dir=tmp_path,
    )
    study = optuna.create_study(sampler=make_sampler(SamplerPlan.of(config)))
    for i in range(24):
        x, act = i / 23, ("relu", "tanh")[i % 2]
        study.add_trial(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState.COMPLETE,
                value=(x - 0.3) ** 2,
                system_attrs={IMPORTED_ATTR: f"a-{i}"},
                user_attrs={IMPORTED_FROM_ATTR: {"run_id": f"a-{i}", "source": "a"}},
                **_two_params(x, act),
            )
        )

    def loss(t: optuna.Trial) -> float:
        x = t.suggest_float("x", 0.0, 1.0)
        return (x - 0.3) ** 2 + (
            0.0 if t.suggest_categorical("act", ["relu", "tanh"]) == "tanh" else 0.5
        )

    study.optimize(loss, n_trials=16)
    (d,) = _measured(study)
    assert d.weight > 0 and d.blind == ("act",)
    assert "none for act, which they show no effect of" in line(d)
    trials = study.get_trials(deepcopy=False)

    def seen(param: str) -> list[Any]:
        view = transfer_view(trials, study.directions, (param,))
        return [
            t
            for t in view
            if t.state == optuna.trial.TrialState.COMPLETE and IMPORTED_ATTR in t.system_attrs
        ]

    assert len(seen("x")) == d.shown > 0
    assert seen("act") == []
