"""Synthetic training histories: realistic healthy runs and runs with one known problem."""

from __future__ import annotations

import numpy as np

Points = list[tuple[int, float]]


def pts(values: np.ndarray | list[float], steps: np.ndarray | list[int] | None = None) -> Points:
    steps = list(range(len(values))) if steps is None else list(steps)
    return [(int(s), float(v)) for s, v in zip(steps, values, strict=True)]


def noisy_decay(
    rng: np.random.Generator,
    n: int = 500,
    start: float = 2.3,
    floor: float = 0.1,
    tau: float = 80.0,
    noise: float = 0.15,
) -> np.ndarray:
    k = np.arange(n)
    clean = floor + (start - floor) * np.exp(-k / tau)
    return clean * np.exp(noise * rng.standard_normal(n))


def epoch_curve(start: float, end: float, n: int, rng: np.random.Generator, noise: float = 0.02):
    k = np.arange(n)
    clean = end + (start - end) * np.exp(-k / max(n / 4, 1))
    return clean * (1 + noise * rng.standard_normal(n))


def healthy_run(rng: np.random.Generator, kind: str) -> tuple[dict[str, Points], dict, dict]:
    """A realistic healthy run (histories, params, tags) of one of several shapes."""
    steps_per_epoch = 50
    if kind == "noisy_decreasing":
        loss = noisy_decay(rng)
    elif kind == "plateau":
        loss = noisy_decay(rng, tau=15, floor=0.5, noise=0.1)
    elif kind == "warmup_bump":
        decay = noisy_decay(rng, n=450, start=2.8)
        bump = np.linspace(2.3, 2.8, 50) * np.exp(0.05 * rng.standard_normal(50))
        loss = np.concatenate([bump, decay])
    elif kind == "lr_restarts":
        # SGDR: cosine cycles of 100 steps; every restart jumps the loss back up, and the run
        # ends 10 steps after the last restart.
        k = np.arange(510)
        trend = 0.15 + 2.15 * np.exp(-k / 120)
        cycle = (k % 100) / 100
        loss = trend * (1 + 0.35 * (1 - cycle) ** 2) * np.exp(0.08 * rng.standard_normal(k.size))
    elif kind == "converged_heavy_noise":
        first = noisy_decay(rng, n=100, tau=20, floor=0.03)
        loss = np.concatenate([first, 0.02 * np.exp(1.0 * rng.standard_normal(900))])
    elif kind == "step_decay":
        # lr divided by 10 at steps 200 and 350: the loss drops sharply twice
        k = np.arange(500)
        level = np.where(k < 200, 0.9, np.where(k < 350, 0.45, 0.3))
        clean = level + (2.3 - 0.9) * np.exp(-k / 40)
        loss = clean * np.exp(0.12 * rng.standard_normal(500))
    elif kind == "regression_mse":
        loss = noisy_decay(rng, start=4e4, floor=60.0, tau=60, noise=0.2)
    elif kind == "negative_nll":
        loss = noisy_decay(rng, start=80.0, floor=1.0, tau=60, noise=0.02) - 40.0
    elif kind == "short_epochs":
        loss = epoch_curve(0.9, 0.2, 12, rng)
    else:
        raise ValueError(kind)
    n = loss.size
    if kind == "short_epochs":
        steps_per_epoch = 1
    hist: dict[str, Points] = {"loss": pts(loss)}
    epochs = max(n // steps_per_epoch, 1)
    ep_steps = [(e + 1) * (n // epochs) - 1 for e in range(epochs)]
    first, last = float(np.median(loss[:3])), float(np.median(loss[-50:]))
    val_end = last * 1.3 if last > 0 else last * 0.9
    val_loss = epoch_curve(val_end + 0.45 * (first - last), val_end, epochs, rng)
    val_acc = 1 - epoch_curve(0.7, 0.06, epochs, rng)
    train_acc = 1 - epoch_curve(0.7, 0.03, epochs, rng)
    hist["val_loss"] = pts(val_loss, ep_steps)
    hist["val_accuracy"] = pts(val_acc, ep_steps)
    hist["train_accuracy"] = pts(train_acc, ep_steps)
    hist["test_accuracy"] = [(ep_steps[-1], float(val_acc[-1] - 0.01))]
    hist["grad_norm"] = pts(
        4.0 * np.exp(-np.arange(n) / 300) * np.exp(0.2 * rng.standard_normal(n)) + 0.5
    )
    hist["weight_norm"] = pts(20 + np.log1p(np.arange(n)) * 0.5)
    hist["weight_delta"] = pts(1e-3 * np.exp(0.3 * rng.standard_normal(n)))
    hist["learning_rate"] = pts(np.full(n, 0.001))
    params = {
        "optimizer": "adam",
        "lr": "0.001",
        "batch_size": "32",
        "weight_decay": "0.0001",
        "beta1": "0.9",
        "init.sigma": "0.02",
        "loss_scale": "1024",
        "dropout": "0.1",
        "epochs": str(epochs),
        # what lineage.mindspore records: 50 steps of 32 per epoch, or an epoch-averaged loss
        # of a large data set (1,563 steps of 32 per epoch)
        "train_size": "1600" if kind != "short_epochs" else "50000",
        "steps_per_epoch": "50" if kind != "short_epochs" else "1563",
        "lr_scheduler": "cosine",
        "warmup_lr": "1e-7",
        "min_lr": "0",
        "weight_init": "xavier_uniform",
        "bias_init": "zeros",
    }
    tags = {"lineage.frozen_params": '["backbone.embed.weight"]', "lineage.trainable_params": "12"}
    return hist, params, tags


HEALTHY_KINDS = (
    "noisy_decreasing",
    "plateau",
    "warmup_bump",
    "lr_restarts",
    "converged_heavy_noise",
    "step_decay",
    "regression_mse",
    "negative_nll",
    "short_epochs",
)
