"""How long a run trained, from its recorded parameters: epochs, batch size, training-set
size, steps per epoch, a step budget (names in :mod:`lineage.diagnose._names`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from lineage.diagnose import _names
from lineage.diagnose._base import RunData

_TRAIN_SAMPLES_TAG = "lineage.data.train.samples"


@dataclass(frozen=True, slots=True)
class Param:
    """A recorded parameter read as a number."""

    name: str
    value: float

    @property
    def whole(self) -> int | None:
        return int(self.value) if self.value == int(self.value) else None


@dataclass(frozen=True, slots=True)
class TrainingLength:
    epochs: Param | None = None
    batch_size: Param | None = None
    train_size: Param | None = None
    steps_per_epoch: Param | None = None
    total_steps: Param | None = None

    def samples(self) -> int | None:
        """The training-set size in samples, when recorded as a whole number >= 1."""
        size = self.train_size.whole if self.train_size is not None else None
        return size if size is not None and size >= 1 else None

    def batch(self) -> int | None:
        b = self.batch_size.whole if self.batch_size is not None else None
        return b if b is not None and b >= 1 else None

    def steps(self) -> tuple[int, str] | None:
        """Steps per epoch and how they are known (recorded, or samples / batch size)."""
        recorded = self.steps_per_epoch.whole if self.steps_per_epoch is not None else None
        if recorded is not None and recorded >= 0:
            assert self.steps_per_epoch is not None
            return recorded, self.steps_per_epoch.name
        samples, batch = self.samples(), self.batch()
        if samples is not None and batch is not None:
            return math.ceil(samples / batch), "train samples / batch size"
        return None


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read(data: RunData) -> TrainingLength:
    """The training-length parameters of a run; the shortest name wins when several spell the
    same thing (``epochs`` over ``train.epochs``)."""
    found: dict[str, Param] = {}
    for name, raw in sorted(data.params.items(), key=lambda kv: (len(kv[0]), kv[0])):
        role = _names.param_role(name)
        if role is None or role in found:
            continue
        value = _number(raw)
        if value is not None:
            found[role] = Param(name, value)
    if "train_size" not in found:
        value = _number(data.tags.get(_TRAIN_SAMPLES_TAG, ""))
        if value is not None:
            found["train_size"] = Param(_TRAIN_SAMPLES_TAG, value)
    sink = _number(data.params.get("sink_size", ""))
    if sink is not None and sink > 0 and data.params.get("dataset_sink_mode") == "True":
        # MindSpore sink mode: an "epoch" is sink_size steps, whatever the data set's size
        found["steps_per_epoch"] = Param("sink_size", sink)
    total = found.get("total_steps")
    if total is not None and total.value <= 0:  # Hugging Face's max_steps=-1: not set
        del found["total_steps"]
    return TrainingLength(**found)
