"""Train a 64-hidden-10 MLP on scikit-learn's digits with a plain PyTorch loop.

    python examples/pytorch_digits/train.py --lr 0.05 --epochs 3

Recorded by ``lineage.pytorch.watch`` (optimizer with its defaults, lr per step, data
pipeline, fingerprint, first-batch sample, loss per step, val_accuracy per epoch). Under the
tuner it reports val_accuracy after every epoch, stops when the trial is pruned, and saves
the model, optimizer and scheduler after every epoch into the trial's checkpoint folder: an
attempt that continues the trial (a retry, ``tuner resume`` after a crash) starts after the
last epoch saved (``lineage.pytorch.save_checkpoint`` and ``restore_checkpoint``).
"""

from __future__ import annotations

import torch
from common import digits, mlp, params

import lineage.pytorch
from tuner import trial

p = params(
    {
        "lr": 0.05,
        "optimizer": "sgd",
        "momentum": 0.9,
        "batch_size": 64,
        "hidden": 32,
        "epochs": 3,
        "train_size": 1437,
        "seed": 0,
    }
)
torch.manual_seed(p["seed"])
train, val = digits(p["train_size"])
loader = torch.utils.data.DataLoader(train, batch_size=p["batch_size"], shuffle=True)
model = mlp(p["hidden"])
if p["optimizer"] == "adam":
    opt: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=p["lr"])
else:
    opt = torch.optim.SGD(model.parameters(), lr=p["lr"], momentum=p["momentum"])
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=p["epochs"])

# watch starts the run (on rank 0 only under torchrun) and ends it with the block.
with lineage.pytorch.watch(
    model,
    opt,
    scheduler=sched,
    loader=loader,
    trial=trial,
    experiment="pytorch-digits",
    params={"epochs": p["epochs"]},
) as w:
    start = lineage.pytorch.restore_checkpoint(model, opt, sched, watcher=w)  # 0: fresh
    if start:
        print(f"resumed from the checkpoint of epoch {start}", flush=True)
    for epoch in range(start + 1, p["epochs"] + 1):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            w.log(loss=loss)
        sched.step()
        model.eval()
        with torch.no_grad():
            x, y = val.tensors
            accuracy = (model(x).argmax(1) == y).float().mean().item()
        print(f"epoch {epoch}: val_accuracy={accuracy:.4f}", flush=True)
        w.epoch_end(epoch, val_accuracy=accuracy)
        # After the report (an attempt resumed from this epoch keeps it), and also when told
        # to stop: a scheduler that pauses a trial (ASHA) resumes it from this checkpoint.
        # At an ASHA rung the save waits for the tuner's verdict on the report, and
        # ``w.pruned`` then says whether the trial was paused here.
        lineage.pytorch.save_checkpoint(epoch, model, opt, sched, watcher=w)
        if w.pruned:
            print(f"stopped by the tuner after epoch {epoch}", flush=True)
            break
