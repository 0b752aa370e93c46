"""Conditional parameters on the command line (``{name?}``) and the warning about a parameter
no placeholder passes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from _campaign_base import base_config

from tuner import TunerError
from tuner.config import CampaignConfig, load_config

COMMAND = [
    "python",
    "train.py",
    "--lr",
    "{lr}",
    "--optimizer={optimizer}",
    "--momentum",
    "{momentum?}",
    "--m={momentum?}",
    "--layers",
    "{layers}",
]


def _config(write_config: Callable[..., Path], command: Any = COMMAND) -> CampaignConfig:
    data = base_config()
    data["command"] = command
    return load_config(write_config(data))


def test_inactive_conditional_vanishes_with_its_flag(write_config: Callable[..., Path]) -> None:
    config = _config(write_config)
    argv = config.argv({"lr": 0.01, "optimizer": "adam", "layers": 2})
    assert argv == ["python", "train.py", "--lr", "0.01", "--optimizer=adam", "--layers", "2"]
    assert not any("momentum" in a or a.startswith("--m") for a in argv)


def test_active_conditional_is_rendered(write_config: Callable[..., Path]) -> None:
    config = _config(write_config)
    argv = config.argv({"lr": 0.01, "optimizer": "sgd", "momentum": 0.9, "layers": 2})
    assert argv[4:8] == ["--optimizer=sgd", "--momentum", "0.9", "--m=0.9"]


def test_only_a_flag_right_before_a_lone_placeholder_goes_with_it(
    write_config: Callable[..., Path],
) -> None:
    # A positional before {momentum?}, a flag carrying its own value, a negative number: kept.
    command = ["python", "train.py", "{momentum?}", "--seed=3", "{momentum?}", "-1", "{momentum?}"]
    config = _config(write_config, command)
    assert config.argv({}) == ["python", "train.py", "--seed=3", "-1"]
    # The flag belongs to the placeholder only when the placeholder is the whole element.
    config = _config(write_config, ["python", "t.py", "--momentum", "m{momentum?}"])
    assert config.argv({}) == ["python", "t.py", "--momentum"]


def test_string_command_splits_into_the_same_pair(write_config: Callable[..., Path]) -> None:
    config = _config(write_config, "python train.py --momentum {momentum?} --lr={lr}")
    assert config.argv({"lr": 0.1}) == ["python", "train.py", "--lr=0.1"]
    assert config.render_command({"lr": 0.1, "momentum": 0.5}) == [
        "python",
        "train.py",
        "--momentum",
        "0.5",
        "--lr=0.1",
    ]


def test_a_required_placeholder_without_a_value_still_fails(
    write_config: Callable[..., Path],
) -> None:
    config = _config(write_config)
    with pytest.raises(TunerError, match=r"placeholder \{layers\} has no value"):
        config.argv({"lr": 0.1, "optimizer": "adam"})


def test_builtins_and_json_braces(write_config: Callable[..., Path]) -> None:
    config = _config(write_config, ["python", "t.py", "{trial}", '{"a": 1}', "{{lr}}", "{run_id?}"])
    assert config.argv({}, trial=4) == ["python", "t.py", "4", '{"a": 1}', "{lr}"]
    assert config.argv({}, trial=4, run_id="abc")[-1] == "abc"


def _validate(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", "validate", path.name, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=path.parent,
    )


def test_validate_warns_about_a_parameter_no_placeholder_passes(
    write_config: Callable[..., Path],
) -> None:
    data = base_config()  # passes {lr} and {trial}: optimizer, momentum and layers reach nothing
    path = write_config(data)
    proc = _validate(path)
    assert proc.returncode == 0, proc.stderr
    assert "c.yaml: valid" in proc.stdout
    assert proc.stderr == (
        "tuner validate: warning: c.yaml: parameters optimizer, momentum, layers appear in no "
        "command placeholder, so a script that reads only its arguments never receives them; "
        "add {optimizer} to command, or set reads_tuner_params: true if the script reads "
        "TUNER_PARAMS.\n"
    )
    proc = _validate(path, "--format", "json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["warnings"] == [proc.stderr.split("warning: ", 1)[1].strip()]


def test_validate_suggests_the_optional_form_for_a_conditional(
    write_config: Callable[..., Path],
) -> None:
    data = base_config()
    data["command"] = "python train.py --lr {lr} --opt {optimizer} --layers {layers} {trial}"
    proc = _validate(write_config(data))
    assert proc.returncode == 0
    assert proc.stderr.count("\n") == 1
    assert "parameter momentum appears in no command placeholder" in proc.stderr
    assert "add {momentum?} to command" in proc.stderr


def test_reads_tuner_params_silences_the_warning(write_config: Callable[..., Path]) -> None:
    data = base_config()
    data["reads_tuner_params"] = True
    proc = _validate(write_config(data))
    assert proc.returncode == 0 and proc.stderr == ""
    data = base_config()
    data["command"] = COMMAND
    proc = _validate(write_config(data))
    assert proc.returncode == 0 and proc.stderr == ""


TRIAL = """
import json, os, sys
from tuner import trial
with open(f"argv-{os.environ['MLFLOW_RUN_ID']}.json", "w") as f:
    json.dump({"argv": sys.argv[1:], "params": trial.params()}, f)
trial.report(0, val_loss=float(sys.argv[sys.argv.index("--lr") + 1]))
"""


@pytest.mark.slow
def test_campaign_trials_get_no_inactive_flag(tmp_path: Path, sqlite_uri: str) -> None:
    (tmp_path / "train.py").write_text(TRIAL)
    data: dict[str, Any] = {
        "name": "argv",
        "command": [sys.executable, "train.py", *COMMAND[2:]],
        "target": {"metric": "val_loss", "goal": "minimize"},
        "parameters": base_config()["parameters"],
        "budget": {"trials": 8},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu"},
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": sqlite_uri},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "run", "--quiet", "c.yaml"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("argv-*.json"))]
    assert len(seen) == 8
    optimizers = {s["params"]["optimizer"] for s in seen}
    assert optimizers == {"sgd", "adam"}, "the seed must give both branches"
    for s in seen:
        argv, params = s["argv"], s["params"]
        if params["optimizer"] == "sgd":
            i = argv.index("--momentum")
            assert float(argv[i + 1]) == params["momentum"]
            assert f"--m={argv[i + 1]}" in argv
        else:
            assert "momentum" not in params
            assert not any(a.startswith(("--momentum", "--m=")) for a in argv), argv
            assert "" not in argv
        assert argv[-2:] == ["--layers", str(params["layers"])]
