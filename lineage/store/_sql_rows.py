"""Turning the rows of MLflow's tables into :class:`RunRecord` objects."""

from __future__ import annotations

import json
import math
from collections import defaultdict

from lineage.store._records import RunRecord, metric_value
from lineage.tags import MLFLOW_RUN_NAME as RUN_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
                name=name or run_tags.get(RUN_NAME, ""),
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
    for run, key, value, is_nan in metrics:
        out[run][key] = metric_value(value, is_nan)
    return out


def _folded(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    obj = json.loads(value) if isinstance(value, str | bytes) else value
    if None in obj.values():  # a NULL tag value; MLflow reads it back as ""
        return {k: "" if v is None else v for k, v in obj.items()}
    return obj


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
                name or run_tags.get(RUN_NAME, ""),
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


def assemble_json(doc: str, big: list[tuple[Any, ...]]) -> list[RunRecord]:
    """Records from what ``SqlRunStore._read_json`` read, newest first."""
    exact = {(run, key): metric_value(value) for run, key, value in big}
    heads = json.loads(doc)
    heads.sort(key=lambda h: h[0])
    heads.sort(key=lambda h: -(h[5] or 0))  # newest first, ties by id
    nan = math.nan
    out = []
    for run_id, exp_id, exp_name, name, status, start, end, art, params, tags, metrics in heads:
        if None in tags.values():  # a NULL tag value; MLflow reads it back as ""
            tags = {k: "" if v is None else v for k, v in tags.items()}
        values = metrics.values()
        if None in values or "big" in values:
            metrics = {
                k: nan if v is None else exact[run_id, k] if v == "big" else v
                for k, v in metrics.items()
            }
        out.append(
            RunRecord(
                run_id,
                str(exp_id),
                exp_name,
                name or tags.get(RUN_NAME, ""),
                status or "",
                start,
                end,
                params,
                metrics,
                tags,
                art,
            )
        )
    return out
