"""Fixtures for the PyTorch, Lightning and Hugging Face Trainer tests.

torch is imported once per session, in process; the data is scikit-learn's digits (8x8
images, 10 classes) cut to a few batches, and the model a 64-16-10 MLP, so a training takes
milliseconds and each test's time goes to the store and the framework's own start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from lineage._params import decode_params, types_tag_from_tags
from lineage.store import open_store


class RunView:
    """A recorded run read back through the lineage store."""

    def __init__(self, uri: str, run_id: str) -> None:
        store = open_store(uri)
        self.record = store.get_run(run_id)
        self.values = decode_params(self.record.params, types_tag_from_tags(self.record.tags))
        self.tags = self.record.tags
        self.histories = store.metric_histories(run_id)
        self.artifacts = store.artifacts(run_id)

    def series(self, key: str) -> list[tuple[int, float]]:
        return [(p.step, p.value) for p in self.histories[key]]


@pytest.fixture
def read_run() -> Any:
    return RunView


@pytest.fixture(scope="session")
def digits() -> tuple[Any, Any]:
    """256 training and 64 validation digits as float tensors scaled to [0, 1]."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    xt = torch.tensor(x[:320] / 16.0, dtype=torch.float32)
    yt = torch.tensor(y[:320], dtype=torch.long)
    data = torch.utils.data.TensorDataset
    return data(xt[:256], yt[:256]), data(xt[256:], yt[256:])


@pytest.fixture
def mlp() -> Any:
    """``mlp()`` -> a fresh seeded 64-16-10 MLP."""

    def make() -> Any:
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)
        )

    return make


@pytest.fixture
def examples(repo_root: Path) -> Path:
    return repo_root / "examples"
