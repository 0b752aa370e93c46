"""What a pause costs a trial: the time from the report of its rung step to its stopped
process, and whether it computed steps past the rung, for ASHA's pause and for a prune.

Three campaigns run through ``tuner run`` (local slots, warm parents, SQLite stores), each
``--trials`` trials of nine steps, two at a time, under ASHA (rungs at steps 1 and 3). Each
step computes (``--epoch`` seconds of sleep), reports, saves and commits a checkpoint, then
returns when `tuner.trial.should_prune` says so; a SIGTERM ends it the same way.

- ``pause``: ``mode: promote``, the trial waits at a rung step for the controller's verdict
  (`tuner.trial.checkpointed`);
- ``pause-no-wait``: the same, with the trial's verdict file unset, so it never waits: the
  behaviour before the wait existed;
- ``prune``: ``mode: stop``, stopped for good at the rung.

For every rung a trial was kept at (not stopped there), the time from that step's report to
the return of its `tuner.trial.checkpointed` (the save, and under ``pause`` the wait for the
verdict). For every trial stopped at a rung it reads the rung step from the study, the time of that
step's report and of the process's end from the trial's own log, and its last computed step.
Usage: ``python benchmarks/bench_pause.py [--trials 24] [--epoch 0.05]``; writes
``results/pause.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _results import write_result

TRIAL = """
import json, os, signal, sys, time
from tuner import trial

if sys.argv[2] == "no-wait":
    os.environ.pop("TUNER_VERDICT", None)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
x = float(trial.params()["x"])
resume = trial.resume_from()
start = 0 if resume is None else resume[1] + 1
log = {"reported": {}, "computed": [], "checkpointed": {}}
try:
    for step in range(start, 9):
        time.sleep(float(sys.argv[1]))
        log["computed"].append(step)
        trial.report(step, loss=(x - 0.3) ** 2 + 1.0 / (step + 1))
        log["reported"][step] = time.time()
        (trial.checkpoint_dir(step) / "state.json").write_text("{}")
        trial.checkpointed(step)
        log["checkpointed"][step] = time.time()
        if trial.should_prune():
            break
finally:
    log["end"] = time.time()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the log
    with open(f"log-{trial.number()}.tmp", "w") as fh:
        json.dump(log, fh)
    os.replace(f"log-{trial.number()}.tmp", f"log-{trial.number()}.json")
"""


def _campaign(tmp: Path, arm: str, trials: int, epoch: float) -> dict[str, Any]:
    import optuna
    import yaml

    folder = tmp / arm
    folder.mkdir()
    (folder / "trial.py").write_text(TRIAL)
    wait = "no-wait" if arm == "pause-no-wait" else "wait"
    config = {
        "name": arm,
        "command": [sys.executable, "trial.py", str(epoch), wait],
        "reads_tuner_params": True,
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": trials},
        "sampler": {"name": "random", "seed": 1},
        "resources": {"kind": "cpu", "parallel": 2},
        "storage": f"sqlite:///{folder / 'optuna.db'}",
        "lineage": {"tracking_uri": f"sqlite:///{folder / 'mlflow.db'}"},
        "scheduler": {
            "name": "asha",
            "mode": "stop" if arm == "prune" else "promote",
            "min_resource": 1,
            "max_resource": 9,
            "brackets": 1,
        },
    }
    (folder / "c.yaml").write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "run", "c.yaml", "--quiet"],
        cwd=folder, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{arm}: tuner run exited {done.returncode}: {done.stderr[-2000:]}")
    study = optuna.load_study(study_name=arm, storage=config["storage"])
    latencies, extra, held = [], [], []
    for t in study.get_trials(deepcopy=False):
        log = json.loads((folder / f"log-{t.number}.json").read_text())
        rung = t.user_attrs.get("tuner.paused_at")
        if rung is None:
            found = re.search(r"at rung step (\d+)", str(t.user_attrs.get("prune_reason", "")))
            rung = int(found.group(1)) if found else None
        for step in (1, 3):  # a rung it was judged at and kept: how long its report was held
            if step != rung and step in log["computed"] and step + 1 in log["computed"]:
                held.append((log["checkpointed"][str(step)] - log["reported"][str(step)]) * 1000)
        if rung is None:
            continue
        reported = log["reported"].get(str(rung))
        if reported is None:
            continue  # reported in an earlier attempt of its chain
        latencies.append((log["end"] - reported) * 1000)
        extra.append(max(log["computed"]) - int(rung))
    return {
        "stopped_at_rung": len(latencies),
        "median_ms_rung_report_to_stopped": round(statistics.median(latencies), 1),
        "p90_ms_rung_report_to_stopped": round(statistics.quantiles(latencies, n=10)[-1], 1),
        "share_with_extra_step": round(sum(1 for e in extra if e > 0) / len(extra), 3),
        "extra_steps_total": sum(extra),
        "kept_at_a_rung": len(held),
        "median_ms_rung_report_to_going_on": round(statistics.median(held), 1) if held else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--epoch", type=float, default=0.05, help="seconds one step computes")
    args = ap.parse_args(argv)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pause-") as tmp_:
        for arm in ("pause", "pause-no-wait", "prune"):
            figures[arm] = _campaign(Path(tmp_), arm, args.trials, args.epoch)
            f = figures[arm]
            print(
                f"{arm:14} {f['stopped_at_rung']:3} stopped at a rung: median "
                f"{f['median_ms_rung_report_to_stopped']:.0f} ms from the rung's report to the "
                f"stopped process (p90 {f['p90_ms_rung_report_to_stopped']:.0f} ms), "
                f"{f['share_with_extra_step']:.0%} computed a step past the rung; "
                f"{f['kept_at_a_rung']} were kept at a rung, median "
                f"{f['median_ms_rung_report_to_going_on']} ms from its report to going on "
                "(checkpoint save included)",
                flush=True,
            )
    path = write_result(
        "pause",
        figures,
        store="sqlite",
        params={"trials": args.trials, "epoch_s": args.epoch, "parallel": 2, "rungs": [1, 3]},
        notes="pause-no-wait: the trial never waits at a rung (its verdict file unset), "
        "as before trials waited for the verdict",
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
