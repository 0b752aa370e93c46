"""A training run's summary files as the params, metrics and tags ``LineageCallback`` records.

=====================================  =============================================
MindInsight (``*_lineage`` / ``*_MS``)  here (the names ``lineage.mindspore`` uses)
=====================================  =============================================
hyper_parameters.optimizer             param ``optimizer.name``
hyper_parameters.learning_rate         param ``optimizer.lr``
hyper_parameters.loss_function         param ``loss_fn.name``
hyper_parameters.epoch                 param ``epochs``
hyper_parameters.batch_size            param ``batch_size``
hyper_parameters.parallel_mode         param ``parallel_mode``
hyper_parameters.device_num            param ``device.count``
train_dataset.train_dataset_size       param ``train_size`` (+ ``steps_per_epoch``),
                                       tag ``lineage.data.train.samples``
train_dataset.train_dataset_path       tag ``lineage.data.train.path``
algorithm.network                      param ``network.name``
algorithm.loss                         metric ``loss`` (only when no loss curve was kept)
model.path / model.size                tags ``mindinsight.model.path`` / ``.size``
evaluation_lineage.metric {"Acc": x}   metric ``val_Acc`` at step = epochs
valid_dataset size / path              param ``val_size``, tags ``lineage.data.val.*``
user_defined_info                      params under their own names (nested keys joined
                                       with ``.``), listed in tag ``mindinsight.user_defined``
dataset_graph                          artifact ``dataset/train_pipeline.json``
scalar ``loss/auto`` per step          metric ``loss`` per global step, and ``train_loss``
                                       per epoch (mean of the epoch's points)
other scalars (``name[:Scalar]``)      metric ``name`` per step
=====================================  =============================================

Histograms, images, tensors and graphs are not imported.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from lineage.mindinsight._discover import SummaryRun
from lineage.mindinsight._proto import lineage_event, summary_event
from lineage.mindinsight._records import RecordError, iter_records
from lineage.tags import data_tag

__all__ = ["TrainingRecord", "read_run"]

# (key, value, step, timestamp ms)
Point = tuple[str, float, int, int]

_SCALAR_SUFFIXES = ("/auto", "[:Scalar]")

_UNFINISHED = "no train lineage: the training did not finish"
# SummaryCollector names a record's files after the second it opens them in: a model.eval
# whose collector opened in the training's second wrote over the training's lineage file.
_OVERWRITTEN = (
    "no train lineage, only an evaluation's: the training did not finish, or the evaluation "
    "started in the second the training did and its files overwrote the training's"
)


@dataclass
class TrainingRecord:
    """What one training run becomes in the lineage store."""

    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: list[Point] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)  # relative path -> JSON document
    start_ms: int | None = None
    end_ms: int | None = None
    complete: bool = False  # the training wrote its train lineage (it ended normally)

    def metric_keys(self) -> list[str]:
        return sorted({p[0] for p in self.metrics})

    def _seen(self, wall_time: float) -> None:
        if wall_time <= 0 or not math.isfinite(wall_time):
            return
        ms = int(wall_time * 1000)
        self.start_ms = ms if self.start_ms is None else min(self.start_ms, ms)
        self.end_ms = ms if self.end_ms is None else max(self.end_ms, ms)


def float32(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (0.1, not 0.100000001)."""
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        candidate = float(f"{value:.{digits}g}")
        if struct.pack("<f", candidate) == packed:
            return candidate
    return float(value)


def metric_name(tag: str) -> str:
    """A scalar's tag as a metric name: ``loss/auto`` -> ``loss``, ``acc[:Scalar]`` -> ``acc``."""
    for suffix in _SCALAR_SUFFIXES:
        if tag.endswith(suffix):
            return tag[: -len(suffix)]
    return tag


def read_run(run: SummaryRun) -> TrainingRecord:
    """Read every file of ``run``: lineage files merged in time order (the latest train and
    evaluation lineage win, user-defined info accumulates), scalar files one after the other.
    Raises :class:`RecordError` naming the first damaged file."""
    record = TrainingRecord()
    _read_lineage(run, record)
    _read_scalars(run, record)
    _derive(record)
    record.tags.update(
        {
            "mindinsight.train_id": run.train_id,
            "mindinsight.summary_dir": str(run.summary_dir),
            "mindinsight.files": ",".join(p.name for p in run.files)[:5000],
        }
    )
    if not record.complete:
        record.tags.setdefault("mindinsight.incomplete", _UNFINISHED)
    return record


def _events(path: Any, message: Any) -> Iterator[Any]:
    from google.protobuf.message import DecodeError

    for offset, payload in _with_offsets(path):
        event = message()
        try:
            event.ParseFromString(payload)
        except DecodeError as exc:
            raise RecordError(path, offset, f"undecodable event ({exc})") from None
        yield event


def _with_offsets(path: Any) -> Iterator[tuple[int, bytes]]:
    offset = 0
    for payload in iter_records(path):
        yield offset, payload
        offset += 16 + len(payload)


