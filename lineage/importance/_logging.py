"""Record an importance analysis in MLflow, as a run that is never taken for training."""

from __future__ import annotations

import csv
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from lineage._errors import StoreError
from lineage.importance._result import ImportanceResult, format_bound, model_line
from lineage.tags import RUN_TYPE, RUN_TYPE_ANALYSIS

__all__ = ["log_analysis"]

_METRIC_KEY = re.compile(r"[^\w.\- /:]")


def _metric_key(name: str) -> str:
    return _METRIC_KEY.sub("_", name)[:240]


def _write_tables(result: ImportanceResult, out: Path, top_runs: int) -> None:
    (out / "importance.json").write_text(
        json.dumps(result.to_dict(top_runs=top_runs), indent=2, default=str), encoding="utf-8"
    )
    with (out / "importance.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(
            ["param", "importance", "ci_low", "ci_high", "significant", "spearman", "best", "type"]
        )
        for p in result.params:
            w.writerow(
                [
                    p.name,
                    p.importance,
                    p.ci[0],
                    p.ci[1],
                    p.significant,
                    "" if p.correlation is None else p.correlation,
                    p.best,
                    p.spec.label,
                ]
            )
    names = [p.name for p in result.params]
    with (out / "top_runs.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["rank", "run_id", "run_name", result.target, *names])
        for r in result.top_runs(top_runs):
            w.writerow(
                [
                    r["rank"],
                    r["run_id"],
                    r["run_name"],
                    r[result.target],
                    *("" if r["params"].get(n) is None else r["params"][n] for n in names),
                ]
            )
    summary = result.target_summary(bins=20)
    (out / "target_distribution.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")


def _note(result: ImportanceResult) -> str:
    lines = [
        f"**Parameter importance for `{result.target}`** ({result.goal}, {result.n_runs} runs"
        + (f", best {result.top:g} of runs" if result.top else "")
        + "). `importance/importance.png` (the ranking) and `importance/scatter/<param>.png` "
        "show in MLflow's artifact viewer; `importance/importance.html` is the interactive "
        "page (a few MB with plotly.js inside): the viewer draws it after loading it, or "
        "download it to open it in a browser tab.",
        "",
        "| param | importance | 95% CI | significant | Spearman | best |",
        "|---|---|---|---|---|---|",
    ]
    for p in result.params:
        corr = "" if p.correlation is None else f"{p.correlation:+.2f}"
        lines.append(
            f"| {p.label} | {p.importance:.3f} | "
            f"[{format_bound(p.ci[0], 3)}, {format_bound(p.ci[1], 3)}] | "
            f"{'yes' if p.significant else 'no'} | {corr} | {p.best} |"
        )
    lines += ["", f"- {model_line(result)}"]
    lines += [f"- {n}: {result.dropped[n]}" for n in result.never_active]
    if result.param_source:
        lines.append(f"- params: {result.param_source}")
    return "\n".join(lines).rstrip()


def log_analysis(
    result: ImportanceResult,
    *,
    tracking_uri: str,
    experiment_id: str,
    run_name: str | None = None,
    top_runs: int = 10,
    extra_tags: dict[str, str] | None = None,
) -> str:
    """Create a finished run in ``experiment_id`` holding the analysis; return its id.

    Artifacts under ``importance/``: ``importance.png`` and ``importance.html`` (bars with
    intervals, and everything below, interactive), ``scatter/<param>.png``,
    ``target_distribution.png``, ``importance.json``, ``importance.csv``, ``top_runs.csv``,
    ``target_distribution.json``. Metrics: ``importance.<param>``, ``importance_ci_low.<param>``,
    ``importance_ci_high.<param>``, ``n_runs`` and ``best.<target>``. Tags:
    ``lineage.run_type=analysis`` and ``lineage.analysis.*`` (target, goal, top, evaluator,
    model and why, analysed run count); metrics ``r2.<model>``, each candidate's held-out R². Raises :class:`~lineage.StoreError` if MLflow refuses.
    """
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    from lineage.importance._figures import render_importance

    client = MlflowClient(tracking_uri=tracking_uri)
    tags = {
        RUN_TYPE: RUN_TYPE_ANALYSIS,
        "lineage.analysis.kind": "importance",
        "lineage.analysis.target": result.target,
        "lineage.analysis.goal": result.goal,
        "lineage.analysis.n_runs": str(result.n_runs),
        "lineage.analysis.evaluator": result.evaluator[:5000],
        "lineage.analysis.model": result.model,
        "lineage.analysis.model_reason": result.model_reason[:5000],
        "mlflow.note.content": _note(result),
        **(extra_tags or {}),
    }
    if result.top is not None:
        tags["lineage.analysis.top"] = f"{result.top:g}"
    name = run_name or f"importance-{result.target}" + (f"-top{result.top:g}" if result.top else "")
    try:
        run = client.create_run(experiment_id, run_name=name, tags=tags)
    except Exception as exc:  # MLflow raises its own and driver exceptions alike
        raise StoreError(f"could not create the analysis run in {tracking_uri}: {exc}") from exc
    run_id: str = run.info.run_id
    status = "FAILED"
    try:
        with tempfile.TemporaryDirectory(prefix="lineage-importance-") as tmp:
            out = Path(tmp) / "importance"
            out.mkdir()
            render_importance(result, out)
            _write_tables(result, out, top_runs)
            client.log_artifacts(run_id, str(out), artifact_path="importance")
        metrics: dict[str, Any] = {"n_runs": float(result.n_runs)}
        metrics[_metric_key(f"best.{result.target}")] = float(
            result.target_values[result.best_index]
        )
        for p in result.params:
            metrics[_metric_key(f"importance.{p.name}")] = p.importance
            metrics[_metric_key(f"importance_ci_low.{p.name}")] = p.ci[0]
            metrics[_metric_key(f"importance_ci_high.{p.name}")] = p.ci[1]
        for model, r2 in result.r2.items():
            metrics[_metric_key(f"r2.{model.replace(' ', '_')}")] = r2
        now = int(time.time() * 1000)
        batch = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
        for i in range(0, len(batch), 900):  # MLflow caps a batch at 1000 entries
            client.log_batch(run_id, metrics=batch[i : i + 900])
        status = "FINISHED"
    except Exception as exc:
        raise StoreError(f"could not log the analysis to run {run_id}: {exc}") from exc
    finally:
        client.set_terminated(run_id, status=status)
    return run_id
