"""A trial launched over several processes: ``{nproc}``, ``{devices}`` and ``{port}`` in the
command, every rank gets the same parameters, and only rank 0 reports. Real subprocess trials
(a tiny launcher that ranks its children like torchrun; then torchrun itself with gloo), a
real MLflow SQLite store, Optuna on SQLite."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tuner.conftest import trials_of

#: Starts ``nproc`` copies of the rank script with RANK set, as torchrun does.
LAUNCHER = """
import json, os, subprocess, sys
nproc, port, devices = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open("launch.json", "w") as fh:
    json.dump({"nproc": nproc, "port": port, "devices": devices}, fh)
procs = [
    subprocess.Popen([sys.executable, "rank.py", *sys.argv[4:]], env={**os.environ, "RANK": str(r)})
    for r in range(nproc)
]
sys.exit(max(p.wait() for p in procs))
"""

#: Each rank reports its own loss; only rank 0's may reach the study.
RANK = """
import os, sys
from tuner import trial
rank, x = int(os.environ["RANK"]), float(sys.argv[2])
for step in range(3):
    trial.report(step, loss=x + step + 100.0 * rank)
"""


def test_placeholders_fill_a_launch_over_the_trials_devices_and_only_rank_0_reports(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    (tmp_path / "rank.py").write_text(RANK)
    config = campaign(
        LAUNCHER,
        command=[sys.executable, "trial.py", "{nproc}", "{port}", "{devices}", "--x", "{x}"],
        budget={"trials": 1},
        resources={"kind": "cpu", "parallel": 1, "per_trial": 2},
    )
    result = run_campaign(config)
    assert result.counts["COMPLETE"] == 1
    launch = json.loads((tmp_path / "launch.json").read_text())
    assert launch["nproc"] == 2 and launch["devices"] == "0,1"
    assert 0 < int(launch["port"]) < 65536
    (only,) = trials_of(config)
    x = only.params["x"]
    assert only.intermediate_values == {s: pytest.approx(x + s) for s in range(3)}


#: Two ranks under torchrun (gloo on CPU): they average x, rank 0 reports.
TORCH = """
import argparse, os
import torch
import torch.distributed as dist
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
dist.init_process_group("gloo")
value = torch.tensor([x * (dist.get_rank() + 1)])
dist.all_reduce(value)
for step in range(2):
    trial.report(step, loss=float(value) + step, world=float(dist.get_world_size()))
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_torchrun_runs_a_trial_over_two_processes(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    config = campaign(
        TORCH,
        command=[
            sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "{nproc}",
            "--master-addr", "127.0.0.1", "--master-port", "{port}", "trial.py", "--x", "{x}",
        ],
        budget={"trials": 1},
        resources={"kind": "cpu", "parallel": 1, "per_trial": 2},
    )  # fmt: skip
    result = run_campaign(config)
    assert result.counts["COMPLETE"] == 1
    (only,) = trials_of(config)
    x = only.params["x"]
    # all_reduce summed x*1 + x*2 over the two ranks; one report per step (rank 0's).
    assert only.intermediate_values == {s: pytest.approx(3 * x + s) for s in range(2)}
