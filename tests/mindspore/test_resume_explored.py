"""A continuation with explored hyperparameters (population-based training hands it another
trial's checkpoint and names the changed parameters in ``TUNER_RESUME_CHANGED``) trains with
the optimizer's hyperparameters as its script set them, from the checkpoint's weights,
optimizer state and ``global_step``; a plain resume takes everything from the checkpoint.
Real MindSpore trainings on CPU."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from lineage import checkpoints

pytestmark = [pytest.mark.mindspore]

EPOCHS, ROWS, BATCH = 4, 48, 16  # 3 steps per epoch
STEPS = ROWS // BATCH


def _env(
    monkeypatch: Any,
    folder: Path,
    resume: checkpoints.Checkpoint | None = None,
    changed: list[str] | None = None,
) -> None:
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(folder))
    monkeypatch.setenv(checkpoints.KEEP, "10")
    for var in (
        checkpoints.RESUME_FROM,
        checkpoints.RESUME_STEP,
        checkpoints.RESUME_CHANGED,
        checkpoints.EVERY,
    ):
        monkeypatch.delenv(var, raising=False)
    if resume is not None:
        monkeypatch.setenv(checkpoints.RESUME_FROM, str(resume.path))
        monkeypatch.setenv(checkpoints.RESUME_STEP, str(resume.step))
    if changed:
        monkeypatch.setenv(checkpoints.RESUME_CHANGED, json.dumps(changed))


def _saved(ms: ModuleType, point: checkpoints.Checkpoint) -> dict[str, np.ndarray]:
    from lineage.mindspore._checkpoint import CHECKPOINT_FILE

    loaded = ms.load_checkpoint(str(point.path / CHECKPOINT_FILE))
    return {name: p.asnumpy().copy() for name, p in loaded.items()}


def _values(cell: Any) -> dict[str, np.ndarray]:
    return {name: p.asnumpy().copy() for name, p in cell.parameters_dict().items()}


def _fit_model(ms: ModuleType, tiny_net: Any, lr: float, momentum: float, seed: int) -> Any:
    from mindspore import nn
    from mindspore.train import Model

    ms.set_seed(seed)
    net = tiny_net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=momentum)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return Model(net, loss_fn, opt)


def _probe(ms: ModuleType) -> Any:
    from mindspore.train import Callback

    class Probe(Callback):
        """The train network's parameters once the training begins (after the callbacks
        before it in the list restored a checkpoint), before any step."""

        def __init__(self) -> None:
            self.at_begin: dict[str, np.ndarray] = {}

        def on_train_begin(self, run_context: Any) -> None:
            self.at_begin = _values(run_context.original_args().train_network)

    return Probe()


@pytest.mark.parametrize("changed", [["lr", "momentum"], []], ids=["explored", "plain"])
def test_lineage_callback_keeps_the_explored_lr_and_momentum_only_when_told(
    ms: ModuleType,
    tiny_net: Any,
    make_data: Any,
    tmp_path: Path,
    sqlite_uri: str,
    monkeypatch: Any,
    changed: list[str],
) -> None:
    from lineage.mindspore import LineageCallback

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    donor_folder = tmp_path / "donor"
    _env(monkeypatch, donor_folder)
    donor = _fit_model(ms, tiny_net, lr=0.1, momentum=0.9, seed=1)
    donor.train(2, make_data(ROWS, BATCH), callbacks=[LineageCallback(data_sample=False)])
    point = checkpoints.latest_good(donor_folder)
    assert point is not None and point.step == 2
    saved = _saved(ms, point)

    _env(monkeypatch, tmp_path / "continuation", point, changed)
    cont = _fit_model(ms, tiny_net, lr=0.5, momentum=0.8, seed=7)
    probe = _probe(ms)
    cont.train(
        EPOCHS, make_data(ROWS, BATCH), callbacks=[LineageCallback(data_sample=False), probe]
    )

    # Weights, momentum buffers and the step counter are the checkpoint's in both cases.
    state = [n for n in saved if n not in ("learning_rate", "momentum")]
    assert {"fc1.weight", "moments.fc1.weight", "global_step"} <= set(state)
    for name in state:
        if not name.startswith("trial_"):
            np.testing.assert_array_equal(probe.at_begin[name], saved[name], err_msg=name)
    # The hyperparameters: the script's with the flag, the checkpoint's without.
    want = (0.5, 0.8) if changed else (0.1, 0.9)
    got = (probe.at_begin["learning_rate"], probe.at_begin["momentum"])
    assert got == pytest.approx(want)
    opt = cont.train_network.optimizer
    assert float(opt.learning_rate.asnumpy()) == pytest.approx(want[0])
    assert float(opt.momentum.asnumpy()) == pytest.approx(want[1])
    assert int(opt.global_step.asnumpy().item()) == EPOCHS * STEPS
    # Its own checkpoints hold what it trained with: a retry of it keeps them.
    last = checkpoints.latest_good(tmp_path / "continuation")
    assert last is not None and last.step == EPOCHS
    assert float(_saved(ms, last)["learning_rate"]) == pytest.approx(want[0])


def test_resumable_epochs_and_restore_checkpoint_keep_an_explored_schedule(
    ms: ModuleType, tiny_net: Any, make_data: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    from mindspore import nn

    from lineage.mindspore import restore_checkpoint, resumable_epochs

    def build(scale: float, seed: int) -> tuple[Any, Any, Any]:
        ms.set_seed(seed)
        net = tiny_net()
        schedule = [scale * 0.9**k for k in range(EPOCHS * STEPS)]
        opt = nn.Adam(net.trainable_params(), learning_rate=schedule)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

        def forward(x: Any, y: Any) -> Any:
            return loss_fn(net(x), y)

        grad_fn = ms.value_and_grad(forward, None, opt.parameters)
        return net, opt, grad_fn

    data = make_data(ROWS, BATCH)
    donor_folder = tmp_path / "donor"
    _env(monkeypatch, donor_folder)
    net, opt, grad_fn = build(0.05, seed=1)
    for epoch in resumable_epochs(EPOCHS, net, opt):
        if epoch > 2:
            break  # killed after the checkpoint of epoch 2
        for x, y in data.create_tuple_iterator():
            opt(grad_fn(x, y)[1])
    point = checkpoints.latest_good(donor_folder)
    assert point is not None and point.step == 2
    saved = _saved(ms, point)
    assert int(saved["global_step"].item()) == 2 * STEPS

    explored = [0.2 * 0.9**k for k in range(EPOCHS * STEPS)]
    _env(monkeypatch, tmp_path / "loop", point, ["lr"])
    net, opt, _ = build(0.2, seed=7)
    first = next(iter(resumable_epochs(EPOCHS, net, opt)))  # restored, nothing trained
    assert first == 3
    got = {**_values(net), **_values(opt)}
    np.testing.assert_allclose(got["learning_rate"], explored, rtol=1e-6)
    for name in ("fc1.weight", "moment1.fc1.weight", "beta1_power", "global_step"):
        np.testing.assert_array_equal(got[name], saved[name], err_msg=name)

    _env(monkeypatch, tmp_path / "explicit", point, ["lr"])
    model_net, model_opt, _ = build(0.2, seed=9)
    cell = nn.TrainOneStepCell(
        nn.WithLossCell(model_net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
        model_opt,
    )
    assert restore_checkpoint(cell) == 2
    np.testing.assert_allclose(_values(model_opt)["learning_rate"], explored, rtol=1e-6)
    np.testing.assert_array_equal(model_net.fc1.weight.asnumpy(), saved["fc1.weight"])
    assert int(model_opt.global_step.asnumpy().item()) == 2 * STEPS


def test_resume_changed_reads_a_json_list_and_only_for_a_resume(
    tmp_path: Path, monkeypatch: Any
) -> None:
    _env(monkeypatch, tmp_path, None, ["lr"])
    assert checkpoints.resume_changed() == []  # a fresh start continues nothing
    _env(monkeypatch, tmp_path, checkpoints.Checkpoint(tmp_path, 3), ["lr", "momentum"])
    assert checkpoints.resume_changed() == ["lr", "momentum"]
    monkeypatch.setenv(checkpoints.RESUME_CHANGED, "lr")
    with pytest.raises(ValueError, match="TUNER_RESUME_CHANGED must hold a JSON list"):
        checkpoints.resume_changed()


@pytest.mark.parametrize(
    ("var", "value", "read"),
    [
        (checkpoints.EVERY, "0", checkpoints.every),
        (checkpoints.EVERY, "two", checkpoints.every),
        (checkpoints.RESUME_STEP, "3.5", checkpoints.resume_point),
        (checkpoints.RESUME_CHANGED, "lr", checkpoints.resume_changed),
    ],
)
def test_a_refused_checkpoint_variable_is_a_usage_error_naming_it(
    tmp_path: Path, monkeypatch: Any, var: str, value: str, read: Any
) -> None:
    from lineage import EnvironmentValueError, UsageError
    from lineage._errors import exiting_on_bad_environment

    _env(monkeypatch, tmp_path, checkpoints.Checkpoint(tmp_path, 3))
    monkeypatch.setenv(var, value)
    with pytest.raises(EnvironmentValueError, match=f"^{var} must .*, got '{value}'$") as err:
        read()
    assert isinstance(err.value, UsageError) and isinstance(err.value, ValueError)
    # Where a framework callback reads it: exit status 2, as a bad flag under argparse.
    with pytest.raises(SystemExit) as stop, exiting_on_bad_environment():
        read()
    assert stop.value.code == 2


#: A MindSpore trial for a PBT campaign: a tiny classifier trained by ``Model.train`` with
#: `LineageCallback` (which saves and restores the checkpoints) and ``--lr``, reporting the
#: epoch's mean loss. Fresh starts wait until both members have started, and each epoch
#: takes a little time, so that a member is still running when the other is judged.
PBT_SCRIPT = """
import argparse, os, pathlib, sys, time
import numpy as np
import mindspore as ms
from mindspore import dataset as mds, nn
from mindspore.train import Callback, Model
from lineage.mindspore import LineageCallback
from tuner import trial

