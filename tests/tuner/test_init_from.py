"""``tuner init --from EXPERIMENT``: a campaign derived from recorded runs.

The end-to-end test records real MindSpore trainings of ``examples/mindspore_digits/train.py``
(each run as ``python train.py ARGV`` would, in this process so MindSpore loads once),
derives a campaign from them, validates it and runs it as ``tuner run`` does: a real trial
subprocess, warm-started from the recorded runs. The bad-input tests use plain MLflow runs.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tuner.conftest import offered_focus
from tuner.cli import main

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "mindspore_digits" / "train.py"

#: Four trainings (fewer than the importance analysis needs, which keeps this test affordable:
#: every varying parameter is then tuned over its recorded range; the ranking path is tested
#: on the ``cmd`` runs below and by bench_outcome's quick mode).
RUNS = [("0.002", "16"), ("0.3", "32"), ("0.02", "32"), ("0.5", "16")]
COMMON = ["--train-size", "120", "--epochs", "1", "--batch-size", "16", "--mode", "pynative"]


@pytest.fixture(scope="module")
def digits_runs(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> str:
    """Four real digits trainings recorded by LineageCallback into one experiment."""
    import shutil

    import mindspore  # noqa: F401  (the mindspore extra: a missing one fails)

    work = tmp_path_factory.mktemp("init-digits")
    shutil.copyfile(_sqlite_template, work / "mlflow.db")
    uri = f"sqlite:///{work / 'mlflow.db'}"
    saved = sys.argv, os.getcwd(), dict(os.environ)
    os.environ.update(MLFLOW_TRACKING_URI=uri, GLOG_v="3")
    os.chdir(work)
    try:
        for lr, hidden in RUNS:
            sys.argv = [str(SCRIPT), "--lr", lr, "--hidden", hidden, *COMMON]
            sys.argv += ["--experiment", "digits"]
            with pytest.raises(SystemExit) as stop:
                runpy.run_path(str(SCRIPT), run_name="__main__")
            assert stop.value.code == 0
    finally:
        sys.argv = saved[0]
        os.chdir(saved[1])
        os.environ.clear()
        os.environ.update(saved[2])
    return uri


@pytest.mark.mindspore
@pytest.mark.slow
def test_init_from_mindspore_runs_validates_and_runs(
    digits_runs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "campaign.yaml"
    argv = ["init", "--from", "digits", "--target", "val_accuracy", "--goal", "maximize"]
    argv += ["--tracking-uri", digits_runs, "--trials", "1", "-o", str(out)]
    assert main(argv) == 0
    text = out.read_text()
    config = yaml.safe_load(text)
    # Too few runs to rank: lr and hidden tuned over what was recorded, lr on a log scale.
    assert config["parameters"]["lr"] == {"type": "float", "low": 0.002, "high": 0.5, "log": True}
    assert config["parameters"]["hidden"] == {"type": "categorical", "choices": [16, 32]}
    assert "needs at least 8" in text
    # The best run's recorded command line, placeholders where the tuned values go.
    command = config["command"]
    assert command[1] == str(SCRIPT)
    assert command[command.index("--lr") + 1] == "{lr}"
    assert command[command.index("--hidden") + 1] == "{hidden}"
    assert command[command.index("--mode") + 1] == "pynative"
    # Callback-derived quantities (parameter counts, steps per epoch) are no hyperparameters.
    assert set(config["parameters"]) == {"lr", "hidden"}
    assert "trainable_params (on no recorded command line" in " ".join(text.split())
    assert config["warm_start"]["from"][0]["experiment"] == "digits"
    assert "enqueue_best" not in config["warm_start"]  # one trial: no room to re-run the best

    assert main(["validate", str(out)]) == 0
    capsys.readouterr()

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(GLOG_v="3", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "run", "-q", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    from lineage.store import open_store

    with open_store(digits_runs) as store:
        (exp,) = store.resolve_experiments([config["name"]])
        trials = [r for r in store.runs([exp.experiment_id]) if r.tags.get("tuner.state")]
    assert len(trials) == 1 and trials[0].tags["tuner.state"] == "COMPLETE"
    assert 0.002 <= float(trials[0].params["lr"]) <= 0.5
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    assert "warm start: 4 earlier run(s) imported" in capsys.readouterr().out
    assert 0.0 < trials[0].metrics["val_accuracy"] <= 1.0


# ----- bad input: one line, exit 2, no file ---------------------------------------------------


@pytest.fixture(scope="module")
def plain_runs(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> str:
    """Ten plain MLflow runs (no recorded command line): lr and batch vary, epochs does not.
    Read-only for the tests that share it."""
    import shutil

    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("init-plain") / "mlflow.db"
    shutil.copyfile(_sqlite_template, path)
    sqlite_uri = f"sqlite:///{path}"
    client = MlflowClient(sqlite_uri)
    exp = client.create_experiment("plain")
    flat = client.create_experiment("flat")
    for i in range(10):
        lr = 10 ** (-4 + 3 * i / 9)
        for experiment, params in ((exp, {"lr": lr, "batch": 16 * (1 + i % 3)}), (flat, {})):
            run = client.create_run(experiment).info.run_id
            client.log_param(run, "epochs", 3)
            for key, value in params.items():
                client.log_param(run, key, value)
            client.log_metric(run, "loss", (i - 6) ** 2 / 10 + 0.01 * (i % 3))
            client.set_terminated(run)
    _command_runs(client, str(path.parent))
    return sqlite_uri


def _command_runs(client: Any, cwd: str) -> None:
    """Experiment ``cmd``: 16 runs with the command line lineage records (``lineage.command``,
    ``lineage.cwd``) and a param the script derives (``steps``, on no command line). Accuracy
    peaks at lr = 0.01; hidden and the optimizer barely matter; momentum only with momentum."""
    import json
    import math

    exp = client.create_experiment("cmd")
    for i in range(16):
        lr = 10 ** (-4 + 3 * ((i * 7) % 16) / 15)
        hidden, opt = (16, 32, 64)[i % 3], ("sgd", "momentum")[i % 2]
        argv = ["train.py", "--lr", str(lr), "--hidden", str(hidden), "--optimizer", opt]
        params: dict[str, Any] = {"lr": lr, "hidden": hidden, "optimizer": opt}
        params["steps"] = 960 // hidden
        if opt == "momentum":
            argv += ["--momentum", str(0.5 + 0.03 * i)]
            params["momentum"] = 0.5 + 0.03 * i
        run = client.create_run(exp).info.run_id
        for key, value in params.items():
            client.log_param(run, key, value)
        client.set_tag(run, "lineage.command", json.dumps(["python", *argv]))
        client.set_tag(run, "lineage.cwd", cwd)
        acc = 0.95 - 0.1 * (math.log10(lr) + 2) ** 2 + 0.001 * (hidden % 5)
        client.log_metric(run, "acc", acc)
        client.set_terminated(run)


def _flat(text: str) -> str:
    """The YAML's comments as one line (they wrap, each line starting with ``#``)."""
    return " ".join(w for w in text.split() if w != "#")


