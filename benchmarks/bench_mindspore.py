"""What LineageCallback costs per training step, on the digits MLP (CPU, graph mode).

Trains the same network several times in one process: with no callback, with
``LineageCallback()`` (loss logged every step) and with ``LineageCallback(log_every=10)``. It
prints the median time per step over the epochs after the first (the first epoch compiles).
The lineage store is a temporary SQLite file::

    python benchmarks/bench_mindspore.py [--epochs 6] [--batch-size 32]

Writes ``benchmarks/results/mindspore.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples" / "mindspore_digits"))
from _results import write_result  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()

    import mindspore as ms
    import mindspore.dataset as mds
    from mindspore import nn
    from mindspore.train import Callback, Model
    from train import Digits, load_data

    import lineage
    from lineage.mindspore import LineageCallback

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    data = load_data(0, None)
    tmp = tempfile.mkdtemp(prefix="bench-ms-")
    os.chdir(tmp)
    uri = f"sqlite:///{tmp}/mlflow.db"

    class EpochTimer(Callback):
        def __init__(self) -> None:
            self.per_step: list[float] = []

        def on_train_epoch_begin(self, run_context: Any) -> None:
            self.t0 = time.perf_counter()

        def on_train_epoch_end(self, run_context: Any) -> None:
            cb = run_context.original_args()
            self.per_step.append((time.perf_counter() - self.t0) / cb.batch_num)

    def fit(extra: list[Any]) -> float:
        train = mds.GeneratorDataset(
            Digits(data["x_train"], data["y_train"]), ["image", "label"], shuffle=True
        ).batch(args.batch_size)
        net = nn.SequentialCell(nn.Dense(64, 64), nn.ReLU(), nn.Dense(64, 10))
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
        model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)
        timer = EpochTimer()
        model.train(args.epochs, train, callbacks=[timer, *extra])
        return statistics.median(timer.per_step[1:])

    rows = []
    for label, make in (
        ("no callback", lambda run: []),
        ("LineageCallback()", lambda run: [LineageCallback(run)]),
        ("LineageCallback(log_every=10)", lambda run: [LineageCallback(run, log_every=10)]),
    ):
        times = []
        for _ in range(args.repeats):
            with lineage.start_run(experiment="bench", tracking_uri=uri) as run:
                times.append(fit(make(run)))
        rows.append((label, min(times)))
    base = rows[0][1]
    print(f"{'configuration':32} {'ms/step':>8} {'overhead ms/step':>17}")
    for label, t in rows:
        print(f"{label:32} {t * 1e3:8.3f} {(t - base) * 1e3:17.3f}")
    write_result(
        "mindspore",
        {
            label: {
                "ms_per_step": round(t * 1e3, 4),
                "overhead_ms_per_step": round((t - base) * 1e3, 4),
            }
            for label, t in rows
        },
        store="sqlite",
        params={"epochs": args.epochs, "batch_size": args.batch_size, "repeats": args.repeats},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
