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
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_torchrun_runs_a_trial_over_two_processes(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    import torch  # noqa: F401  (the pytorch extra: a missing one fails)

    config = campaign(
        TORCH,
        command=[
            sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "{nproc}",
            "--master-addr", "127.0.0.1", "--master-port", "{port}", "trial.py", "--x", "{x}",
        ],
        budget={"trials": 1},
        resources={"kind": "cpu", "parallel": 1, "per_trial": 2},
        # As the PyTorch guide advises: gloo now and then aborts a rank as it exits.
        trial={"retries": 1},
    )  # fmt: skip
    result = run_campaign(config)
    assert result.counts["COMPLETE"] == 1
    (only,) = [t for t in trials_of(config) if t.state.name == "COMPLETE"]
    x = only.params["x"]
    # all_reduce summed x*1 + x*2 over the two ranks; one report per step (rank 0's).
    assert only.intermediate_values == {s: pytest.approx(3 * x + s) for s in range(2)}


#: Data-parallel MindSpore on CPU under msrun: each rank trains on its half of the rows,
#: records through `LineageCallback`, checkpoints through `TrialCheckpoint` and reports its
#: loss (plus 100 per rank, so another rank's report would show). msrun also runs the script
#: in its scheduler process up to `init` (``MS_ROLE=MS_SCHED``, ``RANK_ID=0``): its report of
#: ``sched`` must not count. After training, each rank says so in a file and holds its slot
#: until the tuner stops it.
MINDSPORE = """
import os, sys, time
import numpy as np
from tuner import trial
trial.report(0, sched=float(os.environ.get("MS_ROLE") == "MS_SCHED"))
import mindspore as ms
from mindspore import dataset as mds, nn
from mindspore.communication import get_group_size, get_rank, init
from mindspore.train import Callback, Model
from lineage.mindspore import LineageCallback, TrialCheckpoint, restore_checkpoint
ms.set_device("CPU")
ms.set_context(mode=ms.GRAPH_MODE)
init()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
ms.set_seed(0)
rank, lr = get_rank(), float(sys.argv[sys.argv.index("--lr") + 1])
rng = np.random.default_rng(0)
x = rng.normal(size=(32, 8)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int32)
data = mds.NumpySlicesDataset(
    {"x": x, "y": y}, shuffle=False, num_shards=get_group_size(), shard_id=rank
).batch(8)
net = nn.Dense(8, 2)
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), lr, 0.9))

class Report(Callback):
    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        trial.report(cb.cur_epoch_num, loss=float(cb.net_outputs.asnumpy()) + 100 * rank)

start = restore_checkpoint(model.train_network)
callbacks = [LineageCallback(data_sample=False), TrialCheckpoint(model.train_network), Report()]
model.train(3, data, callbacks=callbacks, dataset_sink_mode=False, initial_epoch=start)
open(f"trained-{rank}", "w").close()
while True:
    time.sleep(0.1)
"""


@pytest.mark.slow
@pytest.mark.mindspore
def test_msrun_runs_a_mindspore_trial_over_two_processes_and_sigterm_stops_every_rank(
    campaign: Any, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import time

    import mindspore  # noqa: F401  (the mindspore extra: a missing one fails)
    from mlflow.tracking import MlflowClient

    from lineage import checkpoints
    from tuner.executors._procs import attempt_processes

    config = campaign(
        MINDSPORE,
        command=[
            sys.executable, "-m", "mindspore.parallel.cluster.run", "--worker_num", "{nproc}",
            "--local_worker_num", "{nproc}", "--master_addr", "127.0.0.1",
            "--master_port", "{port}", "--join", "True", "--log_dir", "msrun-logs",
            "--cluster_time_out", "120", "trial.py", "--lr", "{x}",
        ],
        parameters={"x": {"type": "float", "low": 0.01, "high": 0.1}},
        budget={"trials": 1},
        resources={"kind": "cpu", "parallel": 1, "per_trial": 2},
        # msrun starts each rank as `python` from PATH: this interpreter's.
        env={"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "GLOG_v": "3"},
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    log = open(tmp_path / "controller.log", "wb")  # noqa: SIM115 - closed below
    controller = subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "run", "campaign.yaml"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while not all((tmp_path / f"trained-{r}").exists() for r in (0, 1)):
        assert controller.poll() is None, (tmp_path / "controller.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "the two ranks did not finish training"
        time.sleep(0.2)
    (only,) = trials_of(config)
    channel = only.user_attrs["tuner.launch"]["channel"]
    assert len(attempt_processes(channel)) >= 4  # msrun, its scheduler, the two ranks
    controller.send_signal(signal.SIGTERM)
    assert controller.wait(120) is not None
    log.close()
    # msrun starts each rank in a session of its own; the stop reached them all the same.
    assert attempt_processes(channel) == []

    only = trials_of(config)[0]  # (interrupted: a copy waits for `tuner resume`)
    values = only.intermediate_values
    assert sorted(values) == [1, 2, 3] and all(v < 100 for v in values.values())  # rank 0's
    client = MlflowClient(tracking_uri=config.tracking_uri())
    run_id = only.user_attrs["tuner.launch"]["run_id"]
    assert [m.value for m in client.get_metric_history(run_id, "sched")] == [0.0]
    # LineageCallback recorded from rank 0 only: one value per epoch, rank 0's parameters.
    run = client.get_run(run_id)
    assert run.data.params["device.rank"] == "0"
    epochs = [m.step for m in client.get_metric_history(run_id, "train_loss")]
    assert sorted(epochs) == sorted(set(epochs)) and len(epochs) == 3
    saved = checkpoints.latest_good(tmp_path / ".tuner" / "t" / "checkpoints" / "trial-0")
    assert saved is not None and saved.step == 3
