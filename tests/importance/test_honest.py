"""Never-active parameters, one coherent interval and test, a campaign's
own parameters by default, aliases ranked once."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from importance_cases import make_runs

from lineage import NotFoundError
from lineage.importance import (
    ImportanceResult,
    format_bound,
    get_param_importances,
    render_importance,
)
from lineage.importance._figures._data import headline

SPACE = {
    "lr": ("log", 1e-3, 0.5),
    "opt": ("cat", ("sgd", "adam")),
    "batch": ("int", 16, 128),
}


def _fn(p: dict[str, Any], rng: np.random.Generator) -> float:
    return -((math.log10(p["lr"]) + 1.5) ** 2) - (0.3 if p["opt"] == "sgd" else 0.0)


def test_never_active_parameter_is_reported_not_refused() -> None:
    runs = make_runs(SPACE, _fn, 24, 0)
    result = get_param_importances(
        runs,
        target="y",
        goal="maximize",
        params=["lr", "opt", "momentum"],
        known_params=["momentum"],
    )
    assert {p.name for p in result.params} == {"lr", "opt"}
    assert result.never_active == ["momentum"]
    assert result.dropped["momentum"] == "never active in the 24 runs"
    assert "momentum: never active in the 24 runs" in result.summary()
    assert result.to_dict()["never_active"] == ["momentum"]


def test_a_name_only_unusable_runs_have_is_never_active_in_the_analysed_ones() -> None:
    runs = make_runs(SPACE, _fn, 20, 1)
    extra = make_runs({**SPACE, "momentum": ("float", 0.5, 0.99)}, lambda p, r: None, 3, 2)
    result = get_param_importances([*runs, *extra], target="y", params=["lr", "momentum"])
    assert result.never_active == ["momentum"] and result.n_runs == 20


def test_a_typo_is_still_refused_with_a_did_you_mean() -> None:
    runs = make_runs(SPACE, _fn, 20, 0)
    with pytest.raises(NotFoundError, match=r"param 'momentun' .* did you mean 'momentum'\?"):
        get_param_importances(
            runs, target="y", params=["lr", "momentun"], known_params=["momentum"]
        )
    with pytest.raises(NotFoundError, match=r"param 'momentum' is not logged by any run"):
        get_param_importances(runs, target="y", params=["lr", "momentum"])


def _with_alias(runs: list[Any]) -> list[Any]:
    for r in runs:
        # What a framework callback records beside the tuner's value (float32 read back).
        r.params["optimizer.lr"] = repr(float(np.float32(float(r.params["lr"]))))
    return runs


def test_identical_parameters_are_ranked_once_with_their_aliases() -> None:
    runs = _with_alias(make_runs(SPACE, _fn, 40, 3))
    result = get_param_importances(runs, target="y", goal="maximize")
    names = [p.name for p in result.params]
    assert "optimizer.lr" not in names and names[0] == "lr"
    assert result.aliases == {"lr": ["optimizer.lr"]}
    assert result.params[0].aliases == ("optimizer.lr",)
    assert result.params[0].label == "lr (= optimizer.lr)"
    assert result.params[0].importance > 0.6 and result.params[0].significant
    assert result.to_dict()["params"][0]["aliases"] == ["optimizer.lr"]
    # The name asked for first is the one kept.
    asked = get_param_importances(runs, target="y", params=["optimizer.lr", "lr", "opt"])
    assert asked.aliases == {"optimizer.lr": ["lr"]}


def _check_coherent(result: ImportanceResult) -> None:
    for p in result.params:
        assert p.significant == (p.ci[0] > 0.0), p
        assert p.ci[0] <= p.importance <= p.ci[1], p
        shown_low = format_bound(p.ci[0])
        assert (shown_low != "0.00") == p.significant, (p, shown_low)
        title = headline(p)
        assert ("significant" in title.split(", ")[-1]) == p.significant
        assert (f"[{format_bound(p.ci[0], 3)}," != "[0.000,") == p.significant


@pytest.mark.parametrize(("n", "seed"), [(12, 0), (16, 1), (24, 2), (30, 3)])
def test_significant_exactly_when_the_interval_excludes_zero(n: int, seed: int) -> None:
    """At campaign sizes the verdict and the interval printed beside it never disagree (it
    used to print `0.00-1.00` next to `significant yes`)."""
    space = {**SPACE, "seed": ("int", 0, 10_000), "dropout": ("float", 0.0, 0.5)}
    runs = make_runs(space, _fn, n, seed)
    result = get_param_importances(runs, target="y", goal="maximize")
    _check_coherent(result)


QUICKSTART_LIKE = {
    "lr": ("log", 1e-3, 0.5),
    "batch_size": ("int", 16, 128),
    "hidden": ("cat", ("16", "32", "64", "128")),
    "seed": ("int", 0, 10_000),
}


def _monotone(p: dict[str, Any], rng: np.random.Generator) -> float:
    # accuracy rises with log lr; noise sized for a Spearman of about 0.8 (the quickstart's)
    return 0.9 + 0.05 * (math.log10(p["lr"]) + 1.65) / 0.78 + 0.035 * float(rng.normal())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_strong_effect_is_significant_at_campaign_size_and_no_effect_is_not(seed: int) -> None:
    runs = make_runs(QUICKSTART_LIKE, _monotone, 16, seed)
    result = get_param_importances(runs, target="y", goal="maximize")
    by = {p.name: p for p in result.params}
    assert by["lr"].correlation is not None and by["lr"].correlation > 0.6
    assert by["lr"].significant and by["lr"].ci[0] > 0.0
    assert not by["seed"].significant and not by["hidden"].significant
    _check_coherent(result)


def test_figures_and_page_say_what_the_interval_says(tmp_path: Path) -> None:
    runs = make_runs({**QUICKSTART_LIKE, "opt": ("cat", ("sgd", "adam"))}, _monotone, 20, 4)
    result = get_param_importances(runs, target="y", goal="maximize")
    render_importance(result, tmp_path)
    page = (tmp_path / "importance.html").read_text(encoding="utf-8")
    for p in result.params:
        assert headline(p) in page
        low = format_bound(p.ci[0], 3)
        assert ("significant" if p.significant else "no detectable effect") in headline(p)
        assert (low != "0.000") == p.significant
