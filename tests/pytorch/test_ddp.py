"""Trainings under ``torchrun`` with two CPU processes (gloo). A plain DDP loop written as the
guide says: one run, one report per epoch and one checkpoint per epoch, although both ranks
call ``watch``, ``epoch_end`` and ``save_checkpoint``. A pruned trial, in a plain loop and
in the Hugging Face Trainer: every rank stops at the epoch rank 0 was told to stop."""

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
dist.barrier()  # rank 0 ends its run in watch's exit: the ranks leave gloo together
print(f"done on rank {dist.get_rank()}", flush=True)
dist.destroy_process_group()
"""


PRUNED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import lineage.pytorch
from tuner import trial

dist.init_process_group("gloo")
torch.manual_seed(0)
x = torch.randn(64, 8)
data = torch.utils.data.TensorDataset(x, (x.sum(1) > 0).long())
sampler = torch.utils.data.distributed.DistributedSampler(data)
loader = torch.utils.data.DataLoader(data, batch_size=16, sampler=sampler)
model = DDP(torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with lineage.pytorch.watch(model, opt, trial=trial, experiment="ddp", data_sample=False) as w:
    for epoch in (1, 2, 3):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()  # an all-reduce
            opt.step()
        if w.epoch_end(epoch, val_accuracy=0.5):
            break
print(f"rank {dist.get_rank()} stopped after epoch {epoch}", flush=True)
dist.barrier()
print(f"done on rank {dist.get_rank()}", flush=True)
dist.destroy_process_group()
"""

PRUNED_TRAINER = """
import torch
import torch.distributed as dist
import transformers

from lineage.transformers import LineageCallback
from tuner import trial


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, 20, (n, 8), generator=g)
        self.labels = (self.ids == 5).any(1).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


config = transformers.BertConfig(
    vocab_size=20, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    intermediate_size=32, max_position_embeddings=16, num_labels=2,
)
torch.manual_seed(0)
args = transformers.TrainingArguments(
    output_dir="out", num_train_epochs=3, per_device_train_batch_size=16, eval_strategy="epoch",
    save_strategy="no", report_to=[], disable_tqdm=True, use_cpu=True,
)
trainer = transformers.Trainer(
    model=transformers.BertForSequenceClassification(config),
    args=args,
    train_dataset=Tokens(64, 0),
    eval_dataset=Tokens(32, 1),
    callbacks=[LineageCallback(trial=trial, monitor="val_loss", experiment="ddp",
                               data_sample=False)],
)
trainer.train()
print(f"rank {dist.get_rank()} stopped at step {trainer.state.global_step}", flush=True)
print(f"done on rank {dist.get_rank()}", flush=True)
"""

#: torch 2.13's gloo backend now and then aborts a rank as its process exits, after the
#: script's own work is done (a plain DDP script without this project does it too; the
#: PyTorch guide says so). Each script here prints ``done on rank N`` once its work is done:
#: a run where every rank printed it and one then aborted this way did all the tests read.
TEARDOWN_ABORT = "terminate called without an active exception"


def _finished(out: subprocess.CompletedProcess[str]) -> bool:
    if out.returncode == 0:
        return True
    done = all(f"done on rank {r}" in out.stdout.splitlines() for r in (0, 1))
    return done and TEARDOWN_ABORT in out.stdout + out.stderr


def _torchrun(
    python: str, script: str, repo_root: Path, tmp_path: Path, uri: str, **env_vars: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run ``script`` under torchrun with two CPU processes as a tuner trial would be run;
    its outcome and the reports its trial channel received."""
    path = tmp_path / "ddp.py"
    path.write_text(script)
    channel = tmp_path / protocol.CHANNEL_FILE
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(
        {
            protocol.TRACKING_URI: uri,
            protocol.CHANNEL: str(channel),
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(repo_root),
            **env_vars,
        }
    )
    cmd = [python, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(path)]
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert _finished(out), out.stdout[-2000:] + out.stderr[-3000:]
    lines = channel.read_text().splitlines() if channel.exists() else []
    return out, [json.loads(line) for line in lines]


def _one_run(uri: str) -> str:
    from lineage.store import open_store

    store = open_store(uri)
    ids = [e.experiment_id for e in store.resolve_experiments(["ddp"])]
    runs = list(store.runs(ids))
    assert len(runs) == 1, runs
    return runs[0].run_id


#: The guide's other form: the script's own run, started on rank 0 only.
OWN_RUN = SCRIPT.replace(
    "import lineage.pytorch\n", "import contextlib, os\nimport lineage\nimport lineage.pytorch\n"
).replace(
    "with lineage.pytorch.watch(",
    'rank0 = os.environ.get("RANK", "0") == "0"\n'
    'with lineage.start_run(experiment="ddp") if rank0 else contextlib.nullcontext(), '
    "lineage.pytorch.watch(",
)


@pytest.mark.parametrize("script", [SCRIPT, OWN_RUN], ids=["watch-starts", "rank-0-starts"])
def test_torchrun_two_processes_record_one_run_and_report_once(
    script: str, python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str, read_run: Any
) -> None:
    assert script is SCRIPT or "lineage.start_run(" in script
    ckpt = {checkpoints.CHECKPOINT_DIR: str(tmp_path / "ckpt")}
    _, reports = _torchrun(python, script, repo_root, tmp_path, sqlite_uri, **ckpt)
    assert len(reports) == 2, reports
    view = read_run(sqlite_uri, _one_run(sqlite_uri))
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


@pytest.mark.parametrize("script", [PRUNED, PRUNED_TRAINER], ids=["loop", "trainer"])
def test_a_pruned_trial_stops_every_rank_at_rank_zeros_epoch(
    script: str, python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str, read_run: Any
) -> None:
    # The controller's decision, as it writes it: the control file exists. Only rank 0 asks.
    control = tmp_path / protocol.CONTROL_FILE
    control.touch()
    out, reports = _torchrun(
        python, script, repo_root, tmp_path, sqlite_uri, **{protocol.CONTROL: str(control)}
    )
    stops = sorted(line for line in out.stdout.splitlines() if line.startswith("rank "))
    if script is PRUNED:
        assert stops == ["rank 0 stopped after epoch 1", "rank 1 stopped after epoch 1"]
    else:  # 64 sequences, 16 per device on 2 ranks: 2 steps an epoch
        assert stops == ["rank 0 stopped at step 2", "rank 1 stopped at step 2"]
    assert [r["step"] for r in reports] == [1]
    view = read_run(sqlite_uri, _one_run(sqlite_uri))
    assert view.tags["lineage.pruned_at"] == "1"
    assert view.record.status == "FINISHED"
