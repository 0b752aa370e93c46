"""What the three PyTorch examples share: hyperparameters in, digits data out.

Hyperparameters come from defaults, then the tuner's ``TUNER_PARAMS``, then the command line
(``--lr 0.05``), in that order of precedence, so a script runs the same by hand and as a trial.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tuner import trial


def params(defaults: dict[str, Any], argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    for key, value in defaults.items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=None)
    args = parser.parse_args(argv)
    out = dict(defaults)
    out.update({k: type(defaults[k])(v) for k, v in trial.params().items() if k in defaults})
    out.update({k: v for k, v in vars(args).items() if v is not None})
    return out


def digits(train_size: int = 1437) -> tuple[Any, Any]:
    """scikit-learn's 8x8 digits as float tensors in [0, 1]: (train, validation) datasets."""
    # The CSV scikit-learn ships, read without importing scikit-learn (a second at start-up).
    spec = importlib.util.find_spec("sklearn")
    assert spec is not None and spec.submodule_search_locations, "pip install scikit-learn"
    csv = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    table = np.loadtxt(csv, delimiter=",")
    x, y = table[:, :-1], table[:, -1]
    xt = torch.tensor(x / 16.0, dtype=torch.float32)
    yt = torch.tensor(y, dtype=torch.long)
    cut = min(train_size, 1437)
    data = torch.utils.data.TensorDataset
    return data(xt[:cut], yt[:cut]), data(xt[1437:], yt[1437:])


def mlp(hidden: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
    )
