"""Trial start-up, cold processes against warm parents (``trial.preload``) and against the
stock tools' answers, in one run.

1. Per-trial overhead on the quickstart's MindSpore training (``examples/mindspore_digits``,
   one epoch, recording through lineage): trials one after another on one slot; overhead is
   a trial's wall time minus the training loop's own time (the ``trained N epoch(s) in S s``
   line the script prints). Four ways: the tuner's local executor cold and warm, Optuna's
   in-process ``study.optimize`` (the same ``main()`` called in this process), and Ray Tune
   with ``reuse_actors=True`` (the same ``main()`` in a reused actor; wall time from Tune's
   trial start to its completion). A tool that cannot run here is recorded with the reason.
2. The quickstart campaign's wall time (``tuner run`` on ``configs/quickstart.yaml`` with a
   smaller trial budget), with ``trial.preload: false`` and with the default, and where the
   warm campaign's time goes: set-up until the first trial's process starts, the trials,
   and the end after the last one (the closing analysis and links).
3. Campaign efficiency with 0.5 s trials at parallel 2 (the measure of
   ``bench_tuner.py``: ideal = trials / 2 x (0.5 s + bare interpreter start), efficiency =
   ideal / wall time), cold and warm, with where the rest goes: set-up before the first trial
   starts, each slot's idle time between one trial's end and the next one's start, each
   trial's own time beyond its 0.5 s, and the end after the last trial.

    python benchmarks/bench_startup.py [--trials 4] [--campaign-trials 6]
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

from tuner.executors import TrialSpec
from tuner.executors._devices import make_slots
from tuner.executors._local import LocalExecutor

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "mindspore_digits" / "train.py"
_TRAINED = re.compile(r"trained \d+ epoch\(s\) in ([0-9.]+)s")


def per_trial(preload: bool, trials: int, workdir: Path) -> dict[str, float]:
    """The tuner's local executor, one slot, trials one after another; wall time is the
    trial process's, as the executor measures it."""
    executor = LocalExecutor(
        make_slots("cpu", "auto", 1, 1), run_dir=workdir / "trials", preload=preload
    )
    walls: list[float] = []
    trained: list[float] = []
    env = {**_TRAIN_ENV, "MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'mlflow.db'}"}
    try:
        for number in range(trials):
            argv = [sys.executable, str(TRAIN), *_train_argv(number)]
            spec = TrialSpec(
                number=number, attempt=1, params={}, argv=argv, env=env, grace_period=5
            )
            handle = executor.submit(spec)
            while (outcome := handle.poll()) is None:
                executor.wait(0.05)
            if outcome.exit_code != 0 or outcome.duration is None:
                raise SystemExit(f"trial {number} failed: {outcome.stderr_tail[-2000:]}")
            walls.append(outcome.duration)
            trained.append(_trained(outcome.stdout_tail))
    finally:
        executor.shutdown()
    return _summary(walls, trained)


