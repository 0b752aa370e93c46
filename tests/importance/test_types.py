"""Type inference and encoding of MLflow's string params."""

from __future__ import annotations

import numpy as np
import pytest

from lineage.importance import encode, infer_spec
from lineage.importance._types import MISSING, numeric_values


def test_numeric_strings_become_numbers() -> None:
    spec = infer_spec("wd", ["0.1", "1e-1", "0.25", "3", "2.5E0", "1"])
    assert spec.kind == "numeric"
    assert not spec.log  # 0.1 .. 3 spans 1.5 decades
    np.testing.assert_allclose(numeric_values(spec, ["1e-2", "3"]), [0.01, 3.0])


def test_log_scale_for_positive_values_spread_over_two_decades() -> None:
    rng = np.random.default_rng(0)
    lrs = [str(v) for v in 10 ** rng.uniform(-5, -1, size=50)]
    spec = infer_spec("lr", lrs)
    assert spec.kind == "numeric" and spec.log
    np.testing.assert_allclose(numeric_values(spec, ["0.001"]), [-3.0])
    assert infer_spec("batch", ["16", "32", "64", "128", "256", "512", "1024", "2048"]).log


def test_linear_for_narrow_or_linearly_spread_or_non_positive_values() -> None:
    rng = np.random.default_rng(0)
    assert not infer_spec("momentum", ["0.5", "0.9", "0.99"]).log  # < 2 decades
    assert not infer_spec("x", ["-1", "10", "1000"]).log  # not all positive
    # uniform(0, 0.5) dropout and a seed in [1, 10000] span > 2 decades, spread linearly
    assert not infer_spec("dropout", [str(v) for v in rng.uniform(0.001, 0.5, 200)]).log
    assert not infer_spec("seed", [str(v) for v in rng.integers(1, 10_000, 200)]).log


@pytest.mark.parametrize(
    "values",
    [["adam", "sgd", "adam"], ["True", "False", "True"], ["1", "two", "3"], ["inf", "1", "2"]],
)
def test_everything_else_is_categorical(values: list[str]) -> None:
    spec = infer_spec("p", values)
    assert spec.kind == "categorical"
    assert set(spec.categories) == set(values)


def test_missing_values_are_explicit() -> None:
    numeric = infer_spec("momentum", ["0.9", None, "None", "", "0.5"])
    assert numeric.kind == "numeric" and numeric.n_missing == 3
    assert np.isnan(numeric_values(numeric, [None, "0.9"])[0])
    categorical = infer_spec("sched", ["cos", None, "step", "cos"])
    assert categorical.categories == ("cos", "step", MISSING)


def test_encoding_one_hot_groups_and_missing_masks() -> None:
    columns = {
        "lr": ["0.1", "0.01", "0.001", "0.1"],
        "opt": ["adam", "sgd", "rmsprop", "adam"],
        "amp": ["True", "False", "True", "True"],
        "mom": ["0.9", None, None, "0.8"],
    }
    specs = [infer_spec(k, v) for k, v in columns.items()]
    data = encode(specs, columns)
    assert [len(g) for g in data.groups] == [1, 3, 1, 1]  # two levels need one column
    assert data.X.shape == (4, 6)
    np.testing.assert_array_equal(data.X[:, data.groups[1]].sum(axis=1), 1.0)
    np.testing.assert_array_equal(data.missing[3], [False, True, True, False])
    assert not data.missing[0].any()


def test_many_categories_are_pooled() -> None:
    values = [f"v{i}" for i in range(100)] + ["v0"] * 5
    spec = infer_spec("label", values)
    assert len(spec.categories) == 32 and spec.categories[-1] == "(other)"
    data = encode([spec], {"label": values})
    assert data.X.shape[1] == 32
