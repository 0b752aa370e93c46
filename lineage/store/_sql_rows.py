"""Turning the rows of MLflow's tables into :class:`RunRecord` objects."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, cast

from lineage.store._records import RunRecord


def assemble(
    heads: list[tuple[Any, ...]],
    params: list[tuple[Any, ...]],
    metrics: list[tuple[Any, ...]],
    tags: list[tuple[Any, ...]],
) -> list[RunRecord]:
    by_params: dict[str, dict[str, str]] = defaultdict(dict)
    for run, key, value in params:
        by_params[run][key] = value
    by_metrics = _latest(metrics)
    by_tags: dict[str, dict[str, str]] = defaultdict(dict)
    for run, key, value in tags:
        by_tags[run][key] = "" if value is None else value
    out = []
    for run_id, exp_id, exp_name, name, status, start, end, art in heads:
        run_tags = by_tags.get(run_id, {})
        out.append(
            RunRecord(
                run_id=run_id,
                experiment_id=str(exp_id),
                experiment=exp_name,
                name=name or run_tags.get("mlflow.runName", ""),
                status=status or "",
                start_time=start,
                end_time=end,
                params=by_params.get(run_id, {}),
                metrics=by_metrics.get(run_id, {}),
                tags=run_tags,
                artifact_uri=art,
            )
        )
    return out


def _latest(metrics: list[tuple[Any, ...]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    nan = math.nan
    for run, key, value, is_nan in metrics:
        out[run][key] = nan if is_nan else value
    return out


def _folded(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    obj = json.loads(value) if isinstance(value, str | bytes) else value
    if None in obj.values():  # a NULL tag value; MLflow reads it back as ""
        return {k: "" if v is None else v for k, v in obj.items()}
    return cast(dict[str, str], obj)


def assemble_folded(
    heads: list[tuple[Any, ...]], metrics: list[tuple[Any, ...]]
) -> list[RunRecord]:
    by_metrics = _latest(metrics)
    out = []
    for run_id, exp_id, exp_name, name, status, start, end, art, params, tags in heads:
        run_tags = _folded(tags)
        out.append(
            RunRecord(
                run_id,
                str(exp_id),
                exp_name,
                name or run_tags.get("mlflow.runName", ""),
                status or "",
                start,
                end,
                _folded(params),
                by_metrics.get(run_id) or {},
                run_tags,
                art,
            )
        )
    return out


def to_row(r: RunRecord) -> tuple[Any, ...]:
    return (
        r.run_id,
        r.experiment_id,
        r.experiment,
        r.name,
        r.status,
        r.start_time,
        r.end_time,
        r.params,
        r.metrics,
        r.tags,
        r.artifact_uri,
    )
