"""Write real MindInsight summary directories with MindSpore's SummaryCollector (CPU).

    python _make_summaries.py OUT_DIR TRACKING_URI

OUT_DIR/base/<run>/   8 trainings (learning rate x momentum), each ``model.train`` for 2
                      epochs then ``model.eval`` with the same collector (two lineage files
                      per directory, as MindInsight users have them)
Then the first training's configuration trains once more under ``LineageCallback`` into
TRACKING_URI (experiment ``callback``), so that the tests can compare the names an import
gives with the callback's. That runs last: the summary writer forks a process per training,
and a fork must not happen while the recorder's thread is alive.
Prints one JSON line: {run directory name: {"lr": .., "momentum": ..}}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import mindspore as ms
import mindspore.dataset as mds
import numpy as np
from mindspore import nn
from mindspore.train import Accuracy, Model, SummaryCollector
from sklearn.datasets import load_digits

RUNS = [(lr, m) for lr in (0.003, 0.01, 0.03, 0.1) for m in (0.0, 0.9)]


class Digits:
    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.x[i], np.asarray(self.y[i])  # a 0-d label array, not a numpy scalar

    def __len__(self) -> int:
        return len(self.x)


def train(
    summary_dir: Path | None,
    lr: float,
    momentum: float,
    x: np.ndarray,
    y: np.ndarray,
    uri: str | None,
) -> None:
    ms.set_seed(0)
    mds.config.set_seed(0)
    ds_train = mds.GeneratorDataset(Digits(x[:320], y[:320]), ["image", "label"]).batch(32)
    ds_eval = mds.GeneratorDataset(Digits(x[1400:], y[1400:]), ["image", "label"], shuffle=False)
    net = nn.SequentialCell(nn.Dense(64, 32), nn.ReLU(), nn.Dense(32, 10))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=momentum)
    # Only JSON-serializable metric values reach the evaluation lineage: nn.Loss() returns a
    # numpy float32, and SummaryCollector then drops every metric of the evaluation.
    model = Model(net, loss, opt, metrics={"Accuracy": Accuracy()})
    callbacks: list = []
    if summary_dir is not None:
        callbacks.append(
            SummaryCollector(
                str(summary_dir),
                collect_freq=1,
                custom_lineage_data={"momentum": momentum, "note": "fixture"},
                # Lineage and the loss curve only: histograms, input images, the graph and the
                # loss landscape (checkpoints every step) cost time and are not imported.
                collect_specified_data={
                    "collect_landscape": None,
                    "collect_graph": False,
                    "collect_input_data": False,
                    "histogram_regular": "^none$",
                },
            )
        )
    run = None
    if uri is not None:
        import lineage
        from lineage.mindspore import LineageCallback

        run = lineage.start_run(experiment="callback", tracking_uri=uri)
        callbacks.append(LineageCallback(run=run, weight_stats=False))
    model.train(2, ds_train, callbacks=callbacks, dataset_sink_mode=False)
    # SummaryRecord names its files by the second they were opened: an evaluation opened in
    # the training's second would reuse the training's lineage file name (a fast machine
    # does that), and the directory would hold two files instead of three.
    time.sleep(1.05 - time.time() % 1.0)
    model.eval(ds_eval.batch(128), callbacks=callbacks, dataset_sink_mode=False)
    if run is not None:
        run.end()


def main() -> None:
    out, uri = Path(sys.argv[1]), sys.argv[2]
    ms.set_device("CPU")
    # PyNative: no graph to compile per network, which for 20 steps is most of the time.
    ms.set_context(mode=ms.PYNATIVE_MODE)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    made = {}
    for lr, m in RUNS:
        name = f"lr{lr}_m{m}"
        train(out / "base" / name, lr, m, x, y, None)
        made[name] = {"lr": lr, "momentum": m}
    train(None, *RUNS[0], x, y, uri)
    print(json.dumps(made))


if __name__ == "__main__":
    main()
