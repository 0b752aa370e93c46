"""A SQLite campaign on a file system that fills up, run inside a private mount namespace.

argv: WORK_DIR MLFLOW_TEMPLATE TRIAL_SCRIPT. Mounts a 24 MiB tmpfs on WORK_DIR/small (the
namespace's own: nothing is left mounted when this process ends), runs ``tuner run`` there,
fills the file system once two trials have ended, lets the campaign fail, frees the space,
checks both SQLite stores and runs ``tuner resume``. Prints one JSON object with what it saw.
Run it as ``unshare --user --map-root-user --mount python _disk_full.py ...``.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

work, template, trial = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
small = work / "small"
small.mkdir(parents=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(small)], check=True)
shutil.copyfile(template, small / "mlflow.db")
seen = small / "seen"
seen.mkdir()
budget = 6
config = {
    "name": "full",
    "command": [sys.executable, trial, "2", "0.1", str(seen)],
    "reads_tuner_params": True,
    "target": {"metric": "loss", "goal": "minimize"},
    "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
    "budget": {"trials": budget, "max_failures": 3},
    "sampler": {"name": "random", "seed": 3},
    "pruner": {"name": "none"},
    "resources": {"kind": "cpu", "parallel": 1},
    "diagnosis": {"early_stop": False},
    "lineage": {"tracking_uri": f"sqlite:///{small}/mlflow.db", "experiment": "full"},
}
(small / "c.yaml").write_text(yaml.safe_dump(config))
cli = [sys.executable, "-m", "tuner.cli"]
run = subprocess.Popen(
    [*cli, "run", str(small / "c.yaml")],
    cwd=small,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
)
deadline = time.monotonic() + 300
while len(list(seen.glob("*.json"))) < 2 and run.poll() is None and time.monotonic() < deadline:
    time.sleep(0.1)
filler = small / "filler"
try:  # the campaign's own files may have filled it already: then there is nothing to add
    with open(filler, "wb") as f:
        while True:
            f.write(b"\0" * (1 << 16))
except OSError:
    pass
out, err = run.communicate(timeout=300)
result = {"run_rc": run.returncode, "run_stderr": err, "run_stdout": out}
filler.unlink(missing_ok=True)
result["free_after"] = shutil.disk_usage(small).free
for name in ("mlflow.db", "optuna.db"):
    conn = sqlite3.connect(small / name)
    result[f"integrity_{name}"] = conn.execute("PRAGMA integrity_check").fetchall()
    conn.close()
resume = subprocess.run(
    [*cli, "resume", str(small / "c.yaml")], cwd=small, capture_output=True, text=True, timeout=300
)
result.update(resume_rc=resume.returncode, resume_stdout=resume.stdout, resume_stderr=resume.stderr)
import optuna  # noqa: E402 - after the campaign, as a user would look

optuna.logging.set_verbosity(optuna.logging.WARNING)
trials = optuna.load_study(study_name="full", storage=f"sqlite:///{small}/optuna.db").get_trials()
result["states"] = [t.state.name for t in trials if "tuner:stale" not in t.system_attrs]
from mlflow.tracking import MlflowClient  # noqa: E402

client = MlflowClient(tracking_uri=f"sqlite:///{small}/mlflow.db")
exp = client.get_experiment_by_name("full")
runs = client.search_runs([exp.experiment_id], max_results=500) if exp else []
result["run_statuses"] = [r.info.status for r in runs]
result["trial_runs_finished"] = sum(
    1
    for r in runs
    if r.data.tags.get("lineage.run_type") == "trial" and r.info.status == "FINISHED"
)
result["seen"] = sorted(p.name for p in seen.glob("*.json"))
result["small"] = str(small)
os.chdir("/")
print(json.dumps(result))
