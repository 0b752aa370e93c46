"""Secrets never reach the store: command lines, environment, configuration, URIs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lineage._identity import identity_tags, recorded_environment
from lineage._secrets import MASK, mask_argv, mask_mapping, mask_uri


def test_argv_flags_and_assignments_are_masked() -> None:
    argv = [
        "train.py",
        "--lr",
        "0.1",
        "--api-key",
        "sk-123",
        "--db-password=hunter2",
        "HF_TOKEN=hf_abc",
        "--store",
        "postgresql://alice:s3cret@db:5432/ml",
        "--epochs=3",
    ]
    masked = mask_argv(argv)
    text = " ".join(masked)
    for secret in ("sk-123", "hunter2", "hf_abc", "s3cret"):
        assert secret not in text
    assert masked[:3] == ["train.py", "--lr", "0.1"] and "--epochs=3" in masked
    assert f"--db-password={MASK}" in masked and f"HF_TOKEN={MASK}" in masked


def test_uri_passwords_are_masked_anywhere_in_text() -> None:
    assert mask_uri("see http://u:p%40ss@host/x and redis://:pw@r:6379") == (
        f"see http://u:{MASK}@host/x and redis://:{MASK}@r:6379"
    )
    assert mask_uri("sqlite:///mlflow.db") == "sqlite:///mlflow.db"


def test_config_mappings_are_masked_recursively() -> None:
    cfg = {"model": {"depth": 3}, "aws": {"secret_access_key": "x", "region": "eu"}, "Token": "t"}
    assert mask_mapping(cfg) == {
        "model": {"depth": 3},
        "aws": {"secret_access_key": MASK, "region": "eu"},
        "Token": MASK,
    }


def test_recorded_environment_keeps_device_vars_and_masks_secrets() -> None:
    env = {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "MLFLOW_TRACKING_URI": "postgresql://bob:pw123@db/ml",
        "MLFLOW_TRACKING_TOKEN": "tok",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "x",
    }
    rec = recorded_environment(env)
    assert rec == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "MLFLOW_TRACKING_TOKEN": MASK,
        "MLFLOW_TRACKING_URI": f"postgresql://bob:{MASK}@db/ml",
    }


def test_identity_tags_carry_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "postgresql://bob:pw123@db/ml")
    monkeypatch.setenv("TUNER_API_TOKEN", "tok-xyz")
    tags = identity_tags(["train.py", "--password", "hunter2", "--url=http://a:b@c"])
    blob = json.dumps(tags)
    for secret in ("pw123", "tok-xyz", "hunter2", ":b@"):
        assert secret not in blob
    assert json.loads(tags["lineage.command"])[1:] == [
        "train.py",
        "--password",
        MASK,
        f"--url=http://a:{MASK}@c",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "--api-key",
        "apiKey",
        "AWS_SECRET_ACCESS_KEY",
        "db.password",
        "AUTH",
        "accessToken",
        "MLFLOW_TRACKING_TOKEN",
        "wandb_api_key",
        "client_secret",
        "--auth-token",
        "private_key",
        "PASSWD",
        "DB_PWD",
    ],
)
def test_secret_names(name: str) -> None:
    from lineage._secrets import is_secret_name

    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "tokenizer",
        "max_tokens",
        "num_tokens",
        "author",
        "sort_key",
        "monkey",
        "keyboard_layout",
        "key_metric",
        "lr",
        "PWD",
        "OLDPWD",
    ],
)
def test_ordinary_settings_stay_readable(name: str) -> None:
    from lineage._secrets import is_secret_name

    assert not is_secret_name(name)


def test_the_working_directory_stays_readable_in_trial_output(tmp_path: Path) -> None:
    """The shell's PWD is the trial's folder, not a password: output naming a path under it
    keeps the path, while a password-named variable's value is still scrubbed."""
    from lineage._secrets import scrub_text, secret_values

    env = {"PWD": str(tmp_path), "OLDPWD": "/home/me", "DB_PWD": "hunter2-planted"}
    known = secret_values(env=env)
    text = scrub_text(f"saved to {tmp_path}/ckpt; password hunter2-planted", known)
    assert f"{tmp_path}/ckpt" in text and "hunter2-planted" not in text
