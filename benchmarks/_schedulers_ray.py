"""Ray Tune's arms of ``bench_schedulers.py``: ASHAScheduler and PopulationBasedTraining.

Run as a script, one campaign per process (``python _schedulers_ray.py ARM SEED OPTS_JSON``),
so every campaign starts its own local Ray (2 CPUs; Ray 2.60 no longer has ``local_mode``)
and the parent can read the campaign's CPU time from its own ``RUSAGE_CHILDREN``. The
training is ``_schedulers_train.Training``, the same network, data and epoch the tuner's arms
run, and it logs its epochs to the same counter; the campaign stops once the counter holds
the epoch budget.

- ``ray-asha``: ``ASHAScheduler`` (stops, never promotes) with ``OptunaSearch`` (TPE, seeded)
  over the tuner's search space; rungs at ``min_resource`` x 3^k epochs up to the maximum.
- ``ray-pbt``: ``PopulationBasedTraining`` (asynchronous, Ray's default), ``population``
  members sampled at random from the space, all running at once on 2 / ``population`` CPUs
  each (Ray's synchronous mode, which would time-share two CPUs among the members, stalled
  here after the first exploit); the bottom quantile copies a top-quantile member's
  checkpoint and perturbs ``lr``, ``momentum``, ``weight_decay``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _schedulers_train import Training, read_counter

HERE = Path(__file__).resolve().parent


def _space(tune: Any) -> dict[str, Any]:
    return {
        "lr": tune.loguniform(1e-4, 1.0),
        "momentum": tune.uniform(0.0, 0.99),
        "weight_decay": tune.loguniform(1e-6, 0.1),
        "hidden": tune.lograndint(8, 257),
    }


def _trainable(opts: dict[str, Any], checkpoints: bool) -> Any:
    import torch
    from ray import tune

    def train(config: dict[str, Any]) -> None:
        seed = zlib.crc32(json.dumps(config, sort_keys=True).encode())
        training = Training(config, seed=seed)
        start = tune.get_checkpoint()
        if start is not None:
            with start.as_directory() as folder:
                training.load(torch.load(Path(folder) / "state.pt", weights_only=False))
            training.set_params(config)
        while training.epoch < opts["max_epochs"]:
            accuracy = training.train_epoch()
            metrics = {"val_accuracy": accuracy, "epoch": training.epoch}
            if not checkpoints:
                tune.report(metrics)
                continue
            with tempfile.TemporaryDirectory() as folder:
                torch.save(training.state(), Path(folder) / "state.pt")
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))

    return train


def _scheduler(arm: str, opts: dict[str, Any], tune: Any) -> Any:
    from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining

    if arm == "ray-asha":
        return ASHAScheduler(
            time_attr="epoch",
            max_t=opts["max_epochs"],
            grace_period=opts["min_resource"],
            reduction_factor=3,
        )
    return PopulationBasedTraining(
        time_attr="epoch",
        perturbation_interval=opts["interval"],
        quantile_fraction=0.25,
        hyperparam_mutations={k: v for k, v in _space(tune).items() if k != "hidden"},
    )


def run(arm: str, seed: int, opts: dict[str, Any]) -> None:
    import ray
    from ray import tune
    from ray.tune.search.optuna import OptunaSearch

    counter = Path(os.environ["BENCH_COUNTER"])

    class Budget(tune.Stopper):
        """Stops every trial once the counter holds the epoch budget."""

        def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
            return bool(result["epoch"] >= opts["max_epochs"])

        def stop_all(self) -> bool:
            return len(read_counter(counter)) >= opts["budget"]

    warnings.filterwarnings("ignore")
    random.seed(seed)  # PBT's sampling, exploit choices and perturbations
    np.random.seed(seed)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    pbt = arm == "ray-pbt"
    search = None if pbt else OptunaSearch(seed=seed)
    trainable = _trainable(opts, checkpoints=pbt)
    if pbt:
        trainable = tune.with_resources(trainable, {"cpu": 2 / opts["population"]})
    tuner = tune.Tuner(
        trainable,
        param_space=_space(tune),
        tune_config=tune.TuneConfig(
            metric="val_accuracy",
            mode="max",
            scheduler=_scheduler(arm, opts, tune),
            search_alg=search,
            num_samples=opts["population"] if pbt else opts["budget"],
            max_concurrent_trials=None if pbt else 2,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(
            storage_path=str(counter.parent / "ray"),
            stop=Budget(),
            verbose=0,
            # Every checkpoint is kept: PBT may exploit any member's latest one.
            checkpoint_config=tune.CheckpointConfig(num_to_keep=None),
        ),
    )
    tuner.fit()
    ray.shutdown()


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]))