ap = argparse.ArgumentParser(); ap.add_argument("--lr", type=float); lr = ap.parse_args().lr
ms.set_device("CPU"); ms.set_seed(0); mds.config.set_seed(0)
if trial.resume_from() is None:
    with open("started", "a") as fh:
        fh.write(f"{trial.number()}\\n")
    deadline = time.monotonic() + 120
    while len(pathlib.Path("started").read_text().split()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
rng = np.random.default_rng(0)
x = rng.normal(size=(96, 8)).astype(np.float32)
y = ((x[:, 0] + x[:, 1] > 0).astype(np.int32) + 2 * (x[:, 2] > 0)).astype(np.int32)
data = mds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False).batch(32)
net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 4))
opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

class Report(Callback):
    def on_train_epoch_begin(self, run_context):
        self.losses = []
    def on_train_step_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))
    def on_train_epoch_end(self, run_context):
        time.sleep(0.3)  # the training's work
        epoch = run_context.original_args().cur_epoch_num
        trial.report(epoch, loss=sum(self.losses) / len(self.losses))

Model(net, loss_fn, opt).train(16, data, callbacks=[LineageCallback(), Report()])
"""


def _run_pbt(
    tmp_path: Path, sqlite_uri: str, command: list[str], target: str, choices: list[float]
) -> tuple[list[Any], list[Any]]:
    """Run a two-member PBT campaign of ``command`` over ``lr`` in ``choices`` (one member
    each, by the grid), ranked by ``target`` (``loss``: minimized, else maximized) every two
    epochs, the bottom member's continuation moving its
    ``lr`` to the neighbouring choice; its trials, and those that are continuations."""
    import optuna
    import yaml

    from tuner.campaign import Controller
    from tuner.config import load_config

    data = {
        "name": "pbt-ms",
        "command": command,
        "env": {"OMP_NUM_THREADS": "1", "GLOG_v": "3"},
        "target": {"metric": target, "goal": "minimize" if target == "loss" else "maximize"},
        "parameters": {"lr": {"type": "categorical", "choices": choices}},
        "sampler": {"name": "grid", "seed": 7},
        "budget": {"trials": 2, "max_failures": 2},
        "resources": {"kind": "cpu", "parallel": 2},
        "pruner": {"name": "none"},
        "scheduler": {
            "name": "pbt",
            "population": 2,
            "interval": 2,
            "perturb": {"lr": {"neighbour": True}},
        },
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": sqlite_uri},
        "checkpoint": {"keep": 50},  # the copy a continuation started from stays
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    config = load_config(path)
    Controller(config, importance=False, handle_signals=False).run()
    study = optuna.load_study(study_name="pbt-ms", storage=config.optuna_storage_url())
    trials = study.get_trials(deepcopy=False)
    return trials, [t for t in trials if "tuner.exploit" in t.user_attrs]


def _summary(trials: list[Any]) -> list[Any]:
    return [(t.number, t.state.name, t.params, t.user_attrs.get("fail_reason")) for t in trials]


@pytest.mark.slow
def test_a_pbt_continuation_trains_on_with_the_explored_lr(
    ms: ModuleType, python: str, tmp_path: Path, sqlite_uri: str
) -> None:
    (tmp_path / "trial.py").write_text(PBT_SCRIPT)
    # One member learns far slower than the other: it is the bottom one when judged.
    trials, exploits = _run_pbt(
        tmp_path, sqlite_uri, [python, "trial.py", "--lr", "{lr}"], "loss", [0.0001, 0.001, 0.1]
    )
    summary = _summary(trials)
    assert exploits, summary
    checked = 0
    for cont in exploits:
        info = cont.user_attrs["tuner.exploit"]
        (folder,) = tmp_path.rglob(f"trial-{cont.number}")
        copied = checkpoints.latest_good(folder, at_most=info["from_step"])
        last = checkpoints.latest_good(folder)
        assert copied is not None and last is not None, summary
        donor = trials[info["donor"]]
        # The copy it started from holds the donor's lr; what it trained with holds its own.
        assert float(_saved(ms, copied)["learning_rate"]) == pytest.approx(donor.params["lr"])
        if last.step > info["from_step"]:
            held = float(_saved(ms, last)["learning_rate"])
            assert held == pytest.approx(cont.params["lr"]), summary
            assert int(_saved(ms, last)["global_step"].item()) == 3 * last.step
            checked += 1
    assert checked, summary


#: The digits example between two barriers: fresh members wait until both have started, and
#: a member whose training ended waits (still running, its checkpoints kept) until the other
#: member's chain has ended too, so that each is ranked against a running member however the
#: machine's load spreads their epochs. The example itself logs its params
#: (``lineage.start_run(params=...)``) into the run the tuner reserved for the attempt.
DIGITS_WRAPPER = """
import pathlib, runpy, sys, time
from tuner import trial
example = sys.argv[1]