def _read_lineage(run: SummaryRun, record: TrainingRecord) -> None:
    train = evaluation = graph = None
    user: dict[str, Any] = {}
    events = (e for path in run.lineage_files for e in _events(path, lineage_event()))
    for event in events:
        record._seen(event.wall_time)
        kind = event.WhichOneof("what")
        if kind == "train_lineage":
            train = event.train_lineage
        elif kind == "evaluation_lineage":
            evaluation = event.evaluation_lineage
        elif kind == "dataset_graph":
            graph = event.dataset_graph
        elif kind == "user_defined_info":
            user.update(_user_info(event.user_defined_info))
    params = record.params
    epochs: int | None = None
    if train is not None:
        record.complete = True
        hp = train.hyper_parameters
        if hp.HasField("optimizer"):
            params["optimizer.name"] = hp.optimizer
        if hp.HasField("learning_rate"):
            params["optimizer.lr"] = float32(hp.learning_rate)
        if hp.HasField("loss_function"):
            params["loss_fn.name"] = hp.loss_function
        if hp.HasField("epoch"):
            epochs = int(hp.epoch)
            params["epochs"] = epochs
        if hp.HasField("batch_size"):
            params["batch_size"] = int(hp.batch_size)
        if hp.HasField("parallel_mode"):
            params["parallel_mode"] = hp.parallel_mode
        if hp.HasField("device_num"):
            params["device.count"] = int(hp.device_num)
        ds = train.train_dataset
        if ds.HasField("train_dataset_size"):
            params["train_size"] = int(ds.train_dataset_size)
            record.tags[data_tag("train", "samples")] = str(ds.train_dataset_size)
            batch = params.get("batch_size")
            if batch and ds.train_dataset_size % batch == 0:
                # MindSpore stores batches x batch size, so this is exact.
                params["steps_per_epoch"] = ds.train_dataset_size // batch
        if ds.train_dataset_path:
            record.tags[data_tag("train", "path")] = ds.train_dataset_path
        if train.algorithm.HasField("network"):
            params["network.name"] = train.algorithm.network
        if train.algorithm.HasField("loss"):
            record.tags["mindinsight.final_loss"] = repr(float32(train.algorithm.loss))
        if train.model.HasField("path"):
            record.tags["mindinsight.model.path"] = train.model.path
        if train.model.HasField("size"):
            record.tags["mindinsight.model.size"] = str(train.model.size)
    if evaluation is not None:
        if train is None:
            record.tags["mindinsight.incomplete"] = _OVERWRITTEN
        vd = evaluation.valid_dataset
        if vd.HasField("valid_dataset_size"):
            params["val_size"] = int(vd.valid_dataset_size)
            record.tags[data_tag("val", "samples")] = str(vd.valid_dataset_size)
        if vd.valid_dataset_path:
            record.tags[data_tag("val", "path")] = vd.valid_dataset_path
        step = epochs if epochs else 1
        for name, value in _metrics(evaluation.metric).items():
            record.metrics.append((f"val_{name}", value, step, record.end_ms or 0))
    if user:
        taken = set(params)
        names = []
        for key, value in _flatten(user).items():
            name = key if key not in taken else f"user.{key}"
            params[name] = value
            names.append(name)
        record.tags["mindinsight.user_defined"] = ",".join(names)[:5000]
    if graph is not None:
        from google.protobuf.json_format import MessageToDict

        record.artifacts["dataset/train_pipeline.json"] = {
            "pipeline": MessageToDict(graph, preserving_proto_field_name=True),
            "source": "mindinsight dataset_graph",
        }


def _metrics(text: str) -> dict[str, float]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[str(key)] = float(value)
            elif isinstance(value, str):  # MindSpore writes NaN/Inf as strings
                try:
                    out[str(key)] = float(value)
                except ValueError:
                    continue
    return out


def _user_info(info: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in info.user_info:
        out.update(_user_info(item))
    for key, value in info.map_dict.items():
        out[key] = _user_info(value)
    out.update(dict(info.map_int32))
    out.update(dict(info.map_str))
    out.update(dict(info.map_double))
    return out


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _read_scalars(run: SummaryRun, record: TrainingRecord) -> None:
    events = (e for path in run.summary_files for e in _events(path, summary_event()))
    for event in events:
        record._seen(event.wall_time)
        if event.WhichOneof("what") != "summary":
            continue
        ts = int(event.wall_time * 1000)
        step = int(event.step)
        for value in event.summary.value:
            if value.WhichOneof("value") == "scalar_value":
                record.metrics.append(
                    (metric_name(value.tag), float32(value.scalar_value), step, ts)
                )


def _derive(record: TrainingRecord) -> None:
    """``train_loss`` per epoch from the per-step ``loss``, as ``LineageCallback`` logs it;
    the final loss when no curve was kept."""
    losses = [(step, value, ts) for key, value, step, ts in record.metrics if key == "loss"]
    final = record.tags.get("mindinsight.final_loss")
    if not losses and final is not None:
        epochs = int(record.params.get("epochs") or 0)
        per_epoch = int(record.params.get("steps_per_epoch") or 0)
        record.metrics.append(("loss", float(final), epochs * per_epoch, record.end_ms or 0))
        return
    spe = record.params.get("steps_per_epoch")
    if not losses or not isinstance(spe, int) or spe < 1:
        return
    by_epoch: dict[int, list[tuple[float, int]]] = {}
    for step, value, ts in losses:
        if step >= 1:
            by_epoch.setdefault((step - 1) // spe + 1, []).append((value, ts))
    for epoch, values in sorted(by_epoch.items()):
        mean = sum(v for v, _ in values) / len(values)
        record.metrics.append(("train_loss", mean, epoch, max(ts for _, ts in values)))
