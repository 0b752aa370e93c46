"""A 2-layer BERT built from a config (nothing downloaded) trained with the Hugging Face
Trainer on generated token sequences, recorded by ``lineage.transformers.LineageCallback``.

    python examples/pytorch_digits/train_transformers.py --learning-rate 1e-3 --epochs 2

The task: sequences of 8 token ids from a 20-token vocabulary, labelled by whether token 5
occurs. Under the tuner the callback reports val_accuracy after every epoch's evaluation,
stops the Trainer through ``control.should_training_stop`` when the trial is pruned, and has
the Trainer save a checkpoint after every evaluation into the trial's checkpoint folder;
``resume_from_checkpoint=resume_path()`` makes an attempt that continues the trial (a retry,
``tuner resume``) start after the last evaluation saved.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import transformers
from common import params

from lineage.transformers import LineageCallback, resume_path
from tuner import trial


class Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, 20, (n, 8), generator=g)
        self.labels = (self.ids == 5).any(1).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def accuracy(pred: Any) -> dict[str, float]:
    return {"accuracy": float((np.argmax(pred.predictions, 1) == pred.label_ids).mean())}


p = params(
    {
        "learning_rate": 1e-3,
        "weight_decay": 0.0,
        "batch_size": 32,
        "hidden": 32,
        "epochs": 2,
        "seed": 0,
    }
)
transformers.set_seed(p["seed"])
config = transformers.BertConfig(
    vocab_size=20,
    hidden_size=p["hidden"],
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=2 * p["hidden"],
    max_position_embeddings=16,
    num_labels=2,
)
args = transformers.TrainingArguments(
    output_dir="hf-out",
    num_train_epochs=p["epochs"],
    per_device_train_batch_size=p["batch_size"],
    learning_rate=p["learning_rate"],
    weight_decay=p["weight_decay"],
    eval_strategy="epoch",
    logging_steps=1,
    save_strategy="no",
    report_to=[],
    disable_tqdm=True,
    use_cpu=True,
    seed=p["seed"],
)
transformers.Trainer(
    model=transformers.BertForSequenceClassification(config),
    args=args,
    train_dataset=Tokens(256, 0),
    eval_dataset=Tokens(64, 1),
    compute_metrics=accuracy,
    callbacks=[LineageCallback(trial=trial, monitor="val_accuracy", experiment="hf-tiny")],
).train(resume_from_checkpoint=resume_path())  # None: a fresh start
