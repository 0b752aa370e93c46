"""A plain DDP loop under ``torchrun`` with two CPU processes (gloo): one run, one report per
epoch and one checkpoint per epoch, although both ranks call ``watch``, ``epoch_end`` and
``save_checkpoint``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch  # noqa: F401  (a missing pytorch extra fails here, not skips)

from lineage import checkpoints
from tuner import _protocol as protocol

pytestmark = [pytest.mark.slow]

SCRIPT = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import lineage.pytorch
from tuner import trial

dist.init_process_group("gloo")
torch.manual_seed(0)
x = torch.randn(128, 8)
data = torch.utils.data.TensorDataset(x, (x.sum(1) > 0).long())
sampler = torch.utils.data.distributed.DistributedSampler(data)
loader = torch.utils.data.DataLoader(data, batch_size=16, sampler=sampler)
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with lineage.pytorch.watch(model, opt, loader=loader, trial=trial, experiment="ddp") as w:
    for epoch in (1, 2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            w.log(loss=loss)
        w.epoch_end(epoch, val_accuracy=0.5)
        lineage.pytorch.save_checkpoint(epoch, model, opt, watcher=w)  # rank 0 writes
dist.destroy_process_group()
"""


def test_torchrun_two_processes_record_one_run_and_report_once(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str, read_run: Any
) -> None:
    from lineage.store import open_store

    script = tmp_path / "ddp.py"
    script.write_text(SCRIPT)
    channel = tmp_path / protocol.CHANNEL_FILE
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(
        {
            protocol.TRACKING_URI: sqlite_uri,
            protocol.CHANNEL: str(channel),
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(repo_root),
            checkpoints.CHECKPOINT_DIR: str(tmp_path / "ckpt"),
        }
    )
    cmd = [python, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(script)]
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    reports = [json.loads(line) for line in channel.read_text().splitlines()]
    assert len(reports) == 2, reports
    store = open_store(sqlite_uri)
    ids = [e.experiment_id for e in store.resolve_experiments(["ddp"])]
    runs = list(store.runs(ids))
    assert len(runs) == 1
    view = read_run(sqlite_uri, runs[0].run_id)
    assert view.values["device.rank"] == 0
    assert view.values["network.name"] == "DistributedDataParallel"
    # Each rank takes 4 of the 8 batches per epoch; rank 0 alone logs its 8 steps.
    assert [s for s, _ in view.series("loss")] == list(range(1, 9))
    # One checkpoint per epoch, written and committed by rank 0 only.
    saved = checkpoints.latest_good(tmp_path / "ckpt")
    assert saved is not None and saved.step == 2
    assert sorted(p.name for p in saved.path.iterdir()) == sorted(
        [checkpoints.MANIFEST, "pytorch.pt"]
    )
