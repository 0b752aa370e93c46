"""Step-time cost and coverage of recording a PyTorch training, side by side with the stock tools.

    python benchmarks/bench_pytorch_recording.py [--epochs 3] [--rounds 3]

A small CNN (two 3x3 convolutions, 16 and 32 channels, on scikit-learn's 8x8 digits, batch 32)
is trained on CPU in each mode, each mode in its own process, the modes interleaved over
``--rounds`` so that a change of machine load hits them alike:

plain loop   none | ``mlflow.pytorch.autolog()`` | ``lineage.pytorch.watch`` (+ ``log(loss)``)
Lightning    no logger | Lightning's ``MLFlowLogger`` (``self.log("loss")`` each step) |
             ``lineage.lightning.LineageCallback``

Each step is timed from the batch arriving to ``optimizer.step()`` returning (Lightning: from
``on_train_batch_start`` to ``on_train_batch_end``); the overhead is the median (and p99) of a
mode's steps minus its baseline's, and ``paired_overhead_median_us`` the median over rounds
of a mode's median minus its baseline's in the same round (the order of the modes is reversed
every other round, so a drift of the machine's load within a round falls on each mode alike).
``goal`` says whether an overhead is at most 1% of the baseline's step time or 20 µs. A
micro-benchmark times the watcher's own per-step work (the
optimizer hook and ``log(loss)``) over 20 000 calls. The table of what each mode recorded is
read back from the MLflow store. Writes ``benchmarks/results/pytorch_recording.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch

from benchmarks._results import write_result

ROWS = ("optimizer defaults", "lr per step", "data pipeline", "data sample", "fingerprint")


def _data() -> torch.utils.data.TensorDataset:
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    xt = torch.tensor(x / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)
    return torch.utils.data.TensorDataset(xt, torch.tensor(y, dtype=torch.long))


def _cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(32 * 64, 10),
    )


def _plain(mode: str, data: Any, epochs: int, uri: str) -> tuple[list[float], str | None]:
    import mlflow

    import lineage
    import lineage.pytorch

    model = _cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
    times: list[float] = []
    run_id = None
    watcher: Any = None
    if mode == "autolog":
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment("bench-autolog")
        mlflow.pytorch.autolog()
        run_id = mlflow.start_run().info.run_id
    elif mode == "lineage":
        run = lineage.start_run(experiment="bench-lineage", tracking_uri=uri)
        run_id = run.run_id
        watcher = lineage.pytorch.watch(model, opt, scheduler=sched, loader=loader)
    for epoch in range(1, epochs + 1):
        for x, y in loader:
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if watcher is not None:
                watcher.log(loss=loss)
            times.append(time.perf_counter() - t0)
        sched.step()
        if watcher is not None:
            watcher.epoch_end(epoch)
    if mode == "autolog":
        mlflow.end_run()
        mlflow.pytorch.autolog(disable=True)
    elif mode == "lineage":
        watcher.close()
        lineage.end_run()
    return times, run_id


def _lightning(mode: str, data: Any, epochs: int, uri: str) -> tuple[list[float], str | None]:
    import lightning as L

    from lineage.lightning import LineageCallback

    times: list[float] = []

    class Timer(L.Callback):
        def on_train_batch_start(self, *args: Any) -> None:
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, *args: Any) -> None:
            times.append(time.perf_counter() - self.t0)

    class Module(L.LightningModule):
        def __init__(self, lr: float = 0.05) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.net = _cnn()

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.net(x), y)
            if mode == "mlflowlogger":
                self.log("loss", loss)
            return loss

        def configure_optimizers(self) -> Any:
            opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
            return {"optimizer": opt, "lr_scheduler": sched}

    callbacks: list[Any] = [Timer()]
    logger: Any = False
    lineage_cb = None
    if mode == "mlflowlogger":
        from lightning.pytorch.loggers import MLFlowLogger

        logger = MLFlowLogger(experiment_name="bench-lightning-mlflow", tracking_uri=uri)
    elif mode == "lineage":
        os.environ["MLFLOW_TRACKING_URI"] = uri
        lineage_cb = LineageCallback(experiment="bench-lightning-lineage")
        callbacks.append(lineage_cb)
    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=logger,
        callbacks=callbacks,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Module(), torch.utils.data.DataLoader(data, batch_size=32, shuffle=True))
    run_id = logger.run_id if mode == "mlflowlogger" else None
    if lineage_cb is not None:
        run_id = lineage_cb.run.run_id
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    return times, run_id


def _coverage(uri: str, run_id: str | None, steps: int) -> dict[str, bool]:
    if run_id is None:
        return dict.fromkeys(ROWS, False)
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    params, tags = run.data.params, run.data.tags
    metrics = set(run.data.metrics)
    lr_keys = [k for k in metrics if k in ("lr", "learning_rate", "lr-SGD")]
    lr_points = max((len(client.get_metric_history(run_id, k)) for k in lr_keys), default=0)
    files: list[str] = []
    stack = [None]
    while stack:
        for f in client.list_artifacts(run_id, stack.pop()):
            (stack.append(f.path) if f.is_dir else files.append(f.path))
    return {
        # SGD's dampening and nesterov are defaults the script never set.
        "optimizer defaults": any(k.endswith("dampening") for k in params),
        # The cosine schedule changes the lr once an epoch: a value per change, or per step.
        "lr per step": lr_points >= 2,
        "data pipeline": any("pipeline" in f for f in files),
        "data sample": any("sample" in f for f in files),
        "fingerprint": any("fingerprint" in k for k in tags) or bool(run.inputs.dataset_inputs),
    }


def _micro(calls: int = 20_000) -> dict[str, float]:
    """The watcher's own work per step: the optimizer's post-step hook and ``log(loss)``."""
    import lineage
    import lineage.pytorch

    model = _cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss = torch.tensor(1.0)
    # In the scratch folder: a SQLite store keeps artifacts under ./mlruns.
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        run = lineage.start_run(experiment="micro", tracking_uri=f"sqlite:///{tmp}/m.db")
        w = lineage.pytorch.watch(model, opt, data_sample=False)
        hook = w._after_step
        t0 = time.perf_counter()
        for _ in range(calls):
            hook(opt, (), {})
            w.log(loss=loss)
        per_call = (time.perf_counter() - t0) / calls
        w.close()
        run.end()
    return {"watch_us_per_step": round(per_call * 1e6, 2)}


MODES = (
    "plain/none",
    "plain/autolog",
    "plain/lineage",
    "lightning/none",
    "lightning/mlflowlogger",
    "lightning/lineage",
)


def _one(key: str, epochs: int, uri: str, out: Path) -> None:
    """Train in one mode in this process and write its step times and coverage to ``out``."""
    torch.set_num_threads(1)
    group, mode = key.split("/")
    fn = _plain if group == "plain" else _lightning
    times, run_id = fn(mode, _data(), epochs, uri)
    cover = _coverage(uri, run_id, len(times)) if mode != "none" else None
    out.write_text(json.dumps({"times": times[1:], "coverage": cover}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--results-dir", type=Path, default=None)
    ap.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--uri", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _one(args.one, args.epochs, args.uri, args.out)
        return
    times: dict[str, list[float]] = {key: [] for key in MODES}
    round_medians: dict[str, list[float]] = {key: [] for key in MODES}
    coverage: dict[str, dict[str, bool]] = {}
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{tmp}/mlflow.db"
        for r in range(args.rounds):
            for key in MODES if r % 2 == 0 else tuple(reversed(MODES)):
                # Each mode in a fresh process: autologging patches outlive autolog(disable=True).
                out = Path(tmp) / "one.json"
                cmd = [sys.executable, str(Path(__file__).resolve()), "--one", key]
                cmd += ["--epochs", str(args.epochs), "--uri", uri, "--out", str(out)]
                # In the scratch folder: a SQLite store keeps artifacts under ./mlruns.
                subprocess.run(cmd, check=True, capture_output=True, cwd=tmp)
                result = json.loads(out.read_text())
                times[key].extend(result["times"])  # the first step (lazy set-up) left out
                round_medians[key].append(statistics.median(result["times"]))
                if result["coverage"] is not None:
                    coverage[key] = result["coverage"]
    figures: dict[str, Any] = {"load_average_at_start": load_at_start, "modes": {}}
    for key, values in times.items():
        baseline = key.split("/")[0] + "/none"
        base = times[baseline]
        med, p99 = statistics.median(values), float(np.percentile(values, 99))
        bmed, bp99 = statistics.median(base), float(np.percentile(base, 99))
        paired = statistics.median(
            m - b for m, b in zip(round_medians[key], round_medians[baseline], strict=True)
        )
        allowed = max(0.01 * bmed, 20e-6)
        figures["modes"][key] = {
            "steps": len(values),
            "median_ms": round(med * 1e3, 4),
            "p99_ms": round(p99 * 1e3, 4),
            "overhead_median_us": round((med - bmed) * 1e6, 1),
            "overhead_median_pct": round(100 * (med - bmed) / bmed, 2),
            "overhead_p99_us": round((p99 - bp99) * 1e6, 1),
            "paired_overhead_median_us": round(paired * 1e6, 1),
            # Each round's median step: how far the same mode moves between its processes.
            "round_medians_ms": [round(m * 1e3, 3) for m in round_medians[key]],
            "goal": {
                "median": med - bmed <= allowed,
                "p99": p99 - bp99 <= max(allowed, 0.01 * bp99),
            },
            "recorded": coverage.get(key),
        }
    figures["micro"] = _micro()
    print(f"{'mode':<24}{'median ms':>10}{'p99 ms':>9}{'+median µs':>12}{'+%':>7}{'+p99 µs':>10}")
    for key, f in figures["modes"].items():
        print(
            f"{key:<24}{f['median_ms']:>10.3f}{f['p99_ms']:>9.3f}"
            f"{f['overhead_median_us']:>12.1f}{f['overhead_median_pct']:>7.2f}"
            f"{f['overhead_p99_us']:>10.1f}"
        )
    print(f"\nwatch() per-step work: {figures['micro']['watch_us_per_step']} µs")
    print(f"\n{'recorded':<20}" + "".join(f"{k:>24}" for k in coverage))
    for row in ROWS:
        print(f"{row:<20}" + "".join(f"{'yes' if c[row] else 'no':>24}" for c in coverage.values()))
    path = write_result(
        "pytorch_recording",
        figures,
        store="sqlite",
        params={"epochs": args.epochs, "rounds": args.rounds, "batch_size": 32, "threads": 1},
        notes=(
            "modes interleaved per round, reversed every other round; overhead = median step "
            "time minus the baseline's; load_average_at_start and load_average (at the end) "
            "give the machine's load, shared with other work"
        ),
        results_dir=args.results_dir,
    )
    print(f"\nresult: {path}")


if __name__ == "__main__":
    main()