def _init(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["init", *argv])
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--from", "nope", "--target", "loss"], "experiment"),
        (["--from", "plain", "--target", "accuracy"], "--target accuracy: no finished run"),
        (["--from", "flat", "--target", "loss"], "no recorded hyperparameter varies"),
        (["--from", "plain", "--target", "loss", "--where", "params.lr >"], "where"),
    ],
)
def test_init_bad_input_is_one_line_exit_2_and_no_file(
    plain_runs: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    expected: str,
) -> None:
    out = tmp_path / "c.yaml"
    argv = [*args, "--goal", "minimize", "--tracking-uri", plain_runs, "-o", str(out)]
    code, err = _init(capsys, *argv)
    assert code == 2
    assert len(err.splitlines()) == 1 and expected in err and "Traceback" not in err
    assert not out.exists()


def test_init_unreachable_store_and_existing_file(
    plain_runs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.yaml"
    base = ["--from", "plain", "--target", "loss", "--goal", "minimize", "-o", str(out)]
    for uri in ("postgresql://postgres@127.0.0.1:1/none", f"sqlite:///{tmp_path / 'no.db'}"):
        code, err = _init(capsys, *base, "--tracking-uri", uri)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert not out.exists() and not (tmp_path / "no.db").exists()
    out.write_text("mine\n")
    code, err = _init(capsys, *base, "--tracking-uri", plain_runs)
    assert code == 2 and "--force" in err and out.read_text() == "mine\n"


def test_init_without_a_recorded_command_writes_a_placeholder_validate_refuses(
    plain_runs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.yaml"
    argv = ["--from", "plain", "--target", "loss", "--goal", "minimize"]
    code, _ = _init(capsys, *argv, "--tracking-uri", plain_runs, "-o", str(out))
    assert code == 0
    text = out.read_text()
    config = yaml.safe_load(text)
    assert config["command"] == ["CHANGE-ME-no-command-was-recorded"]
    assert "# PLACEHOLDER:" in text
    assert config["parameters"]["lr"]["log"] is True  # four decades
    assert "epochs" not in config["parameters"]  # constant: not a hyperparameter to tune
    for command in ("validate", "run"):  # before any trial burns the budget on it
        assert main([command, str(out)]) == 2
        err = capsys.readouterr().err
        assert err.splitlines() == [
            f"tuner {command}: error: {out}: command[0] holds a CHANGE-ME placeholder left "
            "by tuner init; replace it with the command that trains one run, passing each "
            "parameter as a {name} placeholder, got 'CHANGE-ME-no-command-was-recorded'."
        ]
    assert not (tmp_path / "optuna.db").exists()
    code, err = _init(capsys, *argv, "--tracking-uri", plain_runs, "-o", str(out), "--force")
    assert code == 0


def test_init_refines_what_matters_and_tunes_what_it_cannot_rule_out(
    plain_runs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.yaml"
    argv = ["--from", "cmd", "--target", "acc", "--goal", "maximize", "--name", "refined"]
    code, err = _init(capsys, *argv, "--tracking-uri", plain_runs, "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    config = yaml.safe_load(text)
    lr = config["parameters"]["lr"]
    # significant: tuned on a log scale over what was recorded; a focus around the best runs
    # (lr = 0.01 is the peak) is offered on the line above, commented out
    assert lr["type"] == "float" and lr["log"] is True
    assert (lr["low"], lr["high"]) == (1e-4, 0.1) and "focus" not in lr
    offered = offered_focus(text, "lr")
    assert {k: v for k, v in offered.items() if k != "focus"} == lr
    focus = offered["focus"]
    assert 1e-4 < focus["low"] < 0.01 < focus["high"] <= 0.1  # narrower than recorded
    # the best 4 runs span lr 10^-2.4..10^-1.6; the margin, 0.6/sqrt(4) = 0.3 of the three
    # recorded decades on each side, reaches 10^-3.3 and (clipped to what was recorded) 0.1
    assert focus["low"] == pytest.approx(10**-3.3, rel=0.01) and focus["high"] == 0.1
    assert "one trial in five samples all of it" in _flat(text)
    assert "lr=" in text and "significant" in text and "best 4 of 16 runs" in text
    assert "0.30 of the recorded span" in _flat(text)
    # the rest: not significant, but the best half of the runs (8) is too few to show they
    # do not matter near the optimum, so tuned over what was recorded (the fixing is tested
    # below)
    assert config["parameters"]["hidden"] == {"type": "categorical", "choices": [16, 32, 64]}
    flat = _flat(text)
    assert "over the best half of the runs" in flat and "so it may matter" in flat
    command = config["command"]
    assert command[:2] == ["python", "train.py"]
    assert command[command.index("--lr") + 1] == "{lr}"
    # derived on no command line: left out, and said so
    assert "steps (on no recorded command line" in " ".join(text.split())
    assert config["workdir"] == str(Path(plain_runs.removeprefix("sqlite:///")).parent)
    assert config["warm_start"]["from"][0] == {"experiment": "cmd", "tracking_uri": plain_runs}
    # the 3 best earlier configurations offered for a re-run first, commented out: re-run
    # first they end the sampler's survey of the whole space early
    assert "enqueue_best" not in config["warm_start"]
    assert "  # enqueue_best: 3\n" in text
    assert "Not re-run first: the 3 best earlier configurations" in flat
    assert main(["validate", str(out)]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    assert "re-run first" not in " ".join(captured.out.split())


@pytest.mark.parametrize(("trials", "enqueued"), [(8, 2), (3, 0)])
def test_init_offers_the_best_configurations_within_a_quarter_of_the_budget(
    plain_runs: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    trials: int,
    enqueued: int,
) -> None:
    out = tmp_path / "c.yaml"
    argv = ["--from", "cmd", "--target", "acc", "--goal", "maximize", "--trials", str(trials)]
    code, err = _init(capsys, *argv, "--tracking-uri", plain_runs, "-o", str(out))
    assert code == 0, err
    config = yaml.safe_load(out.read_text())
    assert config["budget"]["trials"] == trials
    # offered commented out, never re-run unless the user says so
    assert "enqueue_best" not in config["warm_start"]
    assert (f"  # enqueue_best: {enqueued}\n" in out.read_text()) == bool(enqueued)
    assert main(["validate", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "re-run first" not in said


@pytest.mark.parametrize("fix_runs", [16, None])
def test_init_fixes_only_what_surely_does_not_matter(
    plain_runs: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: Any,
    fix_runs: int | None,
) -> None:
    """A parameter is fixed only when the upper end of its importance interval is below 0.05
    over all the runs and over their best half, on at least ``FIX_RUNS`` runs (set to the 16
    runs here in the first case); on fewer it is tuned with a focus on the best run's value,
    which the exploring trials and the focus's widening keep from trapping the campaign. One
    whose interval reaches 0.05 in either is tuned over its recorded range. The analysis's
    intervals are set here (a fake around the real analysis): which intervals come out of 16
    runs is the analysis's business."""
    import dataclasses

    import lineage.importance as importance
    from tuner.history import _derive

    real = importance.get_param_importances

    def intervals(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        near = kwargs.get("top") is not None
        ci = {"optimizer": (0.0, 0.01), "momentum": (0.0, 0.01)}
        ci["hidden"] = (0.0, 0.2) if near else (0.0, 0.01)
        result.params = [
            dataclasses.replace(p, ci=ci[p.name], significant=False) if p.name in ci else p
            for p in result.params
        ]
        return result

    monkeypatch.setattr(importance, "get_param_importances", intervals)
    if fix_runs is not None:
        monkeypatch.setattr(_derive, "FIX_RUNS", fix_runs)
    out = tmp_path / "c.yaml"
    argv = ["--from", "cmd", "--target", "acc", "--goal", "maximize"]
    code, err = _init(capsys, *argv, "--tracking-uri", plain_runs, "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    config = yaml.safe_load(text)
    params = config["parameters"]
    assert params["hidden"] == {"type": "categorical", "choices": [16, 32, 64]}
    flat = _flat(text)
    assert "so it may matter) over every recorded choice" in flat
    command = config["command"]
    assert command[command.index("--hidden") + 1] == "{hidden}"
    if fix_runs is not None:
        assert set(params) == {"lr", "hidden"}
        assert "# optimizer = " in text and "are below 0.05, so it does not matter" in flat
        assert command[command.index("--optimizer") + 1] in ("sgd", "momentum")
    else:
        # tuned over every choice, with a focus on the best run's (sgd: acc peaks there)
        assert set(params) == {"lr", "hidden", "optimizer", "momentum"}
        assert params["optimizer"]["choices"] == ["momentum", "sgd"]
        assert "focus" not in params["optimizer"] and "focus" not in params["momentum"]
        assert offered_focus(text, "optimizer")["focus"] == {"choices": ["sgd"]}
        assert "focus" in offered_focus(text, "momentum")
        assert "runs are too few to be sure it does not matter here" in flat
        assert command[command.index("--optimizer") + 1] == "{optimizer}"
    assert main(["validate", str(out)]) == 0


def test_init_keeps_the_recorded_ranges_when_refined_ones_would_hold_too_few_runs(
    plain_runs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """A focused trial's sampler sees only the runs inside the focus: refined focuses holding
    fewer than half of the runs (here: no margin around the best 4 of 16) give way to the
    recorded ranges, and the header says so."""
    from tuner.history import _derive_ranges

    monkeypatch.setattr(_derive_ranges, "MARGIN", 0.0)
    out = tmp_path / "c.yaml"
    argv = ["--from", "cmd", "--target", "acc", "--goal", "maximize"]
    code, err = _init(capsys, *argv, "--tracking-uri", plain_runs, "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    lr = yaml.safe_load(text)["parameters"]["lr"]
    assert (lr["low"], lr["high"]) == (0.0001, 0.1) and "focus" not in lr
    assert "too few to warm-start from, so nothing is refined" in _flat(text)


def test_init_method_names_the_model_and_the_campaign_keeps_it(
    plain_runs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.yaml"
    argv = ["--from", "cmd", "--target", "acc", "--goal", "maximize", "--method", "forest"]
    code, err = _init(capsys, *argv, "--tracking-uri", plain_runs, "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "lineage importance (random forest; asked for)" in _flat(text)
    assert yaml.safe_load(text)["analysis"] == {"method": "forest"}
    assert main(["validate", str(out)]) == 0
