"""lineage.lightning.LineageCallback on a real Lightning fit: what it records, pruning."""

from __future__ import annotations

from typing import Any

import lightning as L
import pytest
import torch

from lineage import UsageError, checkpoints
from lineage.lightning import LineageCallback, resume_path


class Digits(L.LightningModule):
    def __init__(self, lr: float = 0.1, hidden: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
        )

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        acc = (self.net(x).argmax(1) == y).float().mean()
        self.log("val_accuracy", acc)

    def configure_optimizers(self) -> Any:
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.ExponentialLR(opt, 0.5)}


class FakeTrial:
    def __init__(self) -> None:
        self.reports: list[tuple[int, dict[str, float]]] = []

    def report(self, step: int, **metrics: float) -> None:
        self.reports.append((step, metrics))

    def should_prune(self) -> bool:
        return len(self.reports) >= 2


def _fit(
    digits: Any, callback: Any, epochs: int, *, lr: float = 0.05, ckpt_path: str | None = None
) -> Any:
    train, val = digits
    trainer = L.Trainer(
        max_epochs=epochs,
        callbacks=[callback],
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(
        Digits(lr=lr),
        torch.utils.data.DataLoader(train, batch_size=64),
        torch.utils.data.DataLoader(val, batch_size=64),
        ckpt_path=ckpt_path,
    )
    return trainer


def test_callback_records_hparams_optimizer_and_epoch_metrics(
    digits: Any, sqlite_uri: str, read_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    cb = LineageCallback(experiment="lightning")
    _fit(digits, cb, epochs=2)
    view = read_run(sqlite_uri, cb.run.run_id)
    v = view.values
    assert (v["lr"], v["hidden"]) == (0.05, 16)
    assert (v["optimizer.name"], v["optimizer.momentum"], v["optimizer.dampening"]) == (
        "SGD",
        0.9,
        0,
    )
    assert (v["scheduler.name"], v["scheduler.gamma"]) == ("ExponentialLR", 0.5)
    assert (v["trainer.max_epochs"], v["trainer.precision"]) == (2, "32-true")
    assert (v["batch_size"], v["train_size"], v["total_params"]) == (64, 256, 1210)
    assert view.series("lr") == [(1, 0.05), (5, 0.025)]
    assert [s for s, _ in view.series("loss")] == list(range(1, 9))
    assert [s for s, _ in view.series("val_accuracy")] == [1, 2]
    assert [s for s, _ in view.series("train_loss")] == [1, 2]
    assert view.record.status == "FINISHED"
    assert "dataset/train_sample_table.png" in set(view.artifacts)


def test_pruned_trial_stops_the_fit(
    digits: Any, sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    trial = FakeTrial()
    cb = LineageCallback(trial=trial, monitor="val_accuracy", data_sample=False)
    trainer = _fit(digits, cb, epochs=5)
    assert trainer.current_epoch == 2
    assert [s for s, _ in trial.reports] == [1, 2]
    assert list(trial.reports[0][1]) == ["val_accuracy"]


def test_a_misspelt_monitor_under_the_tuner_fails_at_the_first_epoch(
    digits: Any, sqlite_uri: str, read_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It would report nothing, so the trial could never be pruned.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    trial = FakeTrial()
    cb = LineageCallback(trial=trial, monitor="val_acc", data_sample=False)
    with pytest.raises(UsageError) as info:
        _fit(digits, cb, epochs=3)
    assert str(info.value) == (
        "LineageCallback(monitor=...) must name a metric the epoch logs, got 'val_acc'; "
        "the epoch's metrics are: val_accuracy"
    )
    assert trial.reports == []
    assert read_run(sqlite_uri, cb.run.run_id).record.status == "FAILED"


def test_a_continuation_with_nothing_left_to_train_still_records_the_fit(
    digits: Any, tmp_path: Any, sqlite_uri: str, read_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    root = tmp_path / "trial"
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(root))
    _fit(digits, LineageCallback(data_sample=False), epochs=2)
    # The checkpoint of the last epoch: Lightning skips the training loop, and with it
    # on_train_start.
    monkeypatch.setenv(checkpoints.RESUME_FROM, str(root / "step-000000002"))
    monkeypatch.setenv(checkpoints.RESUME_STEP, "2")
    cb = LineageCallback()
    _fit(digits, cb, epochs=2, ckpt_path=resume_path())
    view = read_run(sqlite_uri, cb.run.run_id)
    v = view.values
    assert (v["optimizer.name"], v["optimizer.momentum"], v["lr"]) == ("SGD", 0.9, 0.05)
    assert (v["trainer.max_epochs"], v["batch_size"], v["train_size"]) == (2, 64, 256)
    assert "dataset/train_pipeline.json" in set(view.artifacts)
    assert view.record.status == "FINISHED"


def test_checkpoints_follow_the_campaign_and_a_resume_keeps_only_explored_values(
    digits: Any, tmp_path: Any, sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    root = tmp_path / "trial"
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(root))
    monkeypatch.setenv(checkpoints.EVERY, "2")
    _fit(digits, LineageCallback(data_sample=False), epochs=3)
    # Every 2 epochs, and the last one.
    assert sorted(p.name for p in root.iterdir()) == ["step-000000002", "step-000000003"]

    monkeypatch.setenv(checkpoints.KEEP, "5")  # the resumed fits keep epoch 2's checkpoint
    monkeypatch.setenv(checkpoints.RESUME_FROM, str(root / "step-000000002"))
    monkeypatch.setenv(checkpoints.RESUME_STEP, "2")
    # A plain retry built with another lr: the checkpoint's optimizer comes back whole.
    trainer = _fit(digits, LineageCallback(data_sample=False), 4, lr=0.2, ckpt_path=resume_path())
    group = trainer.optimizers[0].param_groups[0]
    assert group["initial_lr"] == 0.05 and group["lr"] == pytest.approx(0.05 * 0.5**4)

    # A continuation with an explored lr keeps it, and the schedule's position (halved twice).
    monkeypatch.setenv(checkpoints.RESUME_CHANGED, '["lr"]')
    trainer = _fit(digits, LineageCallback(data_sample=False), 4, lr=0.2, ckpt_path=resume_path())
    group = trainer.optimizers[0].param_groups[0]
    assert group["initial_lr"] == 0.2 and group["lr"] == pytest.approx(0.2 * 0.5**4)


def test_a_refused_checkpoint_variable_ends_the_fit_with_one_line(
    digits: Any,
    tmp_path: Any,
    sqlite_uri: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(tmp_path))
    monkeypatch.setenv(checkpoints.EVERY, "often")
    with pytest.raises(SystemExit) as exit_info:
        _fit(digits, LineageCallback(data_sample=False), epochs=1)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "lineage: TUNER_CHECKPOINT_EVERY must be a whole number >= 1, got 'often'"
    )
