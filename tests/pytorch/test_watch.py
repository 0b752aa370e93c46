"""lineage.pytorch.watch in a plain loop: what it records, pruning, ranks, bad input."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch

import lineage
import lineage.pytorch
from lineage import UsageError


class FakeTrial:
    """The in-trial API's two calls, as a test double for the tuner's side of a report."""

    def __init__(self, prune_after: int) -> None:
        self.reports: list[tuple[int, dict[str, float]]] = []
        self.prune_after = prune_after

    def report(self, step: int, **metrics: float) -> None:
        self.reports.append((step, metrics))

    def should_prune(self) -> bool:
        return len(self.reports) >= self.prune_after


def _train(model: Any, loader: Any, watcher: Any, opt: Any, sched: Any, epochs: int) -> int:
    done = 0
    for epoch in range(1, epochs + 1):
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            watcher.log(loss=loss)
        sched.step()
        done += 1
        if watcher.epoch_end(epoch, val_accuracy=(4 + epoch) / 10):
            break
    return done


def test_watch_records_optimizer_defaults_lr_data_and_sample(
    digits: Any, mlp: Any, sqlite_uri: str, read_run: Any
) -> None:
    train, _ = digits
    model = mlp()
    opt = torch.optim.AdamW(
        [
            {"params": model[0].parameters()},
            {"params": model[2].parameters(), "lr": 0.001},
        ],
        lr=0.01,
    )
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    loader = torch.utils.data.DataLoader(train, batch_size=64, shuffle=True)
    with (
        lineage.start_run(experiment="torch-watch", tracking_uri=sqlite_uri) as run,
        lineage.pytorch.watch(model, opt, scheduler=sched, loader=loader, grad_norm=True) as w,
    ):
        _train(model, loader, w, opt, sched, epochs=2)
    view = read_run(sqlite_uri, run.run_id)
    v = view.values
    # Every constructor default of AdamW, not only what the script set.
    assert v["optimizer.name"] == "AdamW"
    assert (v["optimizer.lr"], v["optimizer.weight_decay"], v["optimizer.eps"]) == (
        0.01,
        0.01,
        1e-08,
    )
    assert v["optimizer.betas"] == [0.9, 0.999]
    assert v["optimizer.group1.lr"] == 0.001
    assert (v["scheduler.name"], v["scheduler.gamma"], v["scheduler.step_size"]) == (
        "StepLR",
        0.5,
        1,
    )
    assert (v["trainable_params"], v["total_params"], v["frozen_params"]) == (1210, 1210, 0)
    assert (v["batch_size"], v["steps_per_epoch"], v["train_size"]) == (64, 4, 256)
    assert v["data.train.shuffle"] is True
    assert v["precision"] == "float32" and v["device.type"] == "cpu"
    assert view.tags["lineage.framework.pytorch"] == torch.__version__
    assert len(view.tags["lineage.data.train.fingerprint"]) == 64
    # lr per step: 0.01 for the first epoch's 4 steps, then halved by the scheduler.
    assert view.series("lr") == [(1, 0.01), (5, 0.005)]
    assert view.series("lr.group1") == [(1, 0.001), (5, 0.0005)]
    assert [s for s, _ in view.series("loss")] == list(range(1, 9))
    assert len(view.series("grad_norm")) == 8
    assert [s for s, _ in view.series("train_loss")] == [1, 2]
    assert view.series("val_accuracy") == [(1, 0.5), (2, 0.6)]
    assert "data.train.input.mean" in view.histories
    assert view.series("data.train.label.max")[0][0] == 0
    paths = set(view.artifacts)
    for name in (
        "dataset/train_pipeline.json",
        "dataset/train_pipeline.png",
        "dataset/train_sample_table.png",
        "dataset/train_sample.json",
        "model/network.txt",
        "frozen_params.json",
    ):
        assert name in paths


def test_data_pictures_are_drawn_by_a_child_process(
    digits: Any, mlp: Any, sqlite_uri: str, read_run: Any
) -> None:
    # matplotlib's import and drawing would hold the interpreter lock beside the steps; a
    # child process draws them from the sample's arrays, and the watcher logs its files.
    train, _ = digits
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(train, batch_size=64)
    with lineage.start_run(experiment="torch-child", tracking_uri=sqlite_uri) as run:
        w = lineage.pytorch.watch(model, opt, loader=loader)
        child = w._data._render
        assert child is not None and child.pid != os.getpid()
        assert child.wait(timeout=300) == 0
        w.close()
    view = read_run(sqlite_uri, run.run_id)
    assert {"dataset/train_pipeline.png", "dataset/train_sample_table.png"} <= set(view.artifacts)
    assert not {k for k in view.tags if k.endswith(("sample_error", "graph_error"))}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_losses_on_the_device_are_read_in_batches(mlp: Any, sqlite_uri: str, read_run: Any) -> None:
    model = mlp().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.rand(32, 64, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    with lineage.start_run(experiment="torch-cuda", tracking_uri=sqlite_uri) as run:
        w = lineage.pytorch.watch(model, opt, grad_norm=True)
        losses = []
        for _ in range(300):  # more than one batch of deferred points
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            w.log(loss=loss)
            losses.append(loss.item())
        w.epoch_end(1)
        w.close()
    view = read_run(sqlite_uri, run.run_id)
    assert [v for _, v in view.series("loss")] == pytest.approx(losses, rel=1e-6)
    assert [s for s, _ in view.series("grad_norm")] == list(range(1, 301))
    assert view.series("train_loss")[0][1] == pytest.approx(sum(losses) / 300, rel=1e-6)


def test_watch_reports_to_the_trial_and_stops_when_pruned(
    digits: Any, mlp: Any, sqlite_uri: str, read_run: Any
) -> None:
    train, _ = digits
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.ConstantLR(opt)
    loader = torch.utils.data.DataLoader(train, batch_size=128)
    trial = FakeTrial(prune_after=2)
    with lineage.start_run(experiment="torch-prune", tracking_uri=sqlite_uri) as run:
        w = lineage.pytorch.watch(model, opt, loader=loader, trial=trial, data_sample=False)
        done = _train(model, loader, w, opt, sched, epochs=5)
        w.close()
    assert done == 2 and w.pruned
    assert trial.reports == [(1, {"val_accuracy": 0.5}), (2, {"val_accuracy": 0.6})]
    view = read_run(sqlite_uri, run.run_id)
    assert view.values["optimizer.momentum"] == 0
    assert view.tags["lineage.pruned_at"] == "2"


def test_watch_is_quiet_on_other_ranks(
    digits: Any, mlp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = lineage.pytorch.watch(model, opt, trial=FakeTrial(prune_after=0))
    assert w.disabled and w.run is None and lineage.active_run() is None
    w.log(loss=1.0)
    assert w.epoch_end(1, val_accuracy=1.0) is False
    w.close()


def test_bad_arguments_say_the_rule_and_the_value(
    mlp: Any, sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lineage.store import open_store

    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    watch: Any = lineage.pytorch.watch
    with pytest.raises(UsageError, match="log_every must be an int >= 1, got 0"):
        watch(model, opt, log_every=0)
    with pytest.raises(UsageError, match=r"data_sample must be .* got 'yes'"):
        watch(model, opt, data_sample="yes")
    refused = [
        ({"all_ranks": "no"}, "all_ranks must be True or False, got 'no'"),
        ({"grad_norm": "yes"}, "grad_norm must be True or False, got 'yes'"),
        ({"weight_stats": "no"}, "weight_stats must be True, False or None, got 'no'"),
        ({"fingerprint_data": 1}, "fingerprint_data must be True or False, got 1"),
        ({"trial": object()}, "trial must be tuner.trial (with report and should_prune) or "),
        ({"run": "abc"}, "run must be a lineage run (lineage.start_run's value) or None, got "),
        ({"params": [1, 2]}, "params must be a mapping of str names to values or None, got "),
        ({"experiment": 3}, "experiment must be a non-empty str or None, got int 3"),
        ({"loader": 5}, "loader must be an iterable (a torch DataLoader) or None, got int 5"),
        ({"scheduler": "cosine"}, "scheduler must be an lr scheduler (with a step method) or "),
        ({"scaler": 1.0}, "scaler must be a torch.amp.GradScaler or None, got float 1.0"),
    ]
    for kwargs, message in refused:
        with pytest.raises(UsageError) as info:
            watch(model, opt, **kwargs)
        assert str(info.value).startswith(message), kwargs
    with pytest.raises(UsageError, match=r"^model must be a torch.nn.Module or None, got SGD"):
        watch(opt, model)  # swapped
    with pytest.raises(UsageError, match=r"^model must be .* got str 'model'"):
        watch("model", opt)
    with pytest.raises(UsageError, match=r"^optimizer must be .* got str 'sgd'"):
        watch(model, "sgd")
    # Refused before anything was recorded: no run was started, none left half-written.
    assert lineage.active_run() is None
    store = open_store(sqlite_uri)
    assert list(store.runs([e.experiment_id for e in store.experiments()])) == []


CRASH = """
import sys
import torch
import lineage.pytorch

