"""A valid campaign config that the tests change one key at a time."""

from __future__ import annotations

import copy
from typing import Any

BASE: dict[str, Any] = {
    "name": "digits",
    "command": ["python", "train.py", "--lr", "{lr}", "--trial", "{trial}"],
    "target": {"metric": "val_loss", "goal": "minimize"},
    "parameters": {
        "lr": {"type": "float", "low": 1e-5, "high": 0.1, "log": True},
        "optimizer": {"type": "categorical", "choices": ["sgd", "adam"]},
        "momentum": {"type": "float", "low": 0.0, "high": 0.99, "when": {"optimizer": "sgd"}},
        "layers": {"type": "int", "low": 1, "high": 4},
    },
    "budget": {"trials": 8},
}


def base_config() -> dict[str, Any]:
    return copy.deepcopy(BASE)
