"""Secrets inside list params, URL query parameters, ``@`` in URI passwords, and free text."""

from __future__ import annotations

import json

import pytest

from lineage._params import encode
from lineage._secrets import (
    MASK,
    mask_argv,
    mask_mapping,
    mask_uri,
    scrub_text,
    secret_values,
)


def test_list_params_are_masked_inside() -> None:
    text, kind = encode("dbs", [{"password": "x"}, {"host": "h", "uri": "pg://u:pw@h/d"}])
    assert kind == "list"
    assert json.loads(text) == [{"password": MASK}, {"host": "h", "uri": f"pg://u:{MASK}@h/d"}]
    text, _ = encode("urls", ["redis://u:hunter2@cache:6379", ["s3://x?token=abc"]])
    assert json.loads(text) == [f"redis://u:{MASK}@cache:6379", [f"s3://x?token={MASK}"]]
    text, _ = encode("layers", [64, 128, {"key_metric": "acc"}])
    assert json.loads(text) == [64, 128, {"key_metric": "acc"}]


def test_mask_mapping_recurses_into_lists() -> None:
    got = mask_mapping({"stores": [{"api_key": "k"}, {"name": "n"}], "tokenizer": "bpe"})
    assert got == {"stores": [{"api_key": MASK}, {"name": "n"}], "tokenizer": "bpe"}
    assert mask_mapping({"auth": {"user": "u", "password": "p"}}) == {"auth": MASK}


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("https://h/x?token=abc", f"https://h/x?token={MASK}"),
        ("https://h/x?a=1&access_token=abc&b=2", f"https://h/x?a=1&access_token={MASK}&b=2"),
        ("https://h/x?api_key=zz#frag", f"https://h/x?api_key={MASK}#frag"),
        ("https://h/x?apiKey=zz&max_tokens=5", f"https://h/x?apiKey={MASK}&max_tokens=5"),
        ("https://h/x?tokenizer=bpe&sort_key=a", "https://h/x?tokenizer=bpe&sort_key=a"),
        ("https://h/x?token=", "https://h/x?token="),
    ],
)
def test_secret_query_parameters(url: str, masked: str) -> None:
    assert mask_uri(url) == masked


@pytest.mark.parametrize(
    ("uri", "masked"),
    [
        ("postgresql://u:p@ss@host:5432/db", f"postgresql://u:{MASK}@host:5432/db"),
        ("mysql://u:a@b@c@host/db?x=1", f"mysql://u:{MASK}@host/db?x=1"),
        ("mysql://u:pa/ss@host/db", f"mysql://u:{MASK}@host/db"),
        ("redis://u:pw@h1 and http://v:w@h2", f"redis://u:{MASK}@h1 and http://v:{MASK}@h2"),
        ('"pg://u:p@x@h/d", other@mail.org', f'"pg://u:{MASK}@h/d", other@mail.org'),
        ("https://host/path@version", "https://host/path@version"),
        ("sqlite:////tmp/mlflow.db", "sqlite:////tmp/mlflow.db"),
    ],
)
def test_uri_passwords_holding_at(uri: str, masked: str) -> None:
    assert mask_uri(uri) == masked


def test_argv_with_uri_and_query_secrets() -> None:
    argv = ["train.py", "--db", "pg://u:p@ss@h/d", "--url=https://h/?token=t0k"]
    assert mask_argv(argv) == [
        "train.py",
        "--db",
        f"pg://u:{MASK}@h/d",
        f"--url=https://h/?token={MASK}",
    ]
    # -p is a port / prefix in most tools: not a secret flag.
    assert mask_argv(["-p", "8080"]) == ["-p", "8080"]


def test_secret_values_and_scrub_text() -> None:
    found = secret_values(
        [
            "python",
            "t.py",
            "--db-password",
            "hunter22",
            "--api-key=abcd1234",
            "HF_TOKEN=hf_x1y2",
            "--lr",
            "0.1",
            "--token",
            "ab",
        ],
        {"DB_TOKEN": "envtok99", "PATH": "/usr/bin", "MAX_TOKENS": "1024"},
    )
    # Values shorter than 4 characters are too common to replace in free text.
    assert found == {"hunter22", "abcd1234", "hf_x1y2", "envtok99"}
    text = (
        "args: --db-password hunter22 --api-key=abcd1234\n"
        "token envtok99 at postgresql://u:p@ss@h/db, lr 0.1, path /usr/bin, 1024 tokens\n"
    )
    got = scrub_text(text, found | {"", "ab"})
    assert got == (
        f"args: --db-password {MASK} --api-key={MASK}\n"
        f"token {MASK} at postgresql://u:{MASK}@h/db, lr 0.1, path /usr/bin, 1024 tokens\n"
    )
    # Longer secrets are replaced first, so one containing another leaves nothing behind.
    assert scrub_text("x secretvalue y", ["secret", "secretvalue"]) == f"x {MASK} y"
