"""A tiny trial for the cluster tests: prints what it sees, reports a curve, obeys pruning.

argv: STEPS SLEEP [OUT_DIR]. With OUT_DIR, writes ``<OUT_DIR>/<trial number>-<pid>.json``
holding its device variables and MLflow credential variables (for the tests to compare).
"""

import json
import os
import sys
import time

from tuner import trial

KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES",
    "DEVICE_ID",
    "TUNER_TRIAL_NUMBER",
    "MLFLOW_RUN_ID",
    "MLFLOW_TRACKING_URI",
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
)

steps, sleep = int(sys.argv[1]), float(sys.argv[2])
seen = {k: os.environ.get(k) for k in KEYS}
seen["t0"] = time.time()
x = float(trial.params().get("x", 0.5))
print("seen " + json.dumps({k: seen[k] for k in KEYS[:4]}), flush=True)
for step in range(steps):
    time.sleep(sleep)
    trial.report(step, loss=(x - 0.3) ** 2 + 1.0 / (step + 1))
    if trial.should_prune():
        sys.exit(0)
seen["t1"] = time.time()
if len(sys.argv) > 3:
    with open(
        os.path.join(sys.argv[3], f"{seen['TUNER_TRIAL_NUMBER']}-{os.getpid()}.json"), "w"
    ) as f:
        json.dump(seen, f)
print(f"loss: {(x - 0.3) ** 2}", flush=True)
