"""The importance model is chosen in the open: ``auto | forest | gp``, and every output says
which model ran, why, and each candidate's R² on held-out runs."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from importance_cases import make_runs

from lineage import UsageError
from lineage.cli import main
from lineage.importance import evaluator_for, get_param_importances, model_line

LINEAR = {f"x{i}": ("float", 0.0, 1.0, False) for i in range(3)}


def _linear(p: dict[str, Any], rng: np.random.Generator) -> float:
    return 4 * p["x0"] + 2 * p["x1"] + 0.01 * rng.normal()


def test_auto_takes_the_gaussian_process_on_enough_smooth_complete_runs() -> None:
    runs = make_runs(LINEAR, _linear, 200, 0)
    result = get_param_importances(runs, target="y", evaluator=evaluator_for("auto"))
    assert result.model == "gaussian process"
    assert result.model_reason.startswith("auto: ") and "held-out R²" in result.model_reason
    assert result.r2["gaussian process"] > 0.9
    assert model_line(result).startswith("model: gaussian process (auto: ")


def test_auto_takes_the_forest_on_few_runs_and_says_why() -> None:
    runs = make_runs(LINEAR, _linear, 20, 0)
    result = get_param_importances(runs, target="y")
    assert result.model == "random forest"
    assert "20 runs: the Gaussian process is tried from 200" in result.model_reason
    assert set(result.r2) == {"random forest"}


@pytest.mark.parametrize(
    ("method", "model"), [("forest", "random forest"), ("gp", "gaussian process")]
)
def test_a_named_method_runs_that_model(method: str, model: str) -> None:
    runs = make_runs(LINEAR, _linear, 24, 0)
    result = get_param_importances(runs, target="y", evaluator=evaluator_for(method))
    assert result.model == model and result.model_reason == "asked for"
    assert list(result.r2) == [model]
    assert result.to_dict()["model"] == model


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(UsageError, match="method must be one of auto, forest, gp, got 'svm'"):
        evaluator_for("svm")


BOWL = ["importance", "-e", "bowl", "--target", "loss", "--goal", "minimize"]


def test_cli_names_the_model_in_table_and_json(
    capsys: pytest.CaptureFixture[str], mlflow_uri: str
) -> None:
    assert main([*BOWL, "--tracking-uri", mlflow_uri]) == 0
    out = capsys.readouterr().out
    # The bowl store has a conditional parameter (momentum): only the forest handles gaps.
    assert "model: random forest (auto: a parameter is unset in some runs" in out
    assert (
        main([*BOWL, "--method", "forest", "--format", "json", "--tracking-uri", mlflow_uri]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "random forest" and doc["model_reason"] == "asked for"
    assert set(doc["r2"]) == {"random forest"}


def test_cli_gp_ranks_runs_with_a_conditional_parameter(
    capsys: pytest.CaptureFixture[str], mlflow_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``momentum`` is set only where ``optimizer`` is momentum: the Gaussian process fills
    its gaps and ranks it with the others, in the table and in JSON."""
    monkeypatch.setenv("COLUMNS", "200")  # the whole table, whatever the worker's terminal
    argv = [*BOWL, "--method", "gp", "--tracking-uri", mlflow_uri]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "model: gaussian process (asked for" in out and err == ""
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ranked = {p["name"]: p for p in doc["params"]}
    assert doc["model"] == "gaussian process"
    assert ranked["momentum"]["missing"] > 0
    assert [p["name"] for p in doc["params"][:2]] == ["lr", "optimizer"]
    assert not ranked["momentum"]["significant"] and not ranked["seed"]["significant"]
