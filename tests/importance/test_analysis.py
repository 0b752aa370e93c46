"""``get_param_importances``: input forms, refusals, ``top``, normalization; the plots."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from importance_cases import make_runs

from lineage import NotFoundError, UsageError
from lineage.importance import RandomForestImportance, get_param_importances, render_importance

SPACE = {
    "lr": ("log", 1e-5, 1e-1),
    "opt": ("cat", ("sgd", "adam")),
    "seed": ("int", 0, 1000),
}


def _fn(p: dict[str, Any], rng: np.random.Generator) -> float:
    return (math.log10(p["lr"]) + 3) ** 2 + (1.0 if p["opt"] == "sgd" else 0.0)


FAST = RandomForestImportance(n_bootstrap=8, n_estimators=8)


def test_refuses_fewer_than_eight_runs() -> None:
    runs = make_runs(SPACE, _fn, 7, 0)
    with pytest.raises(UsageError, match="at least 8 runs with a finite 'y', got 7"):
        get_param_importances(runs, target="y")


def test_runs_without_a_finite_target_do_not_count() -> None:
    runs = make_runs(SPACE, lambda p, r: float("nan") if p["seed"] % 2 else _fn(p, r), 12, 0)
    finite = sum(math.isfinite(r.metrics["y"]) for r in runs)
    with pytest.raises(UsageError, match=f"got {finite}"):
        get_param_importances(runs, target="y")


def test_refuses_constant_target() -> None:
    runs = make_runs(SPACE, lambda p, r: 0.5, 20, 0)
    with pytest.raises(UsageError, match=r"target 'y' is constant \(0.5\) over the 20 runs"):
        get_param_importances(runs, target="y")


def test_unknown_target_and_param_name_what_exists() -> None:
    runs = make_runs(SPACE, _fn, 20, 0)
    with pytest.raises(NotFoundError, match=r"'acc' is not logged .* \(metrics seen: y\)"):
        get_param_importances(runs, target="acc")
    with pytest.raises(NotFoundError, match=r"param 'wd' .* \(params seen: lr, opt, seed\)"):
        get_param_importances(runs, target="y", params=["wd"])


@pytest.mark.parametrize("kwargs", [{"goal": "up"}, {"top": 0.0}, {"top": 1.5}])
def test_bad_arguments(kwargs: dict[str, Any]) -> None:
    runs = make_runs(SPACE, _fn, 20, 0)
    with pytest.raises(UsageError):
        get_param_importances(runs, target="y", **kwargs)


def test_top_fraction_selects_the_best_runs() -> None:
    runs = make_runs(SPACE, _fn, 40, 1)
    full = get_param_importances(runs, target="y", goal="maximize", evaluator=FAST)
    top = get_param_importances(runs, target="y", goal="maximize", top=0.25, evaluator=FAST)
    assert top.n_runs == 10 and full.n_runs == 40
    assert min(top.target_values) >= np.quantile(full.target_values, 0.74)
    with pytest.raises(UsageError, match="keeps 4 of 40 runs"):
        get_param_importances(runs, target="y", top=0.1)


def test_params_subset_constant_and_identifier_params_are_not_ranked() -> None:
    runs = make_runs(SPACE, _fn, 30, 2)
    for i, r in enumerate(runs):
        r.params["batch"] = "32"
        r.params["out_dir"] = f"/tmp/run{i}"
    result = get_param_importances(runs, target="y", evaluator=FAST)
    assert result.dropped == {"batch": "constant", "out_dir": "a different value in every run"}
    assert {p.name for p in result.params} == {"lr", "opt", "seed"}
    only = get_param_importances(runs, target="y", params=["lr", "opt"], evaluator=FAST)
    assert [p.name for p in only.params] == ["lr", "opt"]
    assert math.isclose(sum(only.importances().values()), 1.0)


def test_mlflow_search_runs_frame_is_accepted() -> None:
    pd = pytest.importorskip("pandas")
    runs = make_runs(SPACE, _fn, 30, 3)
    frame = pd.DataFrame(
        [
            {
                "run_id": r.run_id,
                "tags.mlflow.runName": r.name,
                **{f"params.{k}": v for k, v in r.params.items()},
                **{f"metrics.{k}": v for k, v in r.metrics.items()},
            }
            for r in runs
        ]
    )
    a = get_param_importances(frame, target="y", evaluator=RandomForestImportance(n_bootstrap=6))
    b = get_param_importances(runs, target="y", evaluator=RandomForestImportance(n_bootstrap=6))
    assert a.importances() == pytest.approx(b.importances())
    assert a.run_names == b.run_names


def test_all_plots_exist_and_open(tmp_path: Path) -> None:
    from matplotlib.image import imread

    space = {**SPACE, "momentum": ("float", 0.5, 0.99), "act": ("cat", ("relu", "gelu", "tanh"))}
    runs = make_runs(
        space,
        _fn,
        60,
        4,
        drop=lambda p: [] if p["opt"] == "sgd" else ["momentum"],
    )
    result = get_param_importances(runs, target="y", top=0.9, evaluator=FAST)
    files = render_importance(result, tmp_path / "out")
    names = {f.relative_to(tmp_path / "out").as_posix() for f in files}
    assert names == {
        "importance.png",
        "target_distribution.png",
        "importance.html",
        *(f"scatter/{p}.png" for p in ["lr", "opt", "seed", "momentum", "act"]),
    }
    for f in files:
        if f.suffix == ".png":
            image = imread(f)
            assert image.shape[0] >= 300 and image.shape[1] >= 500, f
            assert image[..., :3].std() > 0.05, f  # not a blank canvas
    page = (tmp_path / "out" / "importance.html").read_text(encoding="utf-8")
    assert page.count("Plotly.newPlot") == 2 + len(result.params)
