"""``labels_out_of_range``: class labels outside the network's output size."""

from __future__ import annotations

import math

from lineage.diagnose._base import Check, Finding, RunData, fmt
from lineage.diagnose._data_columns import data_columns


class LabelsOutOfRange(Check):
    """A label column's recorded ``min`` is below 0 or its ``max`` is at least ``classes``
    (the network's output size, recorded with the column)."""

    id = "labels_out_of_range"
    causes = (
        "Labels count from 1 (1..N) while the loss expects 0..N-1.",
        "The classifier head has fewer outputs than the data set has classes (a head reused "
        "from another task, num_classes left at its default).",
        "A label column holds something else (an id, a one-hot vector read as indices).",
    )
    next_steps = (
        "Map labels to 0..N-1 in the pipeline (e.g. a TypeCast and a lambda, or shift in the "
        "source), or give the network's last layer as many outputs as there are classes.",
        "Print the distinct labels of the whole training set and compare with the network's "
        "output size.",
    )

    def run(self, data: RunData) -> list[Finding]:
        findings = []
        for col in data_columns(data):
            classes = col.number("classes")
            lo, hi = col.stats.get("min"), col.stats.get("max")
            if col.kind != "label" or classes is None or lo is None or hi is None:
                continue
            if not (math.isfinite(lo) and math.isfinite(hi)):
                continue
            top = int(classes) - 1
            if lo >= 0 and hi <= top:
                continue
            value = hi if hi > top else lo
            findings.append(
                self.finding(
                    "error",
                    f"{col.role} label column {col.name!r} reaches {fmt(value)}, but the "
                    f"network has {int(classes)} outputs (labels 0..{top})",
                    metric=col.metric("max" if hi > top else "min"),
                    step=None,
                    value=value,
                    column=col.name,
                    observed=[lo, hi],
                    allowed=[0, top],
                    classes=int(classes),
                )
            )
        return findings
