"""The GPU check's campaigns: one small real PyTorch training, 8 trials on one GPU, run at
``resources.per_trial: auto`` and at ``per_trial: 1``; prints and records how many trials ran
at once, each trial's peak device memory (as the tuner measured it through ``nvidia-smi``) and
the two wall times. Run through ``benchmarks/gpu_check.sh``.

    python benchmarks/_gpu_check.py [--trials 8] [--device cuda] [--results-dir DIR]

``--device cpu`` runs the same campaigns with the training on the CPU: it checks this script's
own workings on a machine without a GPU (nothing is measured then, so ``auto`` runs one trial
at a time) and writes its result file only where ``--results-dir`` says.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_result

from lineage.trials import PLACEMENT_ATTR

#: A small MLP on synthetic data made in the script (no download): ~20 MB of weights and
#: activations at batch 512, a few seconds per trial on a GPU.
TRAIN = """
import argparse, os, time
import torch
from tuner import trial
ap = argparse.ArgumentParser()
ap.add_argument("--lr", type=float); ap.add_argument("--batch", type=int)
ap.add_argument("--width", type=int); ap.add_argument("--device")
a = ap.parse_args()
torch.manual_seed(0)
device = torch.device(a.device)
x = torch.randn(20000, 256, device=device)
w_true = torch.randn(256, 10, device=device)
y = (x @ w_true).argmax(dim=1)
model = torch.nn.Sequential(
    torch.nn.Linear(256, a.width), torch.nn.ReLU(), torch.nn.Linear(a.width, a.width),
    torch.nn.ReLU(), torch.nn.Linear(a.width, 10),
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
for epoch in range(EPOCHS):
    perm = torch.randperm(len(x), device=device)
    for i in range(0, len(x), a.batch):
        idx = perm[i : i + a.batch]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward(); opt.step()
    with torch.no_grad():
        acc = (model(x).argmax(dim=1) == y).float().mean().item()
    trial.report(epoch, loss=loss.item(), accuracy=acc)
"""


def _config(folder: Path, per_trial: Any, trials: int, device: str) -> Path:
    import yaml

    name = f"gpu-check-{per_trial}"
    command = [sys.executable, "train.py", "--lr", "{lr}", "--batch", "{batch}"]
    command += ["--width", "{width}", "--device", device]
    resources: dict[str, Any] = {"kind": "gpu", "devices": [0], "per_trial": per_trial}
    if per_trial == "auto":
        resources["memory_params"] = ["batch", "width"]
    if device != "cuda":  # the script's own check: CPU slots, one trial at a time
        resources = {"kind": "cpu", "parallel": 1}
    data = {
        "name": name,
        "command": command,
        "target": {"metric": "accuracy", "goal": "maximize"},
        "parameters": {
            "lr": {"type": "float", "low": 1e-3, "high": 0.3, "log": True},
            "batch": {"type": "categorical", "choices": [256, 512]},
            "width": {"type": "categorical", "choices": [256, 512]},
        },
        "budget": {"trials": trials},
        "sampler": {"name": "random", "seed": 1},
        "pruner": {"name": "none"},
        "diagnosis": {"early_stop": False},
        "resources": resources,
        "lineage": {"tracking_uri": f"sqlite:///{folder / 'mlflow.db'}"},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _campaign(folder: Path, per_trial: Any, trials: int, device: str) -> dict[str, Any]:
    import optuna

    from tuner.config import load_config

    path = _config(folder, per_trial, trials, device)
    start = time.monotonic()
    done = subprocess.run(["tuner", "run", str(path), "--quiet"], cwd=folder, check=False)
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"tuner run {path.name} exited with {done.returncode}")
    config = load_config(path)
    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    placed = [t.user_attrs.get(PLACEMENT_ATTR) or {} for t in study.get_trials()]
    spans = sorted((p["started"], p["started"] + p["duration"]) for p in placed if p)
    at_once = max(sum(1 for a, b in spans if a <= s < b) for s, _ in spans) if spans else 0
    return {
        "per_trial": per_trial,
        "wall_s": round(wall, 1),
        "most_at_once": at_once,
        "neighbours": [p.get("neighbours") for p in placed],
        "peak_memory_mib": [p.get("peak_memory_mib") for p in placed],
        "trials": len(placed),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        folder = Path(tmp)
        (folder / "train.py").write_text(TRAIN.replace("EPOCHS", str(args.epochs)))
        runs = [_campaign(folder, p, args.trials, args.device) for p in ("auto", 1)]
    for run in runs:
        print(
            f"per_trial: {run['per_trial']}: {run['trials']} trials in {run['wall_s']} s, "
            f"at most {run['most_at_once']} at once; peak MiB per trial: "
            + ", ".join("-" if m is None else f"{m:.0f}" for m in run["peak_memory_mib"])
        )
    auto, whole = runs
    speedup = round(whole["wall_s"] / auto["wall_s"], 2) if auto["wall_s"] else None
    print(f"wall time per_trial: 1 / per_trial: auto = {speedup}")
    if args.device == "cuda" or args.results_dir is not None:
        try:
            listing = subprocess.run(
                ["nvidia-smi", "-L"], capture_output=True, text=True, check=False
            ).stdout.strip()
        except OSError:
            listing = ""
        path = write_result(
            "gpu_check",
            {"auto": auto, "whole": whole, "speedup": speedup},
            store="sqlite",
            params={"trials": args.trials, "epochs": args.epochs, "device": args.device},
            notes=listing or "no GPU: nvidia-smi -L gave nothing",
            results_dir=args.results_dir,
        )
        print(f"result: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