torch.manual_seed(0)
x = torch.randn(32, 8)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1)), batch_size=8)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
w = lineage.pytorch.watch(model, opt, loader=loader, experiment="crash")
for xb, yb in loader:
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb).squeeze(1), yb)
    loss.backward()
    opt.step()
    w.log(loss=loss)
w.epoch_end(1)
if sys.argv[1] == "raise":
    raise RuntimeError("the training broke")
"""


@pytest.mark.parametrize(("end", "status"), [("raise", "FAILED"), ("return", "FINISHED")])
def test_a_run_watch_started_ends_as_the_script_does(
    end: str,
    status: str,
    python: str,
    repo_root: Path,
    tmp_path: Path,
    sqlite_uri: str,
    read_run: Any,
) -> None:
    # No start_run and no close: the watcher's exit work flushes and finishes the data
    # pictures; lineage's exit handler ends the run, FAILED after an uncaught exception.
    from lineage.store import open_store

    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update({"MLFLOW_TRACKING_URI": sqlite_uri, "PYTHONPATH": str(repo_root)})
    out = subprocess.run(
        [python, str(script), end], env=env, capture_output=True, text=True, timeout=180
    )
    assert out.returncode == (1 if end == "raise" else 0), out.stderr[-3000:]
    store = open_store(sqlite_uri)
    runs = list(store.runs([e.experiment_id for e in store.resolve_experiments(["crash"])]))
    assert len(runs) == 1
    view = read_run(sqlite_uri, runs[0].run_id)
    assert view.record.status == status
    assert view.values["optimizer.name"] == "SGD"
    assert [s for s, _ in view.series("loss")] == [1, 2, 3, 4]
    assert {"dataset/train_pipeline.json", "dataset/train_sample.json"} <= set(view.artifacts)


def test_a_missing_framework_names_the_extra_to_install() -> None:
    from lineage._require import require

    with pytest.raises(UsageError) as info:
        require("lightning_not_installed_here", "lightning")
    assert str(info.value) == (
        "lineage.lightning needs the 'lightning_not_installed_here' package, which is not "
        "installed: pip install 'lineage-tuner[lightning]'"
    )


def test_checkpoint_helpers_round_trip_the_training_state(
    mlp: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lineage import checkpoints

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    # Outside the tuner: nothing saved, a fresh start.
    assert lineage.pytorch.save_checkpoint(1, model, opt, sched) is None
    assert lineage.pytorch.restore_checkpoint(model, opt, sched) == 0

    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(tmp_path))
    model(torch.ones(2, 64)).sum().backward()
    opt.step()
    sched.step()
    w = lineage.pytorch.Watcher(data_sample=False)
    w.global_step = 7
    saved = lineage.pytorch.save_checkpoint(3, model, opt, sched, watcher=w)
    assert saved is not None and checkpoints.latest_good(tmp_path).step == 3  # type: ignore[union-attr]

    monkeypatch.setenv(checkpoints.RESUME_FROM, str(saved.path))
    monkeypatch.setenv(checkpoints.RESUME_STEP, "3")
    fresh = mlp()
    opt2 = torch.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9)
    sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=1, gamma=0.5)
    w2 = lineage.pytorch.Watcher(data_sample=False)
    assert lineage.pytorch.restore_checkpoint(fresh, opt2, sched2, watcher=w2) == 3
    assert w2.global_step == 7 and w2.epoch == 3
    assert opt2.param_groups[0]["lr"] == pytest.approx(0.05)
    assert opt2.state_dict()["state"].keys() == opt.state_dict()["state"].keys()
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        assert torch.equal(a, b)

    # A plain retry built with another lr: the checkpoint's optimizer comes back whole.
    retry = mlp()
    opt4 = torch.optim.SGD(retry.parameters(), lr=0.4, momentum=0.9)
    sched4 = torch.optim.lr_scheduler.StepLR(opt4, step_size=1, gamma=0.5)
    assert lineage.pytorch.restore_checkpoint(retry, opt4, sched4) == 3
    assert opt4.param_groups[0]["lr"] == pytest.approx(0.05) and sched4.base_lrs == [0.1]

    # A continuation with an explored lr (population-based training): the optimizer keeps
    # its state and the schedule's position (halved once) but takes the new starting lr.
    monkeypatch.setenv(checkpoints.RESUME_CHANGED, '["lr"]')
    explored = mlp()
    opt3 = torch.optim.SGD(explored.parameters(), lr=0.4, momentum=0.9)
    sched3 = torch.optim.lr_scheduler.StepLR(opt3, step_size=1, gamma=0.5)
    assert lineage.pytorch.restore_checkpoint(explored, opt3, sched3) == 3
    assert opt3.param_groups[0]["lr"] == pytest.approx(0.2)
    assert sched3.base_lrs == [0.4] and opt3.state_dict()["state"]
    sched3.step()
    assert opt3.param_groups[0]["lr"] == pytest.approx(0.1)


def test_a_refused_resume_variable_ends_the_script_with_one_line(
    mlp: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lineage import checkpoints

    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(tmp_path))
    monkeypatch.setenv(checkpoints.RESUME_FROM, str(tmp_path / "step-000000001"))
    monkeypatch.setenv(checkpoints.RESUME_STEP, "one")
    with pytest.raises(SystemExit) as exit_info:
        lineage.pytorch.restore_checkpoint(mlp())
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "lineage: TUNER_RESUME_STEP must be a whole number, got 'one'\n"
    )
