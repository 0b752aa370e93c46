"""Screenshots of a MindSpore run's data sample and data graph in the MLflow UI (headless Chromium).

What a user opens after a recorded MindSpore training, checked in a real browser:

1. ``data-sample.png``: the run's artifact ``dataset/train_sample.png``, the first batch as
   the network received it (scikit-learn's digits as 8x8 images, denormalised from the
   pipeline's ``Normalize``, each label underneath);
2. ``data-graph.png``: ``dataset/train_pipeline.png``, the pipeline drawn one box per
   operation, beside ``dataset/train_pipeline.json`` in the artifact tree;
3. ``data-sample-json.png``: ``dataset/train_sample.json``, the per-column statistics.

It trains one epoch of a 64-10 classifier with ``Model.fit`` and ``LineageCallback`` on the
digits through ``GeneratorDataset`` -> ``Rescale(1/255)`` -> ``Normalize`` -> ``HWC2CHW``
into a fresh SQLite lineage store, starts ``lineage ui`` on it, and calls
``chromium --headless --screenshot`` for each page (helpers shared with
``scripts/ui_screenshots.py``). Open the PNGs and look at them. Exit 1 when a check fails
(an artifact missing, a screenshot not written), 2 without chromium.

Run from the repository root: ``python scripts/ui_data_screenshots.py [--out DIR] [--store DIR]``
(default ``ui-screenshots/``, ignored by git). Needs Debian's ``chromium`` and the
``mindspore`` extra; takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ui_screenshots import ROOT, start_ui, stop

EXPERIMENT = "ui-data-check"
ARTIFACTS = (
    "dataset/train_sample.png",
    "dataset/train_pipeline.png",
    "dataset/train_pipeline.json",
    "dataset/train_sample.json",
)


class Digits:
    """Random-access source: (8x8x1 uint8 image, 0-d int32 label)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = images, labels

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.images[i], np.asarray(self.labels[i], dtype=np.int32)

    def __len__(self) -> int:
        return len(self.images)


def train(uri: str) -> str:
    """One recorded epoch on the digits as images; returns the run id."""
    import mindspore as ms
    from mindspore import dataset as mds
    from mindspore import nn
    from mindspore.dataset import vision
    from mindspore.train import Accuracy, Model
    from sklearn.datasets import load_digits

    import lineage
    from lineage.mindspore import LineageCallback

    ms.set_device("CPU")
    ms.set_seed(0)
    digits = load_digits()
    pixels = np.round(digits.images * 255 / 16).astype(np.uint8)[..., None]
    labels = digits.target.astype(np.int32)

    def pipeline(sl: slice, shuffle: bool) -> Any:
        ds = mds.GeneratorDataset(
            Digits(pixels[sl], labels[sl]), ["image", "label"], shuffle=shuffle
        )
        ops = [
            vision.Rescale(1.0 / 255.0, 0.0),
            vision.Normalize(mean=[0.5], std=[0.5]),
            vision.HWC2CHW(),
        ]
        return ds.map(ops, input_columns="image").batch(32)

    net = nn.SequentialCell(nn.Flatten(), nn.Dense(64, 10))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(net, loss, opt, metrics={"accuracy": Accuracy()})
    with lineage.start_run(experiment=EXPERIMENT, tracking_uri=uri) as run:
        model.fit(
            1,
            pipeline(slice(0, 1400), True),
            pipeline(slice(1400, None), False),
            callbacks=[LineageCallback()],
        )
    return str(run.run_id)


def screenshot(chromium: str, url: str, png: Path, profile: Path) -> None:
    """As ``ui_screenshots.screenshot``, in a taller window (a whole grid and the artifact
    tree fit) with more time for the single-page app to list the artifacts."""
    png.unlink(missing_ok=True)
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            "--window-size=1500,1250",
            "--virtual-time-budget=30000",
            url,
        ],
        check=False,
        capture_output=True,
        timeout=240,
    )
    if not png.exists() or png.stat().st_size < 5000:
        raise SystemExit(f"no screenshot of {url} was written to {png}")


def find_run(uri: str) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    if exp is None:
        raise SystemExit(f"no experiment {EXPERIMENT!r} in the store")
    (run,) = client.search_runs([exp.experiment_id], max_results=1)
    listed = {f.path for f in client.list_artifacts(run.info.run_id, "dataset")}
    return {
        "experiment": exp.experiment_id,
        "run": run.info.run_id,
        "artifacts": sorted(listed),
        "columns": json.loads(run.data.tags.get("lineage.data.train.columns", "{}")),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "ui-screenshots")
    ap.add_argument("--store", type=Path, help="work folder (default: a temporary one)")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("ui_data_screenshots: chromium is not installed (apt-get install chromium)")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.store or Path(tempfile.mkdtemp(prefix="ui-data-check-"))
    work.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{work / 'mlflow.db'}"
    if not (work / "mlflow.db").exists():
        import os

        os.chdir(work)  # the run's artifacts go to ./mlruns of the store's folder
        train(uri)
    found = find_run(uri)
    problems = [f"artifact {a} missing" for a in ARTIFACTS if a not in found["artifacts"]]
    if found["columns"].get("image", {}).get("kind") != "image":
        problems.append("the image column was not recognised as images")
    proc, url = start_ui(uri, work)
    run_page = f"{url}/#/experiments/{found['experiment']}/runs/{found['run']}"
    view = "?workflowType=machine_learning"
    pages = {
        "data-sample.png": f"{run_page}/artifacts/dataset/train_sample.png{view}",
        "data-graph.png": f"{run_page}/artifacts/dataset/train_pipeline.png{view}",
        "data-sample-json.png": f"{run_page}/artifacts/dataset/train_sample.json{view}",
    }
    try:
        with tempfile.TemporaryDirectory() as profile:
            # The first page a fresh profile opens shows the artifact tree's folders empty:
            # open the run once before the pages that are kept.
            screenshot(chromium, f"{run_page}{view}", Path(profile) / "warm-up.png", Path(profile))
            for name, page in pages.items():
                screenshot(chromium, page, args.out / name, Path(profile))
                print(f"{args.out / name}  <- {page}")
    finally:
        stop(proc)
    (args.out / "data-run.json").write_text(json.dumps(found, indent=2))
    for line in problems:
        print(f"ui_data_screenshots: {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
