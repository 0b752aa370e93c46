"""A mindoptimizer-style training script (MindInsight's HyperConfig), changed by one import.

A small LeNet on scikit-learn's digits (8x8 images, no download). Written the way
MindInsight's tuning guide asks: hyperparameters from ``HyperConfig().params``, a
``SummaryCollector`` writing into ``config.summary_dir``, ``Accuracy`` as the evaluation
metric. The only line that differs from a mindoptimizer script is the import::

    from mindinsight.optimizer import HyperConfig      # under mindoptimizer
    from tuner.compat.mindinsight import HyperConfig   # under tuner run

Before ``model.eval`` it waits for a new second when the training took less than one (see
``wait_for_a_new_second``), which a mindoptimizer script needs as much.

Its mindoptimizer config is ``configs/mindinsight/lenet.yaml``; from the repository root::

    tuner convert mindinsight configs/mindinsight/lenet.yaml -o lenet-campaign.yaml
    tuner run lenet-campaign.yaml

Parameters it reads: ``learning_rate``, ``batch_size`` (system-defined) and ``momentum``
(user-defined, also passed to the summary as custom lineage data); ``epoch`` defaults to 4
when the campaign does not tune it. ``TRAIN_SIZE`` (environment) keeps the first N training
images (default: all 1437).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import mindspore as ms
import mindspore.dataset as mds
import numpy as np
from mindspore import nn
from mindspore.train import Accuracy, LossMonitor, Model, SummaryCollector
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from tuner.compat.mindinsight import HyperConfig


class LeNet(nn.Cell):
    """LeNet-5's shape, sized for 8x8 digits."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, pad_mode="same")
        self.conv2 = nn.Conv2d(6, 16, 3, pad_mode="valid")
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 2 * 2, 32)
        self.fc2 = nn.Dense(32, num_classes)

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        x = self.pool(self.relu(self.conv1(x)))  # 8x8 -> 4x4
        x = self.relu(self.conv2(x))  # 4x4 -> 2x2
        return self.fc2(self.relu(self.fc1(self.flatten(x))))


class Digits:
    """Random-access source for ``GeneratorDataset``: (image[1, 8, 8], 0-d label)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.x[i], np.asarray(self.y[i])

    def __len__(self) -> int:
        return len(self.x)


def datasets(batch_size: int) -> tuple[mds.Dataset, mds.Dataset]:
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int32)
    x_tr, x_va, y_tr, y_va = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    size = int(os.environ.get("TRAIN_SIZE", "0")) or len(x_tr)
    train = mds.GeneratorDataset(Digits(x_tr[:size], y_tr[:size]), ["image", "label"])
    val = mds.GeneratorDataset(Digits(x_va, y_va), ["image", "label"], shuffle=False)
    return train.batch(batch_size), val.batch(256)


def wait_for_a_new_second(summary_dir: str) -> None:
    """Return once no summary file in ``summary_dir`` is named after the current second.

    ``SummaryCollector`` opens new files for ``model.eval``, named after the second they are
    opened in, and opens them for writing: in the second the training's files were opened it
    would overwrite the training's lineage (its hyperparameters and user-defined data). Only
    a training shorter than a second waits here, less than a second.
    """
    while any(Path(summary_dir).glob(f"*.summary.{int(time.time())}.*")):
        time.sleep(0.05)


def main() -> None:
    config = HyperConfig()
    params = config.params

    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    mds.config.set_seed(0)

    ds_train, ds_eval = datasets(int(params.batch_size))
    network = LeNet()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(network.trainable_params(), params.learning_rate, params.momentum)
    model = Model(network, loss, opt, metrics={"Accuracy": Accuracy()})

    summary_cb = SummaryCollector(
        config.summary_dir,
        collect_freq=1,
        custom_lineage_data=config.custom_lineage_data,
        collect_specified_data={"collect_landscape": None, "collect_graph": False},
    )
    epochs = int(params.get("epoch", 4))
    model.train(epochs, ds_train, callbacks=[LossMonitor(20), summary_cb])
    wait_for_a_new_second(config.summary_dir)
    result = model.eval(ds_eval, callbacks=[summary_cb])
    print(f"Accuracy: {result['Accuracy']:.4f}")


if __name__ == "__main__":
    main()