def wait_for(name):
    deadline = time.monotonic() + 120
    while len(pathlib.Path(name).read_text().split()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)

# The members train in step: one that set up faster would otherwise train all its epochs
# (tens of ms each) before the other reports one, leaving PBT no population to rank it in.
# Each member waits after its first report for the other's, and paces its reports.
report = trial.report

def paced(step, **metrics):
    report(step, **metrics)
    if trial.resume_from() is None and step == 1:
        with open("first", "a") as fh:
            fh.write(f"{trial.number()}\\n")
        wait_for("first")
    time.sleep(0.3)

trial.report = paced
if trial.resume_from() is None:
    with open("started", "a") as fh:
        fh.write(f"{trial.number()}\\n")
    wait_for("started")
sys.argv = [example, *sys.argv[2:]]
try:
    runpy.run_path(example, run_name="__main__")
except SystemExit as end:
    if end.code not in (0, None):
        raise
with open("finished", "a") as fh:
    fh.write(f"{trial.number()}\\n")
wait_for("finished")
"""


@pytest.mark.slow
def test_the_digits_example_under_pbt_logs_the_explored_lr_it_trains_with(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    (tmp_path / "digits.py").write_text(DIGITS_WRAPPER)
    example = str(repo_root / "examples/mindspore_digits/train.py")
    command = [python, "digits.py", example, "--lr", "{lr}", "--epochs", "12"]
    command += ["--train-size", "400", "--hidden", "16"]
    # A member at lr 0.0005 barely learns in two epochs: it copies the lr 0.2 member, and
    # its continuation goes on at the neighbouring choice, 0.0005, from that checkpoint.
    trials, exploits = _run_pbt(tmp_path, sqlite_uri, command, "val_accuracy", [0.0005, 0.2])
    summary = _summary(trials)
    assert exploits, summary
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials), summary
    client = MlflowClient(tracking_uri=sqlite_uri)
    for cont in exploits:
        info = cont.user_attrs["tuner.exploit"]
        donor = trials[info["donor"]].params["lr"]
        lr = cont.params["lr"]
        # The study, the run and the optimizer the script built agree on the explored lr.
        assert lr != donor and info["perturbed"] == {"lr": [donor, lr]}, summary
        run = client.get_run(cont.user_attrs["tuner.launch"]["run_id"])
        assert float(run.data.params["lr"]) == lr, summary
        assert float(run.data.params["optimizer.lr"]) == pytest.approx(lr), summary
        if cont.state.name == "COMPLETE":
            history = client.get_metric_history(run.info.run_id, "val_accuracy")
            # One curve: the donor's epochs up to the copied checkpoint, then its own.
            assert {p.step for p in history} == set(range(1, 13))
