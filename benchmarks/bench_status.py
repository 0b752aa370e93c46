"""`tuner status` against Optuna's own readers, on the same 1,000-trial SQLite campaign.

Builds (once, cached under ``.bench/status/``) a campaign config and its Optuna study with
``--trials`` finished trials (COMPLETE, PRUNED, FAIL, a few superseded, a few RUNNING), then
times, as fresh processes (what a user waits for, interpreter start included), each of:

- ``tuner status CONFIG`` (table) and ``tuner status CONFIG --format json``;
- ``optuna trials --study-name ... --storage ...`` (Optuna's CLI);
- ``python -c "optuna.load_study(...).get_trials()"`` (what a notebook does);
- ``python -c pass`` (the interpreter alone, the floor).

Prints the median of ``--repeat`` runs each and the ratios to Optuna's. Run:
``python benchmarks/bench_status.py [--trials 1000] [--repeat 5] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result

ROOT = Path(__file__).resolve().parents[1]
NAME = "bench-status"


def build(workdir: Path, trials: int) -> Path:
    """The campaign YAML; its study is created with ``trials`` trials when missing."""
    import yaml

    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"optuna-{trials}.db"
    config = workdir / f"campaign-{trials}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": NAME,
                "command": [sys.executable, "-c", "pass", "{x}"],
                "target": {"metric": "loss", "goal": "minimize"},
                "parameters": {
                    "x": {"type": "float", "low": -5.0, "high": 5.0},
                    "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
                    "opt": {"type": "categorical", "choices": ["sgd", "adam", "momentum"]},
                },
                "budget": {"trials": trials + 10},
                "storage": f"sqlite:///{db}",
                "lineage": {"tracking_uri": f"sqlite:///{workdir / 'mlflow.db'}"},
            }
        )
    )
    if db.exists():
        return config
    import optuna

    from tuner.config import load_config
    from tuner.search._attrs import ATTEMPT_ATTR, FAIL_ATTR, LAUNCH_ATTR, STALE_ATTR

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = load_config(config)
    mem = optuna.create_study(direction="minimize", sampler=optuna.samplers.RandomSampler(0))
    dists = {
        "x": optuna.distributions.FloatDistribution(-5.0, 5.0),
        "lr": optuna.distributions.FloatDistribution(1e-4, 1.0, log=True),
        "opt": optuna.distributions.CategoricalDistribution(["sgd", "adam", "momentum"]),
    }
    for i in range(trials):
        t = mem.ask(dists)
        t.set_user_attr(ATTEMPT_ATTR, 1)
        t.set_user_attr(LAUNCH_ATTR, {"attempt": 1, "device": "cpu:0", "pid": 1000 + i})
        for step in range(5):
            t.report(float(step), step)
        if i % 10 == 7:
            t.set_user_attr(FAIL_ATTR, "exit code 1")
            if i % 20 == 7:
                t.storage.set_trial_system_attr(t._trial_id, STALE_ATTR, "interrupted")
            mem.tell(t, state=optuna.trial.TrialState.FAIL)
        elif i % 10 == 3:
            mem.tell(t, state=optuna.trial.TrialState.PRUNED)
        else:
            mem.tell(t, (t.params["x"] - 0.3) ** 2)
    storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
    optuna.copy_study(
        from_study_name=mem.study_name,
        from_storage=mem._storage,
        to_storage=storage,
        to_study_name=cfg.study_name,
    )
    study = optuna.load_study(study_name=cfg.study_name, storage=storage)
    for _ in range(2):  # two trials in flight
        t = study.ask(dists)
        t.set_user_attr(LAUNCH_ATTR, {"attempt": 1, "device": "cpu:0", "started": time.time()})
    return config


def _time(argv: list[str], repeat: int, env: dict[str, str]) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=ROOT)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    workdir = ROOT / ".bench" / "status"
    config = build(workdir, args.trials)
    from tuner.config import load_config

    cfg = load_config(config)
    url = cfg.optuna_storage_url()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    py = sys.executable
    bindir = Path(py).parent
    load = (
        "import optuna, sys; optuna.logging.set_verbosity(optuna.logging.WARNING); "
        "optuna.load_study(study_name=sys.argv[1], storage=sys.argv[2]).get_trials()"
    )
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "tuner status": [str(bindir / "tuner"), "status", str(config)],
        "tuner status --format json": [
            str(bindir / "tuner"),
            "status",
            str(config),
            "--format",
            "json",
        ],
        "optuna trials (CLI)": [
            str(bindir / "optuna"),
            "trials",
            "--study-name",
            cfg.study_name,
            "--storage",
            url,
        ],
        "optuna.load_study().get_trials()": [py, "-c", load, cfg.study_name, url],
    }
    results = {name: _time(argv, args.repeat, env) for name, argv in cases.items()}
    ref = results["optuna.load_study().get_trials()"]
    ratio = results["tuner status"] / results["optuna trials (CLI)"]
    write_result(
        "status",
        {"seconds": results, "tuner_status_over_optuna_trials": round(ratio, 3)},
        store="sqlite",
        params={"trials": args.trials, "repeat": args.repeat},
    )
    if args.json:
        print(json.dumps({"trials": args.trials, "seconds": results}, indent=2))
        return
    print(f"{args.trials} trials, SQLite, median of {args.repeat} fresh processes")
    for name, secs in results.items():
        print(f"  {name:36s} {secs:6.3f} s   x{secs / ref:4.2f} of load_study")
    print(
        f"tuner status / optuna trials CLI: "
        f"{results['tuner status'] / results['optuna trials (CLI)']:.2f}"
    )


if __name__ == "__main__":
    main()
