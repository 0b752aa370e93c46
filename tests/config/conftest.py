"""Fixtures for the campaign-config tests: a valid base config and a writer for variants."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """``write_config(data_or_text, name="c.yaml")`` writes a YAML file in the test's dir."""

    def write(data: Any, name: str = "c.yaml") -> Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        path.write_text(text, encoding="utf-8")
        return path

    return write
