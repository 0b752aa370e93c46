"""Sampler and pruner names live in the registry only; the config and its schema follow it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _campaign_base import base_config

from tuner.cli import main
from tuner.config import load_config
from tuner.search import _registry


def test_schema_enums_are_the_registry_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    defs = schema["$defs"]
    assert defs["SamplerConfig"]["properties"]["name"]["enum"] == list(_registry.SAMPLERS)
    assert defs["PrunerConfig"]["properties"]["name"]["enum"] == list(_registry.PRUNERS)
    assert defs["SamplerConfig"]["properties"]["name"]["default"] == "tpe"
    assert "reads_tuner_params" in schema["properties"]


def test_a_name_added_to_the_registry_is_accepted_by_the_config(
    write_config: Callable[..., Path],
) -> None:
    # The config's allowed names are computed from the registry when tuner.config loads:
    # checked in a fresh interpreter with one more pruner registered.
    data = base_config()
    data["pruner"] = {"name": "wilcoxon"}
    path = write_config(data)
    code = (
        "from tuner.search import _registry as r\n"
        "r.PRUNERS['wilcoxon'] = r._class('optuna.pruners', 'WilcoxonPruner')\n"
        "from tuner.config import load_config\n"
        f"print(load_config({str(path)!r}).pruner.name)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "wilcoxon"


def test_every_registered_class_exists() -> None:
    for table in (_registry.SAMPLERS, _registry.PRUNERS):
        for name, load in table.items():
            assert isinstance(load(), type), name


def test_registry_imports_neither_the_config_nor_optuna() -> None:
    code = (
        "import sys, tuner.search._registry\n"
        "print(sorted(m for m in sys.modules if m.startswith(('optuna', 'tuner.config'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_grace_period_default_is_the_models(write_config: Callable[..., Path]) -> None:
    config = load_config(write_config(base_config()))
    assert config.trial.grace_period == 10.0
    assert type(config.trial).model_fields["grace_period"].default == 10.0


def test_no_sampler_or_pruner_name_is_spelled_in_the_config_package() -> None:
    import ast

    import tuner.config

    names = set(_registry.SAMPLERS) | set(_registry.PRUNERS)
    found = []
    for path in sorted(Path(tuner.config.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.name}:{node.lineno} {node.value!r}")
    assert found == []
