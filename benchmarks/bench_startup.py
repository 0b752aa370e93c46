"""Trial start-up, cold processes against warm parents (``trial.preload``), in one run.

Two measurements on the quickstart's MindSpore training (``examples/mindspore_digits``):

1. Per-trial overhead: trials run one after another on one local slot; overhead is a trial's
   wall time (as the executor measures it) minus the training loop's own time (the
   ``trained N epoch(s) in S s`` line the script prints).
2. The quickstart campaign's wall time (``tuner run`` on ``configs/quickstart.yaml`` with a
   smaller trial budget), once with ``trial.preload: false`` and once with the default.

    python benchmarks/bench_startup.py [--trials 4] [--campaign-trials 6]
"""

from __future__ import annotations

import argparse
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
    executor = LocalExecutor(
        make_slots("cpu", "auto", 1, 1), run_dir=workdir / "trials", preload=preload
    )
    walls, overheads = [], []
    env = {"OMP_NUM_THREADS": "1", "GLOG_v": "3"}
    try:
        for number in range(trials):
            argv = [sys.executable, str(TRAIN), "--epochs", "1", "--seed", str(number)]
            spec = TrialSpec(
                number=number, attempt=1, params={}, argv=argv, env=env, grace_period=5
            )
            handle = executor.submit(spec)
            while (outcome := handle.poll()) is None:
                executor.wait(0.05)
            match = _TRAINED.search(outcome.stdout_tail)
            if outcome.exit_code != 0 or match is None or outcome.duration is None:
                raise SystemExit(f"trial {number} failed: {outcome.stderr_tail[-2000:]}")
            walls.append(outcome.duration)
            overheads.append(outcome.duration - float(match.group(1)))
    finally:
        executor.shutdown()
    # The first warm trial also waits for its parent's imports: report it apart.
    return {
        "first_trial_wall_s": round(walls[0], 2),
        "median_wall_s": round(statistics.median(walls[1:]), 2),
        "median_overhead_s": round(statistics.median(overheads[1:]), 2),
    }


def campaign(preload: bool, trials: int, workdir: Path) -> float:
    config: dict[str, Any] = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    config["workdir"] = str(ROOT)
    config["budget"]["trials"] = trials
    config["trial"]["preload"] = preload
    config["lineage"] = {"tracking_uri": f"sqlite:///{workdir / 'mlflow.db'}"}
    path = workdir / "quickstart.yaml"
    path.write_text(yaml.safe_dump(config))
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tuner.cli", "run", str(path)],
        cwd=workdir,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return round(time.perf_counter() - started, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--campaign-trials", type=int, default=6)
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    for name, preload in (("cold", False), ("warm", True)):
        with tempfile.TemporaryDirectory() as tmp:
            figures[f"per_trial_{name}"] = per_trial(preload, args.trials, Path(tmp))
            print(name, "per trial:", figures[f"per_trial_{name}"], flush=True)
    for name, preload in (("cold", False), ("warm", True)):
        with tempfile.TemporaryDirectory() as tmp:
            figures[f"quickstart_{name}_wall_s"] = campaign(
                preload, args.campaign_trials, Path(tmp)
            )
            print(name, "quickstart wall s:", figures[f"quickstart_{name}_wall_s"], flush=True)
    figures["quickstart_speedup"] = round(
        figures["quickstart_cold_wall_s"] / figures["quickstart_warm_wall_s"], 2
    )
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
