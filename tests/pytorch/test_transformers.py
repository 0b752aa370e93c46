"""lineage.transformers.LineageCallback on a real Trainer: a 2-layer BERT built from a config
(no download) classifying generated token sequences; what it records, pruning."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers

from lineage import UsageError, checkpoints
from lineage.transformers import LineageCallback, resume_path


class Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Sequences of 8 token ids from a 20-token vocabulary; the label: is token 5 present."""

    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, 20, (n, 8), generator=g)
        self.labels = (self.ids == 5).any(1).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class FakeTrial:
    def __init__(self) -> None:
        self.reports: list[tuple[int, dict[str, float]]] = []

    def report(self, step: int, **metrics: float) -> None:
        self.reports.append((step, metrics))

    def should_prune(self) -> bool:
        return len(self.reports) >= 1


def _train(
    tmp_path: Any,
    callback: Any,
    epochs: int,
    *,
    learning_rate: float = 1e-3,
    weight_decay: float = 0.0,
    resume: str | None = None,
    eval_strategy: str = "epoch",
) -> Any:
    config = transformers.BertConfig(
        vocab_size=20,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=16,
        num_labels=2,
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        num_train_epochs=epochs,
        per_device_train_batch_size=32,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        eval_strategy=eval_strategy,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = transformers.Trainer(
        model=model,
        args=args,
        train_dataset=Tokens(64, 0),
        eval_dataset=Tokens(32, 1),
        callbacks=[callback],
    )
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def test_callback_records_training_arguments_and_evaluations(
    tmp_path: Any, sqlite_uri: str, read_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    cb = LineageCallback(experiment="hf")
    _train(tmp_path, cb, epochs=2)
    view = read_run(sqlite_uri, cb.run.run_id)
    v = view.values
    # TrainingArguments with the defaults the script left alone.
    assert (v["args.learning_rate"], v["args.warmup_steps"], v["args.lr_scheduler_type"]) == (
        0.001,
        0,
        "linear",
    )
    assert v["optimizer.name"] == "AdamW" and v["optimizer.betas"] == [0.9, 0.999]
    assert v["scheduler.name"] == "LambdaLR"
    assert (v["network.name"], v["batch_size"], v["train_size"]) == (
        "BertForSequenceClassification",
        32,
        64,
    )
    # 2 steps per epoch, linear decay: a new lr after every step.
    assert [s for s, _ in view.series("lr")] == [1, 2, 3, 4]
    assert [s for s, _ in view.series("loss")] == [1, 2, 3, 4]
    assert [s for s, _ in view.series("val_loss")] == [1, 2]
    assert "data.train.input_ids.mean" in view.histories
    assert "dataset/train_sample_table.png" in set(view.artifacts)
    assert "args.hub_token" not in v


def test_pruned_trial_stops_the_trainer(
    tmp_path: Any, sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    trial = FakeTrial()
    cb = LineageCallback(trial=trial, monitor="val_loss", data_sample=False)
    trainer = _train(tmp_path, cb, epochs=4)
    assert trainer.state.global_step == 2
    assert [(s, list(m)) for s, m in trial.reports] == [(1, ["val_loss"])]


def test_a_misspelt_monitor_under_the_tuner_fails_at_the_first_evaluation(
    tmp_path: Any, sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    trial = FakeTrial()
    cb = LineageCallback(trial=trial, monitor="val_los", data_sample=False)
    with pytest.raises(UsageError) as info:
        _train(tmp_path, cb, epochs=2)
    # The Trainer has no hook for an exception: a script's exit ends the run FAILED.
    cb.watcher.close("FAILED")
    message = str(info.value)
    assert message.startswith(
        "LineageCallback(monitor=...) must name a metric of the evaluation, got 'val_los'; "
        "the evaluation's metrics are: "
    )
    assert "val_loss" in message.split(": ")[-1].split(", ")
    assert trial.reports == []


def test_no_evaluation_under_the_tuner_is_said_at_the_start(
    tmp_path: Any, sqlite_uri: str, read_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    trial = FakeTrial()
    cb = LineageCallback(trial=trial, data_sample=False)
    with pytest.warns(UserWarning, match="eval_strategy is 'no'") as caught:
        _train(tmp_path, cb, epochs=2, eval_strategy="no")
    assert len([w for w in caught if "eval_strategy" in str(w.message)]) == 1
    assert trial.reports == []


def test_a_continuation_with_nothing_left_to_train_still_records_the_training(
    tmp_path: Any, sqlite_uri: str, read_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    root = tmp_path / "trial"
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(root))
    _train(tmp_path / "first", LineageCallback(data_sample=False), epochs=2)
    monkeypatch.setenv(checkpoints.RESUME_FROM, str(root / "step-000000002"))
    monkeypatch.setenv(checkpoints.RESUME_STEP, "2")
    cb = LineageCallback()
    trainer = _train(tmp_path / "again", cb, epochs=2, resume=resume_path())
    assert trainer.state.global_step == 4
    view = read_run(sqlite_uri, cb.run.run_id)
    v = view.values
    assert (v["optimizer.name"], v["args.learning_rate"], v["batch_size"]) == ("AdamW", 0.001, 32)
    assert "dataset/train_pipeline.json" in set(view.artifacts)
    assert view.record.status == "FINISHED"


CRASH = """
import torch
import transformers

from lineage.transformers import LineageCallback


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        return {"input_ids": torch.arange(8) % 7 + i % 3, "labels": torch.tensor(i % 2)}


def broken(prediction):
    raise RuntimeError("the metric broke")


config = transformers.BertConfig(
    vocab_size=20, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    intermediate_size=32, max_position_embeddings=16, num_labels=2,
)
args = transformers.TrainingArguments(
    output_dir="out", num_train_epochs=2, per_device_train_batch_size=16, eval_strategy="epoch",
    logging_steps=1, save_strategy="no", report_to=[], disable_tqdm=True, use_cpu=True,
)
transformers.Trainer(
    model=transformers.BertForSequenceClassification(config),
    args=args,
    train_dataset=Tokens(),
    eval_dataset=Tokens(),
    compute_metrics=broken,
    callbacks=[LineageCallback(experiment="crash", data_sample=False)],
).train()
"""


def test_a_run_the_callback_started_ends_failed_when_the_training_raises(
    python: str, repo_root: Any, tmp_path: Any, sqlite_uri: str, read_run: Any
) -> None:
    import os
    import subprocess

    from lineage.store import open_store

    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update({"MLFLOW_TRACKING_URI": sqlite_uri, "PYTHONPATH": str(repo_root)})
    out = subprocess.run(
        [python, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 1 and "the metric broke" in out.stderr, out.stderr[-3000:]
    store = open_store(sqlite_uri)
    runs = list(store.runs([e.experiment_id for e in store.resolve_experiments(["crash"])]))
    assert len(runs) == 1
    view = read_run(sqlite_uri, runs[0].run_id)
    assert view.record.status == "FAILED"
    assert [s for s, _ in view.series("loss")] == [1, 2]


def test_checkpoints_follow_the_campaign_and_a_resume_keeps_only_explored_values(
    tmp_path: Any, sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    root = tmp_path / "trial"
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(root))
    monkeypatch.setenv(checkpoints.EVERY, "2")
    monkeypatch.setenv(checkpoints.KEEP, "5")  # the resumed trainings keep evaluation 2's
    _train(tmp_path / "first", LineageCallback(data_sample=False), epochs=3)
    # Every 2 evaluations, and the one after the last step.
    assert sorted(p.name for p in root.iterdir()) == ["step-000000002", "step-000000003"]

    monkeypatch.setenv(checkpoints.RESUME_FROM, str(root / "step-000000002"))
    monkeypatch.setenv(checkpoints.RESUME_STEP, "2")

    def resumed(out: str) -> list[dict[str, Any]]:
        cb = LineageCallback(data_sample=False)
        trainer = _train(
            tmp_path / out, cb, 4, learning_rate=5e-3, weight_decay=0.01, resume=resume_path()
        )
        assert trainer.state.global_step == 8
        assert trainer.lr_scheduler.base_lrs == [
            g["initial_lr"] for g in trainer.optimizer.param_groups
        ]
        return trainer.optimizer.param_groups

    # A plain retry: the Trainer restores the checkpoint's optimizer and scheduler whole.
    groups = resumed("retry")
    assert [(g["initial_lr"], g["weight_decay"]) for g in groups] == [(1e-3, 0.0), (1e-3, 0.0)]

    # A continuation with explored values trains with TrainingArguments' (no decay on the
    # Trainer's second group: biases and norms).
    monkeypatch.setenv(checkpoints.RESUME_CHANGED, '["learning_rate", "weight_decay"]')
    groups = resumed("explored")
    assert [(g["initial_lr"], g["weight_decay"]) for g in groups] == [(5e-3, 0.01), (5e-3, 0.0)]


def test_a_refused_resume_variable_ends_the_training_with_one_line(
    tmp_path: Any,
    sqlite_uri: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri)
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(tmp_path / "trial"))
    monkeypatch.setenv(checkpoints.EVERY, "0")
    with pytest.raises(SystemExit) as exit_info:
        _train(tmp_path, LineageCallback(data_sample=False), epochs=1)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "lineage: TUNER_CHECKPOINT_EVERY must be a whole number >= 1, got '0'"
    )
