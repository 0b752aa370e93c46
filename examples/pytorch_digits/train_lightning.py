"""The digits MLP as a Lightning module, recorded by ``lineage.lightning.LineageCallback``.

    python examples/pytorch_digits/train_lightning.py --lr 0.05 --epochs 3

Under the tuner the callback reports val_accuracy after every epoch, stops the fit through
``trainer.should_stop`` when the trial is pruned, and saves a Lightning checkpoint after every
epoch into the trial's checkpoint folder; ``ckpt_path=resume_path()`` makes an attempt that
continues the trial (a retry, ``tuner resume``) start after the last epoch saved.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from common import digits, mlp, params

from lineage.lightning import LineageCallback, resume_path
from tuner import trial


class Digits(L.LightningModule):
    def __init__(self, lr: float, momentum: float, hidden: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = mlp(hidden)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_accuracy", (self.net(x).argmax(1) == y).float().mean())

    def configure_optimizers(self) -> Any:
        h = self.hparams
        return torch.optim.SGD(self.parameters(), lr=h.lr, momentum=h.momentum)


p = params({"lr": 0.05, "momentum": 0.9, "batch_size": 64, "hidden": 32, "epochs": 3, "seed": 0})
L.seed_everything(p["seed"], verbose=False)
train, val = digits()
trainer = L.Trainer(
    max_epochs=p["epochs"],
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    num_sanity_val_steps=0,
    callbacks=[LineageCallback(trial=trial, monitor="val_accuracy", experiment="lightning-digits")],
)
trainer.fit(
    Digits(p["lr"], p["momentum"], p["hidden"]),
    torch.utils.data.DataLoader(train, batch_size=p["batch_size"], shuffle=True),
    torch.utils.data.DataLoader(val, batch_size=360),
    ckpt_path=resume_path(),  # None: a fresh start
)