def campaign(preload: bool, trials: int, workdir: Path) -> dict[str, float]:
    config: dict[str, Any] = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    config["workdir"] = str(ROOT)
    config["budget"]["trials"] = trials
    config["trial"]["preload"] = preload
    config["lineage"] = {"tracking_uri": f"sqlite:///{workdir / 'mlflow.db'}"}
    path = workdir / "quickstart.yaml"
    path.write_text(yaml.safe_dump(config))
    t0 = time.time()
    subprocess.run(
        [sys.executable, "-m", "tuner.cli", "run", str(path)],
        cwd=workdir,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.time() - t0
    runs = _trial_runs(workdir)
    first = min(r[1] for r in runs)
    last = max(r[2] for r in runs)
    return {
        "wall_s": round(wall, 1),
        "until_first_trial_starts_s": round(first - t0, 1),
        "trials_s": round(last - first, 1),
        "after_last_trial_ends_s": round(t0 + wall - last, 1),
    }


def _trial_runs(workdir: Path) -> list[tuple[str, float, float]]:
    """``(device, start, end)`` of every trial's process, as its MLflow run records them."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{workdir / 'mlflow.db'}")
    ids = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(ids, "tags.`lineage.run_type` = 'trial'", max_results=10_000)
    return [
        (r.data.tags.get("tuner.device", ""), r.info.start_time / 1e3, r.info.end_time / 1e3)
        for r in runs
        if r.info.end_time
    ]


def _trained(text: str) -> float:
    match = _TRAINED.search(text)
    if match is None:
        raise SystemExit(f"the training printed no time: {text[-2000:]}")
    return float(match.group(1))


def _summary(walls: list[float], trained: list[float]) -> dict[str, float]:
    # The first trial also pays the one-time start (a warm parent's imports, an actor's).
    overheads = [w - t for w, t in zip(walls, trained, strict=True)]
    return {
        "first_trial_wall_s": round(walls[0], 2),
        "median_wall_s": round(statistics.median(walls[1:]), 2),
        "median_overhead_s": round(statistics.median(overheads[1:]), 2),
    }


_TRAIN_ENV = {"OMP_NUM_THREADS": "1", "GLOG_v": "3"}


def _train_argv(number: int) -> list[str]:
    return ["--epochs", "1", "--seed", str(number)]


def _load_train() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("mindspore_digits_train", TRAIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def optuna_in_process(trials: int, workdir: Path) -> dict[str, Any]:
    """Optuna's ``study.optimize``: every trial calls the script's ``main()`` in this process
    (no start-up after the first, no isolation between trials)."""
    import contextlib
    import io

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    os.environ.update(_TRAIN_ENV, MLFLOW_TRACKING_URI=f"sqlite:///{workdir / 'mlflow.db'}")
    walls: list[float] = []
    trained: list[float] = []
    study = optuna.create_study(storage=f"sqlite:///{workdir / 'optuna.db'}")

    def objective(trial: optuna.Trial) -> float:
        started = time.perf_counter()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            _load_train().main(_train_argv(trial.number))
        walls.append(time.perf_counter() - started)
        trained.append(_trained(out.getvalue()))
        return trained[-1]

    study.optimize(objective, n_trials=trials)
    return _summary(walls, trained)


def _tune_trainable(config: dict[str, Any]) -> None:
    import contextlib
    import io

    from ray import tune

    os.chdir(config["workdir"])  # MLflow puts a new experiment's artifacts under ./mlruns
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _load_train().main(_train_argv(int(config["number"])))
    tune.report({"trained_s": _trained(out.getvalue())})


def ray_tune_reuse(trials: int, workdir: Path) -> dict[str, Any]:
    """Ray Tune, ``reuse_actors=True``, one trial at a time on a local Ray instance; a trial's
    wall time runs from Tune's start of it to its completion (driver side)."""
    try:
        import ray
        from ray import tune
    except ImportError as exc:
        return {"skipped": f"Ray Tune is not installed here: {exc}"}

    class Times(tune.Callback):
        def __init__(self) -> None:
            self.started: dict[str, float] = {}
            self.walls: dict[str, float] = {}

        def on_trial_start(self, iteration: int, trials: Any, trial: Any, **info: Any) -> None:
            self.started[trial.trial_id] = time.perf_counter()

        def on_trial_complete(self, iteration: int, trials: Any, trial: Any, **info: Any) -> None:
            self.walls[trial.trial_id] = time.perf_counter() - self.started[trial.trial_id]

    env = {**_TRAIN_ENV, "MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'mlflow.db'}"}
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": env},
    )
    try:
        times = Times()
        tuner = tune.Tuner(
            tune.with_resources(_tune_trainable, {"cpu": 1}),
            param_space={
                "number": tune.grid_search(list(range(trials))),
                "workdir": str(workdir),
            },
            tune_config=tune.TuneConfig(max_concurrent_trials=1, reuse_actors=True),
            run_config=tune.RunConfig(
                storage_path=str(workdir / "ray_results"), callbacks=[times], verbose=0
            ),
        )
        grid = tuner.fit()
        results = sorted((r for r in grid), key=lambda r: int(r.config["number"]))
        errors = [str(r.error) for r in results if r.error is not None]
        if errors:
            return {"skipped": f"Ray Tune's trials failed: {errors[0][-500:]}"}
        order = sorted(times.started, key=times.started.__getitem__)
        walls = [times.walls[t] for t in order]
        by_id = {r.metrics["trial_id"]: r.metrics["trained_s"] for r in results}
        return _summary(walls, [by_id[t] for t in order])
    finally:
        ray.shutdown()


