"""The ranking says what the user can act on: ties where intervals overlap, and which
parameters to tune, which did not matter, which cannot be told yet and how many more runs
would tell."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pytest
from importance_cases import make_runs

from lineage.cli import main
from lineage.importance import (
    NEGLIGIBLE_SHARE,
    ParamImportance,
    ParamSpec,
    advise,
    get_param_importances,
    rank_ranges,
    runs_to_decide,
    verdict,
)


def _p(name: str, share: float, low: float, high: float, sig: bool | None = None) -> Any:
    return ParamImportance(
        name=name,
        importance=share,
        ci=(low, high),
        significant=low > 0 if sig is None else sig,
        correlation=None,
        best=None,
        spec=ParamSpec(name, "numeric"),
    )


def test_overlapping_intervals_are_a_tie_and_separate_ones_an_order() -> None:
    params = [
        _p("a", 0.60, 0.50, 0.70),
        _p("b", 0.25, 0.20, 0.55),  # overlaps a
        _p("c", 0.10, 0.05, 0.15),  # below both, above e
        _p("d", 0.03, 0.00, 0.06),  # overlaps c and e
        _p("e", 0.02, 0.00, 0.04),
    ]
    assert rank_ranges(params) == [(1, 2), (1, 2), (3, 4), (3, 5), (4, 5)]


def test_verdicts_follow_the_interval() -> None:
    assert verdict(_p("lr", 0.7, 0.4, 0.9)) == "tune"
    assert verdict(_p("seed", 0.01, 0.0, NEGLIGIBLE_SHARE - 0.001)) == "no effect"
    assert verdict(_p("wd", 0.05, 0.0, 0.2)) == "cannot tell"


def test_runs_to_decide_shrink_with_the_interval_and_follow_the_square_root_law() -> None:
    wide, narrow = _p("w", 0.08, 0.0, 0.30), _p("n", 0.08, 0.0, 0.20)
    k_wide, k_narrow = runs_to_decide(wide, 50), runs_to_decide(narrow, 50)
    assert k_wide is not None and k_narrow is not None and k_wide > k_narrow > 50
    # se = (0.20 - 0.08) / 1.96; significance needs 50 * ((1.96 + 0.84) * se / 0.08) ** 2.
    se = 0.12 / 1.959964
    expected = 50 * ((1.959964 + 0.841621) * se / 0.08) ** 2
    assert k_narrow == math.ceil(expected)
    assert runs_to_decide(_p("lr", 0.7, 0.4, 0.9), 50) is None  # decided already


def test_advice_groups_in_ranking_order_and_adds_the_runs_for_the_slowest() -> None:
    params = [
        _p("lr", 0.7, 0.4, 0.9),
        _p("wd", 0.2, 0.0, 0.4),
        _p("bs", 0.06, 0.0, 0.12),
        _p("seed", 0.01, 0.0, 0.03),
    ]
    advice = advise(params, 50)
    assert (advice.tune, advice.no_effect, advice.cannot_tell) == (["lr"], ["seed"], ["wd", "bs"])
    slowest = max(runs_to_decide(p, 50) or 0 for p in params[1:3])
    assert advice.more_runs == slowest - 50
    assert advice.lines() == [
        "tune these: lr",
        "these did not matter in 50 runs: seed",
        f"cannot tell yet: wd, bs (run about {slowest - 50} more)",
    ]


def test_an_effect_too_small_to_resolve_soon_says_so() -> None:
    advice = advise([_p("lr", 0.9, 0.8, 1.0), _p("x", 0.049, 0.0, 0.9)], 30)
    assert advice.more_runs is None and advice.more_runs_over == 600
    assert advice.lines()[-1] == "cannot tell yet: x (more than 600 more runs would be needed)"


BOWL = ["importance", "-e", "bowl", "--target", "loss", "--goal", "minimize"]


def test_cli_prints_ranks_and_advice_below_the_table_and_in_json(
    capsys: pytest.CaptureFixture[str], mlflow_uri: str
) -> None:
    assert main([*BOWL, "--tracking-uri", mlflow_uri]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "importance" in line and "param" in line)
    assert header.split()[1] == "rank"
    assert "\ntune these: lr, optimizer\n" in out
    assert main([*BOWL, "--tracking-uri", mlflow_uri, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    advice = doc["advice"]
    assert advice["tune"] == ["lr", "optimizer"]
    assert set(advice["tune"] + advice["no_effect"] + advice["cannot_tell"]) == {
        p["name"] for p in doc["params"]
    }
    assert advice["lines"][0] == "tune these: lr, optimizer"
    for p in doc["params"]:
        assert p["verdict"] in {"tune", "no effect", "cannot tell"}
        assert 1 <= p["rank"][0] <= p["rank"][1] <= len(doc["params"])
        assert (p["runs_to_decide"] is not None) <= (p["verdict"] == "cannot tell")
    assert main([*BOWL, "--tracking-uri", mlflow_uri, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(",rank_best,rank_worst,verdict")


U = ("float", 0.0, 1.0)
LINEAR = {f"x{i}": U for i in range(6)}
LR_BOWL = {
    "lr": ("log", 1e-6, 1.0),
    "optimizer": ("cat", ("sgd", "momentum", "adam")),
    "epochs": ("int", 1, 50),
    "seed": ("int", 0, 10_000),
    "dropout": ("float", 0.0, 0.5),
    "activation": ("cat", ("relu", "gelu", "tanh", "silu")),
}


def _linear(p: dict[str, Any], rng: np.random.Generator) -> float:
    return 4 * p["x0"] + 2 * p["x1"] + p["x2"]


def _lr_bowl(p: dict[str, Any], rng: np.random.Generator) -> float:
    return (
        (math.log10(p["lr"]) + 3) ** 2
        + {"sgd": 3.0, "momentum": 1.5, "adam": 0.0}[p["optimizer"]]
        + 0.03 * p["epochs"]
    )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    ("space", "fn", "relevant"),
    [(LINEAR, _linear, ["x0", "x1", "x2"]), (LR_BOWL, _lr_bowl, ["lr", "optimizer", "epochs"])],
    ids=["linear", "lr_bowl"],
)
def test_at_50_runs_no_dummy_is_significant_and_a_wrong_order_is_shown_as_a_tie(
    space: dict[str, Any], fn: Any, relevant: list[str], seed: int
) -> None:
    result = get_param_importances(make_runs(space, fn, 50, seed), target="y")
    ranks = dict(zip([p.name for p in result.params], result.rank_ranges(), strict=True))
    imp = result.importances()
    for p in result.params:
        if p.name not in relevant:
            assert not p.significant, p
            assert all(ranks[p.name][1] > ranks[r][0] for r in relevant)  # never above, untied
    for a, b in itertools.pairwise(relevant):
        # Either the order is right, or the ranks say the two cannot be told apart.
        assert imp[a] > imp[b] or ranks[a][1] >= ranks[b][0], (a, b, ranks)
