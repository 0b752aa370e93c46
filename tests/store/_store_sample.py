"""A small store logged with plain MLflow, shared by the store and query tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Logged:
    """What :func:`log_sample_runs` wrote, for the assertions."""

    uri: str
    exp_a: str
    exp_b: str
    deleted_exp: str
    runs: dict[str, str] = field(default_factory=dict)  # label -> run id
    deleted_run: str = ""
    deleted_exp_run: str = ""


def log_sample_runs(uri: str, artifact_dir: Path) -> Logged:
    """Two experiments, four runs with params/metrics/tags, a deleted run and a deleted
    experiment, one NaN metric and one artifact, all through ``MlflowClient``."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    art = artifact_dir.as_uri()
    exp_a = client.create_experiment("alpha", artifact_location=f"{art}/alpha")
    exp_b = client.create_experiment("beta", artifact_location=f"{art}/beta")
    gone = client.create_experiment("gone", artifact_location=f"{art}/gone")
    client.set_experiment_tag(exp_a, "lineage.target", "accuracy:maximize")
    client.set_experiment_tag(gone, "lineage.target", "loss:minimize")
    logged = Logged(uri, exp_a, exp_b, gone)
    specs = [
        ("sgd", exp_a, {"lr": "0.1", "optimizer": "sgd", "epochs": "10"}, [1.0, 0.5, 0.3], 0.80),
        ("adam", exp_a, {"lr": "0.001", "optimizer": "adam", "epochs": "10"}, [0.9, 0.2], 0.90),
        ("adam2", exp_a, {"lr": "1e-4", "optimizer": "adam", "epochs": "20"}, [0.8, 0.4], 0.85),
        ("beta1", exp_b, {"lr": "0.01", "optimizer": "momentum", "odd key/x": "1"}, [0.7], 0.7),
    ]
    t0 = 1_700_000_000_000
    for i, (label, exp, params, losses, acc) in enumerate(specs):
        run = client.create_run(exp, run_name=label, start_time=t0 + i * 1000)
        rid = run.info.run_id
        metrics = [Metric("loss", v, t0 + i * 1000 + s, s) for s, v in enumerate(losses)]
        metrics.append(Metric("accuracy", acc, t0 + i * 1000, len(losses) - 1))
        client.log_batch(
            rid,
            metrics=metrics,
            params=[Param(k, v) for k, v in params.items()],
            tags=[RunTag("team", "vision" if exp == exp_a else "nlp")],
        )
        if label == "beta1":
            client.log_metric(rid, "val_loss", float("nan"), step=0)
        status = "FAILED" if label == "adam2" else "FINISHED"
        client.set_terminated(rid, status=status, end_time=t0 + i * 1000 + 500)
        logged.runs[label] = rid
    artifact_dir.mkdir(parents=True, exist_ok=True)
    src = artifact_dir / "model.txt"
    src.write_text("weights")
    client.log_artifact(logged.runs["sgd"], str(src), artifact_path="model")
    dead = client.create_run(exp_a, run_name="deleted", start_time=t0 + 9000)
    client.log_param(dead.info.run_id, "lr", "9")
    client.delete_run(dead.info.run_id)
    logged.deleted_run = dead.info.run_id
    ghost = client.create_run(gone, run_name="ghost", start_time=t0 + 9500)
    logged.deleted_exp_run = ghost.info.run_id
    client.delete_experiment(gone)
    return logged
