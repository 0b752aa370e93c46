"""Fixtures for the MindSpore integration tests.

MindSpore is imported once per session, in process (``ms`` fixture), and runs in graph mode
on CPU: a tiny network compiles in about a second and then trains in milliseconds.
Subprocesses are used only where a separate process is the point (the example scripts and
the tuner campaign).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from lineage._params import decode_params, types_tag_from_tags
from lineage.store import open_store


@pytest.fixture(scope="session")
def ms() -> ModuleType:
    import mindspore

    mindspore.set_device("CPU")
    mindspore.set_context(mode=mindspore.GRAPH_MODE)
    return mindspore


class ArraySource:
    """Random-access GeneratorDataset source over numpy arrays (features, labels)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.x[i], np.asarray(self.y[i])

    def __len__(self) -> int:
        return len(self.x)


@pytest.fixture
def make_data(ms: ModuleType) -> Any:
    """``make_data(n, batch, seed=0, shuffle=False)`` -> a batched dataset of 8-feature rows."""
    from mindspore import dataset as mds

    def make(n: int, batch: int, seed: int = 0, shuffle: bool = False) -> Any:
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n, 8)).astype(np.float32)
        y = (x[:, 0] + x[:, 1] > 0).astype(np.int32) + 2 * (x[:, 2] > 0).astype(np.int32)
        src = mds.GeneratorDataset(ArraySource(x, y), ["x", "y"], shuffle=shuffle)
        return src.batch(batch)

    return make


@pytest.fixture
def tiny_net(ms: ModuleType) -> Any:
    """``tiny_net()`` -> a fresh ``TinyNet`` (8 -> 6 -> 4 classes; 54 + 28 = 82 weights)."""
    from mindspore import nn

    class TinyNet(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(8, 6)
            self.relu = nn.ReLU()
            self.fc2 = nn.Dense(6, 4)

        def construct(self, x: Any) -> Any:
            return self.fc2(self.relu(self.fc1(x)))

    return TinyNet


class RunView:
    """A recorded run read back through the lineage store (A's API)."""

    def __init__(self, uri: str, run_id: str) -> None:
        self.store = open_store(uri)
        self.uri = uri
        self.record = self.store.get_run(run_id)
        self.params = self.record.params
        # Original Python values, from the lineage.param_types tag.
        self.values = decode_params(self.record.params, types_tag_from_tags(self.record.tags))
        self.tags = self.record.tags
        self.histories = self.store.metric_histories(run_id)
        self.artifacts = self.store.artifacts(run_id)
        self.run_id = run_id

    def series(self, key: str) -> list[tuple[int, float]]:
        return [(p.step, p.value) for p in self.histories[key]]

    def artifact_json(self, path: str) -> Any:
        import mlflow

        local = mlflow.artifacts.download_artifacts(
            run_id=self.run_id, artifact_path=path, tracking_uri=self.uri
        )
        return json.loads(Path(local).read_text())


@pytest.fixture
def read_run() -> Any:
    return RunView
