"""Good campaign configs load, defaults are filled in, helpers resolve the two stores."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _campaign_base import base_config

from tuner import ConfigError
from tuner.cli import main
from tuner.config import CampaignConfig, load_config, parse_config
from tuner.config._load import _Loader

FULL_EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "example-full.yaml"


def test_base_config_defaults(write_config: Callable[..., Path], tmp_path: Path) -> None:
    config = load_config(write_config(base_config()))
    assert isinstance(config, CampaignConfig)
    assert config.source_path == tmp_path / "c.yaml"
    assert config.workdir == tmp_path
    assert config.study_name == "digits"
    assert config.experiment == "digits"
    assert config.directions == ["minimize"]
    assert config.metric_names == ["val_loss"]
    assert config.budget.max_failures == 5 and config.budget.timeout is None
    assert config.trial.retries == 0 and config.trial.grace_period == 10.0
    assert config.sampler.name == "tpe" and config.pruner.name == "median"
    assert config.resources.devices == "auto" and config.resources.parallel == 1
    assert config.executor.name == "local" and config.diagnosis.early_stop is True
    assert config.parameters["lr"].low == 1e-5 and config.parameters["lr"].log
    assert config.parameters["layers"].low == 1 and isinstance(config.parameters["layers"].low, int)


def test_command_string_is_split_like_a_shell_but_kept_as_data(
    write_config: Callable[..., Path],
) -> None:
    data = base_config()
    data["command"] = "python 'my train.py' --lr={lr} --epochs 3 --note \"a; rm -rf /\""
    config = load_config(write_config(data))
    assert config.command == [
        "python",
        "my train.py",
        "--lr={lr}",
        "--epochs",
        "3",
        "--note",
        "a; rm -rf /",
    ]
    argv = config.render_command({"lr": 0.01})
    assert argv[2] == "--lr=0.01"
    assert config.render_command({"lr": "; touch pwned"})[2] == "--lr=; touch pwned"


def test_command_list_numbers_become_text_and_json_braces_survive(
    write_config: Callable[..., Path],
) -> None:
    data = base_config()
    data["command"] = ["python", "t.py", "--epochs", 3, "--cfg", '{"depth": 3}', "{{lr}}", "{lr}"]
    config = load_config(write_config(data))
    assert config.render_command({"lr": 0.5}) == [
        "python",
        "t.py",
        "--epochs",
        "3",
        "--cfg",
        '{"depth": 3}',
        "{lr}",
        "0.5",
    ]


def test_yaml_12_floats_durations_and_env(
    write_config: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUNER_TEST_TRIALS", "12")
    monkeypatch.setenv("TUNER_TEST_HOST", "gpu-box")
    text = """
name: env-${TUNER_TEST_HOST}
command: [python, train.py]
env: {OMP_NUM_THREADS: 4, PRICE: "$$5", MODE: "${TUNER_TEST_MODE:-fast}"}
target: {metric: acc, goal: maximize}
parameters:
  lr: {type: float, low: 1e-5, high: 1E-1, log: true}
  wd: {type: float, low: 0, high: 5e-4, step: 1e-4}
