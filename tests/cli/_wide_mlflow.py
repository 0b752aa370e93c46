"""Logs runs whose names, values and texts are wide: what a terminal table must fit without
breaking a word. Run with MLFLOW_TRACKING_URI set; prints the run ids as JSON."""

from __future__ import annotations

import json
import math

import mlflow

NOTE = (
    "a long description of what this run tried, written by someone who likes to explain "
    "their reasoning in full sentences"
)


def main() -> None:
    mlflow.set_experiment("wide")
    ids = {}
    for i in range(12):
        lr = 0.0007751234567 * (i + 1) ** 2
        params = {
            "learning_rate": lr,
            "momentum_coefficient": 0.912345678 - i / 100,
            "weight_decay_per_step": 0.000123456789 * (i + 1),
            "optimizer": ["momentum", "adam", "stochastic_gradient_descent"][i % 3],
            "hidden_units": 64 * (1 + i % 4),
            "dropout_probability": 0.123456789 + i / 50,
        }
        with mlflow.start_run(run_name=f"run-with-a-fairly-long-name-{i}") as run:
            mlflow.log_params(params)
            mlflow.set_tag("mlflow.note.content", NOTE)
            diverges = i % 4 == 3
            for step in range(30):
                loss = 2.0 / (step + 1) + i / 40
                if diverges and step > 20:
                    loss = math.inf if step == 29 else loss * 10 ** (step - 20)
                mlflow.log_metric("train_loss", loss, step=step)
                mlflow.log_metric("validation_accuracy_top1", 0.5 + step / 100 - i / 300, step=step)
            ids[str(i)] = run.info.run_id
    # A campaign's parent run: no training of its own, so diagnose leaves it out.
    with mlflow.start_run(run_name="the-campaign") as run:
        mlflow.set_tag("lineage.run_type", "campaign")
        mlflow.log_metric("train_loss", 1.0, step=0)
        ids["campaign"] = run.info.run_id
    print(json.dumps(ids))


if __name__ == "__main__":
    main()
