"""Logs runs with plain ``mlflow`` (no lineage import): what a user's script does.

Run as a script with MLFLOW_TRACKING_URI set; prints the run ids as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlflow


def main() -> None:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    ids = {}
    mlflow.set_experiment("baseline")
    runs = [
        ("bench", {"lr": 0.1, "batch_size": 32, "optimizer": "sgd", "epochs": 5}, 0.0),
        ("trial", {"lr": 0.05, "batch_size": 32, "optimizer": "adam", "epochs": 5}, 0.1),
        ("trial2", {"lr": 0.001, "batch_size": 64, "optimizer": "adam", "warmup": 100}, 0.3),
    ]
    for name, params, shift in runs:
        with mlflow.start_run(run_name=name) as run:
            mlflow.log_params(params)
            for step in range(4):
                mlflow.log_metric("loss", 1.0 / (step + 1) + shift, step=step)
                mlflow.log_metric("accuracy", 0.5 + 0.1 * step - shift, step=step)
            mlflow.set_tag("mlflow.source.git.commit", "abc123" if name == "bench" else "def456")
            if name == "bench":
                (out_dir / "weights.txt").write_text("w")
                mlflow.log_artifact(str(out_dir / "weights.txt"), artifact_path="ckpt")
            ids[name] = run.info.run_id
    mlflow.set_experiment("other")
    with mlflow.start_run(run_name="lonely") as run:
        mlflow.log_param("lr", 3)
        mlflow.log_metric("loss", 0.7)
        ids["lonely"] = run.info.run_id
    print(json.dumps(ids))


if __name__ == "__main__":
    main()
