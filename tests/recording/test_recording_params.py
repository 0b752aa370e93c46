"""Flattening, encoding and type recovery of hyperparameters (no store needed)."""

from __future__ import annotations

import json

import pytest

from lineage import UsageError
from lineage._params import (
    TYPES_TAG,
    decode_params,
    encode_params,
    flatten,
    same_param_value,
    split_types_tag,
    types_tag_from_tags,
)


def test_flatten_nests_with_dots_and_keeps_leaves() -> None:
    flat = flatten(
        {"optimizer": {"name": "sgd", "lr": 0.1, "betas": {"b1": 0.9}}, "epochs": 3, "empty": {}}
    )
    assert flat == {
        "optimizer.name": "sgd",
        "optimizer.lr": 0.1,
        "optimizer.betas.b1": 0.9,
        "epochs": 3,
        "empty": {},
    }


def test_types_round_trip_through_strings() -> None:
    original = {
        "lr": 1e-05,
        "epochs": 12,
        "nesterov": False,
        "scheduler": None,
        "layers": [64, 32],
        "name": "resnet",
        "numeric_string": "42",
        "big": 12345678901234567890,
        "tiny": 5e-324,
        "empty": {},
    }
    texts, types = encode_params(original)
    assert all(isinstance(v, str) for v in texts.values())
    assert texts["lr"] == "1e-05" and texts["nesterov"] == "False" and texts["layers"] == "[64, 32]"
    assert "name" not in types and "numeric_string" not in types  # strings are the default
    decoded = decode_params(texts, json.dumps(types))
    assert decoded == original
    assert type(decoded["epochs"]) is int and type(decoded["lr"]) is float
    assert decoded["numeric_string"] == "42"  # a string that looks like a number stays a string


def test_numpy_scalars_are_plain_numbers() -> None:
    np = pytest.importorskip("numpy")
    texts, types = encode_params({"lr": np.float32(0.5), "bs": np.int64(8)})
    assert texts == {"lr": "0.5", "bs": "8"} and types == {"lr": "float", "bs": "int"}


def test_decode_without_tag_keeps_strings() -> None:
    assert decode_params({"lr": "0.1"}, None) == {"lr": "0.1"}
    assert decode_params({"lr": "0.1"}, "not json") == {"lr": "0.1"}


def test_secret_params_are_masked() -> None:
    texts, _ = encode_params(
        {"db": {"password": "hunter2", "url": "postgresql://u:pw@h/db"}, "api_key": "sk-1"}
    )
    assert texts["db.password"] == "****" and texts["api_key"] == "****"
    assert texts["db.url"] == "postgresql://u:****@h/db"


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"x" * 251: 1}, "at most 250 characters"),
        ({"bad!name": 1}, "may only contain"),
        ({"../up": 1}, "path"),
        ({"long": "v" * 6001}, "at most 6000 characters"),
    ],
)
def test_mlflow_param_rules_give_clear_errors(params: dict[str, object], fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        encode_params(params)


def test_types_tag_splits_past_mlflow_tag_limit_and_merges_back() -> None:
    types = {f"group{i:04d}.some_long_parameter_name": "float" for i in range(400)}
    tags = split_types_tag(types)
    assert len(tags) > 1 and all(len(v) <= 8000 for v in tags.values())
    assert TYPES_TAG in tags and f"{TYPES_TAG}.1" in tags
    merged = types_tag_from_tags(tags)
    assert merged is not None and json.loads(merged) == types


def test_same_param_value_treats_equal_numbers_as_equal() -> None:
    assert same_param_value("3", "3.0") and same_param_value("0.1", "0.1")
    assert not same_param_value("0.1", "0.2") and not same_param_value("a", "b")
