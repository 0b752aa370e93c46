"""Fixtures for the MindSpore integration tests.

MindSpore is imported once per session, in process (``ms`` fixture), and runs in graph mode
on CPU: a tiny network compiles in about a second and then trains in milliseconds.
Subprocesses are used only where a separate process is the point (the example scripts and
the tuner campaign).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
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


GETTING_STARTED = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"
ROOT = Path(__file__).resolve().parents[2]


def _quickstart(argv: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{shlex.join(argv)}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The quickstart run as the page's first block runs it (its ``tuner run ...`` part), in
    a folder laid out like a clone; the folder and what ``tuner run`` printed on a pipe."""
    first = re.search(
        r"^```bash\n(.*?)^```", GETTING_STARTED.read_text(encoding="utf-8"), re.S | re.M
    )
    assert first, "the page has no bash block"
    command = first.group(1).strip().split("&& ")[-1]
    assert command == "tuner run configs/quickstart.yaml", command
    clone = tmp_path_factory.mktemp("clone")
    shutil.copytree(ROOT / "configs", clone / "configs")
    shutil.copytree(ROOT / "examples", clone / "examples")
    return clone, _quickstart(shlex.split(command), clone)
