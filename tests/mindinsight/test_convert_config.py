"""``tuner convert mindinsight``: mindoptimizer configs (MindInsight's rules) to campaigns."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuner import ConfigError
from tuner.compat.mindinsight import (
    convert_config,
    is_mindoptimizer_config,
    mindoptimizer_message,
)
from tuner.config import load_config, parse_config

SAMPLES = sorted((Path(__file__).parents[2] / "configs" / "mindinsight").glob("*.yaml"))
CAMPAIGNS = sorted((Path(__file__).parents[2] / "configs").glob("*.yaml"))

DOC = {
    "command": "sh /home/example/run_alexnet_ascend.sh",
    "summary_base_dir": "/home/summaries",
    "tuner": {"name": "gp"},
    "target": {"group": "metric", "name": "Accuracy", "goal": "maximize"},
    "parameters": {
        "learning_rate": {"bounds": [0.00001, 0.001], "type": "float"},
        "batch_size": {"choice": [32, 64, 128, 256], "type": "int"},
        "momentum": {"source": "user_defined", "choice": [0.8, 0.9], "type": "float"},
    },
}


def _campaign(doc: dict[str, Any], **kw: Any) -> tuple[str, Any]:
    text = convert_config(doc, where="config.yaml", **kw)
    return text, parse_config(yaml.safe_load(text), source="campaign.yaml", base_dir=Path.cwd())


def _with(**changes: Any) -> dict[str, Any]:
    doc = yaml.safe_load(yaml.safe_dump(DOC))
    for path, value in changes.items():
        *parents, last = path.split("__")
        cur = doc
        for key in parents:
            cur = cur[key]
        if value is None:
            del cur[last]
        else:
            cur[last] = value
    return doc


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_sample_converts_and_validates(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "campaign.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "convert", "mindinsight", str(sample), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    config = load_config(out)  # the current schema, as `tuner validate` reads it
    raw = yaml.safe_load(sample.read_text())
    assert set(config.parameters) == set(raw["parameters"])
    assert config.command == raw["command"].split()
    text = out.read_text()
    # Every mapping that is not one-to-one carries its comment.
    for marker in ("-> categorical", "bounds [", "sampler:", "# mindoptimizer --iter"):
        if marker == "-> categorical" and not any(
            "choice" in p for p in raw["parameters"].values()
        ):
            continue
        if marker == "bounds [" and not any("bounds" in p for p in raw["parameters"].values()):
            continue
        assert marker in text, marker


def test_the_guides_example_maps_each_key(tmp_path: Path) -> None:
    text, config = _campaign(DOC, trials=7)
    assert config.name == "summaries"
    assert config.target.metric == "val_Accuracy" and config.target.goal == "maximize"
    lr = config.parameters["learning_rate"]
    assert (lr.type, lr.low, lr.high, lr.log) == ("float", 1e-05, 0.001, False)
    bs = config.parameters["batch_size"]
    assert (bs.type, bs.choices) == ("categorical", [32, 64, 128, 256])
    assert config.parameters["momentum"].choices == [0.8, 0.9]
    assert config.sampler.name == "gp"
    assert config.pruner.name == "none"
    assert config.budget.trials == 7
    assert config.resources.parallel == 1
    assert config.env["MINDINSIGHT_SUMMARY_BASE_DIR"] == "/home/summaries"
    assert config.env["MINDINSIGHT_USER_DEFINED"] == "momentum"
    assert "half-open" not in text or "open end" in text
    assert "the open end samples the same" in text  # how [low, high) is handled
    assert "consider `log: true`" in text  # 1e-5..1e-3 spans two decades
    assert "config.params.learning_rate" in text  # what the script receives


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [([2, 6], ("int", 2, 5)), ([1.5, 4.2], ("int", 2, 4)), ([-3, 0], ("int", -3, -1))],
)
def test_int_bounds_are_the_integers_mindinsight_could_propose(
    bounds: list[float], expected: tuple[str, int, int]
) -> None:
    doc = _with(parameters__width={"bounds": bounds, "type": "int"})
    _, config = _campaign(doc)
    p = config.parameters["width"]
    assert (p.type, p.low, p.high) == expected


def test_int_bounds_holding_one_integer_become_one_choice() -> None:
    _, config = _campaign(_with(parameters__depth={"bounds": [2.5, 3.5], "type": "int"}))
    assert config.parameters["depth"].choices == [3]


def test_braces_in_the_command_stay_literal() -> None:
    doc = _with(command="""python train.py --extra '{"a": 1}' --lr {learning_rate}""")
    text, config = _campaign(doc)
    argv = config.render_command({"learning_rate": 0.5, "batch_size": 32, "momentum": 0.9})
    assert argv == ["python", "train.py", "--extra", '{"a": 1}', "--lr", "{learning_rate}"]
    assert "Braces are doubled" in text


def test_loss_target_defaults_to_system_defined_and_minimize() -> None:
    text, config = _campaign(_with(target={"name": "loss"}))
    assert (config.target.metric, config.target.goal) == ("loss", "minimize")
    assert "not given: mindoptimizer's default" in text


def test_random_tuner_and_acquisition_methods() -> None:
    _, config = _campaign(_with(tuner={"name": "random"}))
    assert config.sampler.name == "random"
    text, config = _campaign(_with(tuner={"name": "gp", "args": {"method": "ei"}}))
    assert config.sampler.name == "gp" and "acquisition ei" in text


def test_source_decides_custom_lineage_data() -> None:
    doc = _with(
        parameters__learning_rate={"bounds": [0.01, 0.1], "type": "float", "source": "user_defined"}
    )
    _, config = _campaign(doc)
    assert config.env["MINDINSIGHT_USER_DEFINED"] == "learning_rate,momentum"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"parameters__learning_rate__bounds": [0.1, 0.01]},
            "parameters.learning_rate.bounds must have high > low (the range is [low, high)), got [0.1, 0.01].",
        ),
        (
            {"parameters__learning_rate__type": None},
            "parameters.learning_rate.type is required with bounds",
        ),
        (
            {"parameters__learning_rate__bounds": [0.1, 2]},
            "parameters.learning_rate.bounds must have high <= 1 for learning_rate, got [0.1, 2].",
        ),
        (
            {"parameters__batch_size__choice": [32, 64.5]},
            "parameters.batch_size.choice must hold integers for batch_size, got [32, 64.5].",
        ),
        (
            {"parameters__momentum__bounds": [0.1, 0.9]},
            "parameters.momentum must have exactly one of bounds or choice",
        ),
        (
            {"parameters__momentum__decimal": 2},
            "parameters.momentum.decimal is not a parameter key",
        ),
        (
            {"parameters__momentum__source": "system_defined"},
            "parameters.momentum.source system_defined is only for learning_rate, batch_size, epoch",
        ),
        (
            {"parameters__x": {"bounds": [0.2, 0.8], "type": "int"}},
            "parameters.x.bounds must hold an integer for type: int, got [0.2, 0.8].",
        ),
        (
            {"target__group": "system_defined"},
            "target.group system_defined is only for loss, not 'Accuracy'",
        ),
        (
            {"target": "name:loss"},
            "target must be a mapping; YAML needs a space after the colon (`name: loss`), got 'name:loss'.",
        ),
        ({"tuner__name": "tpe"}, "tuner.name must be one of gp, random, got 'tpe'."),
        (
            {"tuner__args": {"method": "lcb"}},
            "tuner.args.method must be one of ucb, pi, ei, got 'lcb'.",
        ),
        ({"summary_base_dir": None}, "summary_base_dir is required."),
        ({"epochs": 3}, "epochs is not a mindoptimizer key"),
    ],
)
def test_mindinsight_rules_fail_in_one_line(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        convert_config(_with(**changes), where="config.yaml")
    text = str(info.value)
    assert text.startswith("config.yaml: ")
    assert message in text
    assert "\n" not in text


def test_the_cli_prints_errors_in_one_line_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_text(yaml.safe_dump(_with(parameters__learning_rate__bounds=[0.1, 0.01])))
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "convert", "mindinsight", str(bad)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"{bad}: parameters.learning_rate.bounds must have high > low" in done.stderr


def test_output_is_not_overwritten_without_force(tmp_path: Path) -> None:
    src = tmp_path / "config.yaml"
    src.write_text(yaml.safe_dump(DOC))
    out = tmp_path / "campaign.yaml"
    out.write_text("keep me")
    from tuner.cli import main

    assert main(["convert", "mindinsight", str(src), "-o", str(out)]) == 2
    assert out.read_text() == "keep me"
    assert main(["convert", "mindinsight", str(src), "-o", str(out), "--force"]) == 0
    assert load_config(out).target.metric == "val_Accuracy"


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_detector_recognizes_mindoptimizer_configs(sample: Path) -> None:
    assert is_mindoptimizer_config(yaml.safe_load(sample.read_text()))


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda p: p.name)
def test_detector_leaves_campaigns_alone(campaign: Path) -> None:
    assert not is_mindoptimizer_config(yaml.safe_load(campaign.read_text()))


def test_detector_needs_two_marks() -> None:
    assert not is_mindoptimizer_config({"name": "x", "tuner": {"name": "gp"}})
    assert not is_mindoptimizer_config({"parameters": {"lr": {"choice": [1, 2]}}})
    assert is_mindoptimizer_config({"tuner": {}, "parameters": {"lr": {"bounds": [0, 1]}}})
    assert not is_mindoptimizer_config(["summary_base_dir", "tuner"])


def test_message_names_the_file_and_the_command() -> None:
    line = mindoptimizer_message("configs/old.yaml")
    assert line.startswith("configs/old.yaml: is a MindInsight mindoptimizer config")
    assert "tuner convert mindinsight configs/old.yaml -o campaign.yaml" in line
    assert "\n" not in line


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_unconverted_config_is_refused_with_the_converting_command(sample: Path) -> None:
    from tuner import ConfigError
    from tuner.config import load_config

    with pytest.raises(ConfigError) as info:
        load_config(sample)
    text = str(info.value)
    assert "mindoptimizer config" in text
    assert f"tuner convert mindinsight {sample}" in text
    assert "\n" not in text