budget: {trials: "${TUNER_TEST_TRIALS}", timeout: 1h30m}
trial: {timeout: 90s, grace_period: 2.5}
"""
    config = load_config(write_config(text))
    assert config.name == "env-gpu-box"
    assert config.env == {"OMP_NUM_THREADS": "4", "PRICE": "$5", "MODE": "fast"}
    assert config.parameters["lr"].high == pytest.approx(0.1)
    assert config.parameters["wd"].step == pytest.approx(1e-4)
    assert config.budget.trials == 12
    assert config.budget.timeout == 5400.0
    assert config.trial.timeout == 90.0 and config.trial.grace_period == 2.5


def test_multi_objective_defaults_to_no_pruner(write_config: Callable[..., Path]) -> None:
    data = base_config()
    data["objectives"] = [{"metric": "latency_ms", "goal": "minimize"}]
    data["target"] = {"metric": "accuracy", "goal": "maximize"}
    data["sampler"] = {"name": "nsga2", "seed": 3, "options": {"population_size": 10}}
    config = load_config(write_config(data))
    assert config.directions == ["maximize", "minimize"]
    assert config.metric_names == ["accuracy", "latency_ms"]
    assert config.multi_objective and config.pruner.name == "none"


def test_when_accepts_lists_and_nested_conditions(write_config: Callable[..., Path]) -> None:
    data = base_config()
    data["parameters"]["optimizer"]["choices"] = ["sgd", "adam", "adamw"]
    data["parameters"]["beta2"] = {
        "type": "float",
        "low": 0.9,
        "high": 0.9999,
        "when": {"optimizer": ["adam", "adamw"]},
    }
    data["parameters"]["nesterov"] = {
        "type": "categorical",
        "choices": [True, False],
        "when": {"optimizer": "sgd"},
    }
    data["parameters"]["dampening"] = {
        "type": "float",
        "low": 0.0,
        "high": 0.5,
        "when": {"nesterov": False},
    }
    config = load_config(write_config(data))
    assert config.parameters["dampening"].when == {"nesterov": False}


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "src").mkdir()
    data = base_config()
    data["workdir"] = "../src"
    data["lineage"] = {"tracking_uri": "sqlite:///../runs/mlflow.db", "experiment": "exp"}
    path = tmp_path / "configs" / "c.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML too
    config = load_config(path)
    assert config.workdir == tmp_path / "src"
    assert config.tracking_uri() == f"sqlite:///{tmp_path}/runs/mlflow.db"
    assert config.optuna_storage_url() == f"sqlite:///{tmp_path}/runs/optuna.db"
    assert config.experiment == "exp"
    assert not (tmp_path / "runs").exists()


def test_default_stores_follow_mlflow_tracking_uri(
    write_config: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(write_config(base_config()))
    assert config.tracking_uri() == f"sqlite:///{tmp_path}/mlflow.db"
    assert config.optuna_storage_url() == f"sqlite:///{tmp_path}/optuna.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert config.tracking_uri() == "http://mlflow.example:5000"
    assert config.optuna_storage_url() == f"sqlite:///{tmp_path}/optuna.db"
    data = base_config()
    data["storage"] = "postgresql://optuna@db.example/optuna"
    assert load_config(write_config(data)).optuna_storage_url() == data["storage"]


def test_parse_config_without_a_file(tmp_path: Path) -> None:
    config = parse_config(base_config())
    assert config.source_path is None and config.workdir == tmp_path
    with pytest.raises(ConfigError, match=r"^config: budget.trials must be >= 1, got 0\.$"):
        data = base_config()
        data["budget"]["trials"] = 0
        parse_config(data)


def test_metric_patterns(write_config: Callable[..., Path]) -> None:
    data = base_config()
    data["metrics"] = {
        "loss": {"pattern": r"epoch: \d+ step: \d+, loss is ([0-9.eE+-]+)"},
        "acc": {"pattern": r"step (?P<step>\d+) acc=(?P<value>[0-9.]+)"},
    }
    config = load_config(write_config(data))
    m = config.metrics["loss"].regex.search("epoch: 1 step: 10, loss is 0.53")
    assert m is not None and float(m.group(1)) == 0.53
    m2 = config.metrics["acc"].regex.search("step 7 acc=0.91")
    assert m2 is not None and m2.group("value") == "0.91" and m2.group("step") == "7"


def test_full_example_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(FULL_EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "valid" in out and "learning_rate" in out


def test_validate_json_summary(
    write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(base_config())
    assert main(["validate", "c.yaml", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["valid"] is True
    assert summary["directions"] == ["minimize"]
    assert summary["sampling_order"] == ["lr", "optimizer", "momentum", "layers"]
    assert summary["config"]["parameters"]["momentum"]["when"] == {"optimizer": "sgd"}
    assert not list(Path.cwd().glob("*.db"))


def test_schema_is_json_and_accepts_the_examples(
    write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import jsonschema
    import yaml

    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(base_config())
    # Editors read YAML 1.2, where 1e-4 is a number (the loader does the same).
    validator.validate(yaml.load(FULL_EXAMPLE.read_text(), Loader=_Loader))
    bad = base_config()
    bad["sampler"] = {"nme": "tpe"}
    assert list(validator.iter_errors(bad)), "additionalProperties must be false"
    assert set(schema["properties"]) >= {
        "name", "command", "workdir", "env", "target", "objectives", "parameters", "budget",
        "trial", "sampler", "pruner", "resources", "metrics", "lineage", "storage", "executor",
        "diagnosis",
    }  # fmt: skip


def test_schema_output_file(tmp_path: Path) -> None:
    assert main(["schema", "-o", "s.json"]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["title"] == "lineage-tuner campaign"


def test_builtin_placeholders(write_config: Callable[..., Path], tmp_path: Path) -> None:
    from tuner import TunerError

    data = base_config()
    data["command"] = ["python", "t.py", "--out={workdir}/t{trial}", "--run", "{run_id}", "{lr}"]
    config = load_config(write_config(data))
    argv = config.render_command({"lr": 0.1}, trial=4, run_id="abc123")
    assert argv[2:] == [f"--out={tmp_path}/t4", "--run", "abc123", "0.1"]
    with pytest.raises(TunerError, match=r"placeholder \{trial\} has no value"):
        config.render_command({"lr": 0.1})


def test_anchors_merge_keys_and_extension_fields(write_config: Callable[..., Path]) -> None:
    text = """
x-unit: &unit {type: float, low: 0.0, high: 1.0}
name: anchors
command: [python, t.py, "{a}", "{b}"]
target: {metric: loss, goal: minimize}
parameters:
  a: *unit
  b: {<<: *unit, high: 2.0}
budget: {trials: 2}
"""
    config = load_config(write_config(text))
    assert config.parameters["a"].high == 1.0
    assert config.parameters["b"].high == 2.0 and config.parameters["b"].low == 0.0


def test_schema_flags_a_parameter_missing_its_range_or_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import jsonschema

    assert main(["schema"]) == 0
    validator = jsonschema.Draft202012Validator(json.loads(capsys.readouterr().out))
    for bad in (
        {"type": "float", "low": 0.0},
        {"type": "categorical"},
        {"type": "categorical", "choices": [1], "low": 0},
        {"type": "int", "low": 0, "high": 3, "choices": [1]},
    ):
        data = base_config()
        data["parameters"]["p"] = bad
        assert list(validator.iter_errors(data)), bad
