"""Train a 64-hidden-10 MindSpore classifier on scikit-learn's digits (no download).

The data set ships with scikit-learn (1797 8x8 images, 10 classes). It is split once, by
``--seed``, into 1437 training and 360 validation images; ``--train-size N`` keeps only the
first N training images. A textbook overfitting run (training loss falls to ~0.004 while
validation loss climbs from ~0.62 at epoch 12 to ~0.71 at epoch 60 and validation accuracy
stalls near 0.85)::

  python examples/mindspore_digits/train.py --train-size 60 --batch-size 16 --lr 0.1 --epochs 60

Hyperparameters, lowest precedence first:
  1. the flag defaults below;
  2. the JSON object in ``TUNER_PARAMS`` (set by ``tuner run``; keys are the flag names with
     ``_`` for ``-``: ``lr``, ``optimizer``, ``momentum``, ``weight_decay``, ``batch_size``,
     ``hidden``, ``epochs``, ``train_size``, ``seed``);
  3. flags given explicitly on the command line (so ``--lr {lr}`` placeholders work too).

Flags::

  --lr FLOAT                    learning rate (default 0.05)
  --optimizer {sgd,momentum,adam}  (default momentum)
  --momentum FLOAT              momentum, used by ``momentum`` only (default 0.9)
  --weight-decay FLOAT          L2 weight decay of every optimizer (default 0.0)
  --batch-size INT              (default 32)
  --hidden INT                  hidden units (default 64)
  --epochs INT                  (default 3)
  --train-size INT              keep the first N training images (default: all 1437)
  --seed INT                    seeds MindSpore, the data pipeline and numpy (default 0)
  --device-target {CPU,GPU,Ascend}  (default CPU; GPU/Ascend read CUDA_VISIBLE_DEVICES /
                                DEVICE_ID as set by the tuner)
  --mode {graph,pynative}       MindSpore execution mode (default graph)
  --experiment NAME             MLflow experiment when not launched by the tuner
                                (default mindspore-digits)
  --no-lineage                  do not record into MLflow (prints only; under the tuner the
                                trial then saves no checkpoints and restarts from epoch 0)

What it records (through ``lineage.mindspore.LineageCallback``, into the run named by
``MLFLOW_RUN_ID`` when the tuner launched it, else a new run in ``--experiment``):
optimizer class and hyperparameters, loss function, network, parameter counts, dataset
fingerprint and pipeline, per-step metric ``loss``, per-epoch ``val_accuracy`` and
``val_loss``, epoch time and throughput.

What it prints (MindSpore ``LossMonitor`` style, parsed by ``configs/stdout-example.yaml``
style patterns if wanted)::

  epoch: 1 step: 45, loss is 0.2143
  epoch: 1 val_accuracy: 0.9111 val_loss: 0.3012
  ...
  val_accuracy: 0.9611

Under the tuner it reports ``val_accuracy`` after every epoch through
``tuner.trial.report(epoch, val_accuracy=...)`` and stops early when
``tuner.trial.should_prune()`` says so. It has no checkpoint code: ``LineageCallback`` saves
the network and the optimizer's state into the trial's checkpoint folder every
``checkpoint.every`` epochs, and an attempt that continues the trial (a retry, ``tuner
resume`` after a crash) trains only the epochs after the last one saved, numbered on (the
epoch this script reports is the one MindSpore's callbacks see). Run it on its own::

  python examples/mindspore_digits/train.py --lr 0.05 --optimizer momentum --epochs 3
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import Any

from tuner import trial

DEFAULTS: dict[str, Any] = {
    "lr": 0.05,
    "optimizer": "momentum",
    "momentum": 0.9,
    "weight_decay": 0.0,
    "batch_size": 32,
    "hidden": 64,
    "epochs": 3,
    "train_size": None,
    "seed": 0,
    "device_target": "CPU",
    "mode": "graph",
}
OPTIMIZERS = ("sgd", "momentum", "adam")
_TYPES = {
    "lr": float,
    "momentum": float,
    "weight_decay": float,
    "batch_size": int,
    "hidden": int,
    "epochs": int,
    "train_size": int,
    "seed": int,
}
_CHOICES = {
    "optimizer": OPTIMIZERS,
    "device_target": ("CPU", "GPU", "Ascend"),
    "mode": ("graph", "pynative"),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # default=SUPPRESS: an absent flag leaves no attribute, so TUNER_PARAMS can fill it.
    s = argparse.SUPPRESS
    p.add_argument("--lr", type=float, default=s)
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=s)
    p.add_argument("--momentum", type=float, default=s)
    p.add_argument("--weight-decay", type=float, default=s)
    p.add_argument("--batch-size", type=int, default=s)
    p.add_argument("--hidden", type=int, default=s)
    p.add_argument("--epochs", type=int, default=s)
    p.add_argument("--train-size", type=int, default=s)
    p.add_argument("--seed", type=int, default=s)
    p.add_argument("--device-target", choices=("CPU", "GPU", "Ascend"), default=s)
    p.add_argument("--mode", choices=("graph", "pynative"), default=s)
    p.add_argument("--experiment", default="mindspore-digits")
    p.add_argument("--no-lineage", action="store_true")
    return p


def resolve_params(argv: list[str] | None = None) -> tuple[dict[str, Any], argparse.Namespace]:
    """Merge defaults, ``TUNER_PARAMS`` and explicit flags (in that order of precedence)."""
    args = _parser().parse_args(argv)
    params = dict(DEFAULTS)
    for key, value in trial.params().items():
        if key not in DEFAULTS:
            continue  # parameters of other scripts sharing a campaign are not ours
        params[key] = value
    for key in DEFAULTS:
        if hasattr(args, key):
            params[key] = getattr(args, key)
    if params["optimizer"] != "momentum":
        params["momentum"] = None  # conditional: not a hyperparameter of this run
    errors = []
    for key, kind in _TYPES.items():
        if params[key] is None:
            continue
        try:
            params[key] = kind(params[key])
        except (TypeError, ValueError):
            errors.append(f"{key} must be a {kind.__name__}, got {params[key]!r}")
    for key, allowed in _CHOICES.items():
        if params[key] not in allowed:
            errors.append(f"{key} must be one of {list(allowed)}, got {params[key]!r}")
    if isinstance(params["lr"], float) and not params["lr"] > 0:
        errors.append(f"lr must be > 0, got {params['lr']!r}")
    if isinstance(params["weight_decay"], float) and not params["weight_decay"] >= 0:
        errors.append(f"weight_decay must be >= 0, got {params['weight_decay']!r}")
    for key in ("batch_size", "hidden", "epochs", "train_size"):
        if isinstance(params[key], int) and params[key] < 1:
            errors.append(f"{key} must be >= 1, got {params[key]!r}")
    if errors:
        print(f"train.py: {'; '.join(errors)}", file=sys.stderr)
        raise SystemExit(2)
    return params, args


def load_data(seed: int, train_size: int | None) -> dict[str, Any]:
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    x_tr, x_va, y_tr, y_va = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    if train_size is not None:
        x_tr, y_tr = x_tr[:train_size], y_tr[:train_size]
    return {"x_train": x_tr, "y_train": y_tr, "x_val": x_va, "y_val": y_va}


class Digits:
    """Random-access source for ``mindspore.dataset.GeneratorDataset``: (image[64], label)."""

    def __init__(self, x: Any, y: Any) -> None:
        self.x, self.y = x, y

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        import numpy as np

        return self.x[i], np.asarray(self.y[i])  # a 0-d array, not a numpy scalar

    def __len__(self) -> int:
        return len(self.x)


def main(argv: list[str] | None = None) -> int:
    params, args = resolve_params(argv)

    import mindspore as ms
    import mindspore.dataset as mds
    from mindspore import nn
    from mindspore.train import Accuracy, Callback, Model

    seed = int(params["seed"])
    ms.set_device(params["device_target"])
    # Graph mode compiles once (~1 s) and then runs a step in well under a millisecond.
    ms.set_context(mode=ms.GRAPH_MODE if params["mode"] == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(seed)
    mds.config.set_seed(seed)

    data = load_data(seed, params["train_size"])
    batch_size = int(params["batch_size"])
    train_ds = mds.GeneratorDataset(
        Digits(data["x_train"], data["y_train"]), ["image", "label"], shuffle=True
    ).batch(batch_size)
    val_ds = mds.GeneratorDataset(
        Digits(data["x_val"], data["y_val"]), ["image", "label"], shuffle=False
    ).batch(256)

    hidden = int(params["hidden"])
    net = nn.SequentialCell(nn.Dense(64, hidden), nn.ReLU(), nn.Dense(hidden, 10))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    lr = float(params["lr"])
    decay = float(params["weight_decay"])
    if params["optimizer"] == "sgd":
        opt: nn.Optimizer = nn.SGD(net.trainable_params(), learning_rate=lr, weight_decay=decay)
    elif params["optimizer"] == "momentum":
        opt = nn.Momentum(
            net.trainable_params(),
            learning_rate=lr,
            momentum=float(params["momentum"]),
            weight_decay=decay,
        )
    else:
        opt = nn.Adam(net.trainable_params(), learning_rate=lr, weight_decay=decay)
    model = Model(net, loss_fn, opt, metrics={"accuracy": Accuracy()})

    steps = train_ds.get_dataset_size()
    history: list[float] = []

    class Report(Callback):  # prints LossMonitor-style lines and talks to the tuner
        def on_train_step_end(self, run_context: Any) -> None:
            cb = run_context.original_args()
            step_in_epoch = (cb.cur_step_num - 1) % steps + 1
            if step_in_epoch == steps:
                loss = float(cb.net_outputs.asnumpy())
                print(f"epoch: {cb.cur_epoch_num} step: {step_in_epoch}, loss is {loss:.4f}")

        def on_eval_end(self, run_context: Any) -> None:
            cb = run_context.original_args()
            acc = float(cb.eval_results["accuracy"])
            history.append(acc)
            print(
                f"epoch: {cb.cur_epoch_num} val_accuracy: {acc:.4f} "
                f"val_loss: {float(cb.eval_results['eval_loss']):.4f}",
                flush=True,
            )
            trial.report(cb.cur_epoch_num, val_accuracy=acc)  # a no-op outside the tuner

        def on_train_epoch_end(self, run_context: Any) -> None:
            # Here, not in on_eval_end: an evaluation has a RunContext of its own.
            if trial.should_prune():
                epoch = run_context.original_args().cur_epoch_num
                print(f"pruned by the tuner after epoch {epoch}", flush=True)
                run_context.request_stop()

    callbacks: list[Callback] = [Report()]
    with contextlib.ExitStack() as stack:
        if not args.no_lineage:
            import lineage
            from lineage.mindspore import LineageCallback

            # The script logs its own knobs (hidden units are not visible to the callback);
            # the callback adds optimizer, loss, network, data, device and per-step metrics,
            # and under the tuner saves and restores the trial's checkpoints. It comes first:
            # the callbacks after it see the epochs numbered on from a checkpoint.
            clean = {k: v for k, v in params.items() if v is not None}
            stack.enter_context(lineage.start_run(experiment=args.experiment, params=clean))
            callbacks.insert(0, LineageCallback())
        started = time.perf_counter()
        model.fit(int(params["epochs"]), train_ds, valid_dataset=val_ds, callbacks=callbacks)
    # Epochs this process trained and evaluated (after a checkpoint: the ones left).
    print(f"trained {len(history)} epoch(s) in {time.perf_counter() - started:.2f}s")
    print(f"val_accuracy: {history[-1]:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