def efficiency(preload: bool, trials: int, start: float, work: Path) -> dict[str, float]:
    """``bench_tuner.py``'s campaign of 0.5 s trials at parallel 2, with the trial a script
    (a warm parent can start it) instead of ``python -c``."""
    from bench_tuner import _config, _migrated_mlflow

    from tuner.campaign import Controller

    script = work / "sleep.py"
    script.write_text("import sys, time\ntime.sleep(0.5)\nprint('value:', sys.argv[1])\n")
    _migrated_mlflow(work)
    config = _config(
        work,
        command=[sys.executable, str(script), "{x}"],
        budget={"trials": trials, "max_failures": 5},
        trial={"preload": preload},
    )
    t0 = time.time()
    result = Controller(config, importance=False, handle_signals=False).run()
    wall = time.time() - t0
    assert result.counts["COMPLETE"] == trials, result.counts
    runs = _trial_runs(work)
    gaps: list[float] = []
    for device in {r[0] for r in runs}:
        mine = sorted((s, e) for d, s, e in runs if d == device)
        gaps += [b[0] - a[1] for a, b in itertools.pairwise(mine)]
    ideal = trials / 2 * (0.5 + start)
    return {
        "wall_s": round(wall, 2),
        "ideal_s": round(ideal, 2),
        "efficiency": round(ideal / wall, 3),
        "until_first_trial_starts_s": round(min(r[1] for r in runs) - t0, 3),
        "median_slot_idle_between_trials_s": round(statistics.median(gaps), 3),
        "median_trial_beyond_its_sleep_s": round(
            statistics.median(e - s - 0.5 for _, s, e in runs), 3
        ),
        "after_last_trial_ends_s": round(t0 + wall - max(r[2] for r in runs), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--campaign-trials", type=int, default=6)
    parser.add_argument("--efficiency-trials", type=int, default=40)
    args = parser.parse_args()
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    figures: dict[str, Any] = {}

    def measure(name: str, fn: Any, *fn_args: Any) -> None:
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # MLflow puts a new experiment's artifacts under ./mlruns
            try:
                figures[name] = fn(*fn_args, Path(tmp))
            finally:
                os.chdir(here)
        print(name, figures[name], flush=True)

    measure("per_trial_cold", per_trial, False, args.trials)
    measure("per_trial_warm", per_trial, True, args.trials)
    measure("quickstart_cold", campaign, False, args.campaign_trials)
    measure("quickstart_warm", campaign, True, args.campaign_trials)
    figures["quickstart_speedup"] = round(
        figures["quickstart_cold"]["wall_s"] / figures["quickstart_warm"]["wall_s"], 2
    )
    print("quickstart speed-up", figures["quickstart_speedup"], flush=True)
    from bench_tuner import interpreter_start

    start = interpreter_start()
    figures["interpreter_start_s"] = round(start, 4)
    for name, preload in (("cold", False), ("warm", True)):
        measure(f"efficiency_{name}", efficiency, preload, args.efficiency_trials, start)
    measure("per_trial_optuna_in_process", optuna_in_process, args.trials)
    measure("per_trial_ray_tune_reuse_actors", ray_tune_reuse, args.trials)
    figures["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    path = write_result(
        "bench_startup",
        figures,
        store="sqlite",
        params=vars(args),
        notes="shared 2-core machine under load from other jobs; one run, no repeats",
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
