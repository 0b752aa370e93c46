"""What the recorder reads from MindSpore objects, without training (fast)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = [pytest.mark.mindspore]


def test_parameter_groups_collapse_to_the_users_groups(ms: ModuleType, tiny_net: Any) -> None:
    from mindspore import nn

    from lineage.mindspore import _introspect as intro

    net = tiny_net()
    first, rest = net.fc1.trainable_params(), net.fc2.trainable_params()
    schedule = nn.CosineDecayLR(0.0, 0.1, 10)
    opt = nn.Momentum(
        [{"params": first, "lr": schedule, "weight_decay": 0.01}, {"params": rest, "lr": 0.02}],
        learning_rate=0.1,
        momentum=0.9,
    )
    p = intro.optimizer_params(opt)
    assert p["optimizer.groups"] == 2
    assert (p["optimizer.group0.params"], p["optimizer.group1.params"]) == (2, 2)
    assert p["optimizer.group0.lr_schedule"] == "CosineDecayLR"
    assert p["optimizer.group0.lr_schedule.max_lr"] == 0.1
    assert p["optimizer.group0.weight_decay"] == 0.01
    assert (p["optimizer.group1.lr"], p["optimizer.group1.weight_decay"]) == (0.02, 0.0)
    lr = intro.LrEvaluator(intro.learning_rates(opt))
    assert lr.dynamic
    assert lr.at(5) == pytest.approx([0.05, 0.02])  # cosine half way, constant group


def test_file_sources_are_fingerprinted_with_their_bytes(ms: ModuleType, tmp_path: Path) -> None:
    from mindspore import dataset as mds

    from lineage.mindspore._dataset import describe_dataset

    path = tmp_path / "rows.csv"
    path.write_text("".join(f"{i},{i % 3}\n" for i in range(50)))
    ds = mds.CSVDataset(str(path), column_names=["x", "y"], shuffle=False).batch(8)
    info = describe_dataset(ds, "train")
    file_sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert info.fingerprint == "sha256:" + hashlib.sha256(f"{file_sha}\n".encode()).hexdigest()
    assert info.sources == [str(path)]
    assert (info.samples, info.batch_size, info.steps) == (50, 8, 7)
    assert info.pipeline is not None and info.pipeline["op_type"] == "Batch"
    path.write_text(path.read_text() + "50,2\n")  # new content, new fingerprint
    again = describe_dataset(
        mds.CSVDataset(str(path), column_names=["x", "y"], shuffle=False).batch(8), "train"
    )
    assert again.fingerprint != info.fingerprint


def test_bad_options_are_refused_with_the_rule(ms: ModuleType) -> None:
    from lineage import UsageError
    from lineage.mindspore import LineageCallback

    with pytest.raises(UsageError, match=r"log_every must be an int >= 1, got 0"):
        LineageCallback(log_every=0)
    with pytest.raises(UsageError, match=r"checkpoints must be False, True or 'last', got 'all'"):
        LineageCallback(checkpoints="all")
