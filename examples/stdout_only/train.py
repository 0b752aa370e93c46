"""A MindSpore training the tuner knows only through its output lines.

No import from this project, no mlflow: the campaign (``configs/stdout-example.yaml``)
parses what MindSpore's ``LossMonitor`` and this script print::

    epoch: 1 step: 45, loss is 0.2731          <- LossMonitor
    epoch: 1 val_accuracy: 0.9194              <- after every epoch (pruning)
    val_accuracy: 0.9528                       <- final value

The model: a 64-hidden-10 classifier on scikit-learn's digits (shipped, no download),
momentum SGD. Hyperparameters come from the command line only (the campaign's command
fills ``--lr {lr}`` and friends)::

    python examples/stdout_only/train.py --lr 0.05 --momentum 0.9 --batch-size 32 \
        --hidden 64 --epochs 3 [--seed 0] [--device-target CPU|GPU|Ascend]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device-target", choices=("CPU", "GPU", "Ascend"), default="CPU")
    args = p.parse_args(argv)

    import mindspore as ms
    import mindspore.dataset as mds
    import numpy as np
    from mindspore import nn
    from mindspore.train import Accuracy, Callback, LossMonitor, Model
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    ms.set_device(args.device_target)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(args.seed)
    mds.config.set_seed(args.seed)

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    x_tr, x_va, y_tr, y_va = train_test_split(
        x, y, test_size=0.2, random_state=args.seed, stratify=y
    )

    class Rows:
        def __init__(self, xs: Any, ys: Any) -> None:
            self.xs, self.ys = xs, ys

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            return self.xs[i], np.asarray(self.ys[i])

        def __len__(self) -> int:
            return len(self.xs)

    train = mds.GeneratorDataset(Rows(x_tr, y_tr), ["image", "label"], shuffle=True)
    train = train.batch(args.batch_size)
    val = mds.GeneratorDataset(Rows(x_va, y_va), ["image", "label"], shuffle=False).batch(256)

    net = nn.SequentialCell(nn.Dense(64, args.hidden), nn.ReLU(), nn.Dense(args.hidden, 10))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=args.lr, momentum=args.momentum)
    model = Model(net, loss, opt, metrics={"accuracy": Accuracy()})
    accuracies: list[float] = []

    class PrintValidation(Callback):
        def on_eval_end(self, run_context: Any) -> None:
            cb = run_context.original_args()
            accuracies.append(float(cb.eval_results["accuracy"]))
            print(f"epoch: {cb.cur_epoch_num} val_accuracy: {accuracies[-1]:.4f}", flush=True)

    steps = train.get_dataset_size()
    model.fit(args.epochs, train, val, callbacks=[LossMonitor(steps), PrintValidation()])
    print(f"val_accuracy: {accuracies[-1]:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
