"""lineage.transformers.LineageCallback on a real Trainer: a 2-layer BERT built from a config
(no download) classifying generated token sequences; what it records, pruning."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers

from lineage.transformers import LineageCallback


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


def _train(tmp_path: Any, callback: Any, epochs: int) -> Any:
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
        learning_rate=1e-3,
        eval_strategy="epoch",
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
    trainer.train()
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
