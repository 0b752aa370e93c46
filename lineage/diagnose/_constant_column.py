"""``constant_column``: a data column holds one value across the whole first batch."""

from __future__ import annotations

from lineage.diagnose._base import Check, Finding, RunData, fmt
from lineage.diagnose._data_columns import data_columns


class ConstantColumn(Check):
    """A column's recorded ``std`` is 0 (or its ``min`` equals its ``max``) over a first batch
    of more than one row (see :mod:`lineage.diagnose._data_columns`). An input column is an
    error: the network sees no signal. A label column is a warning: one batch of a single
    class usually means the data is sorted by class and not shuffled."""

    id = "constant_column"
    causes = (
        "The pipeline wipes the data: a normalisation with a zero or huge std, a crop outside "
        "the image, a wrong column mapped, an integer cast of values in [0, 1].",
        "The source yields the same sample every time (an index bug in a generator source), "
        "or blank files.",
    )
    next_steps = (
        "Open dataset/train_sample.png (or the sample table) and compare with the raw data; "
        "remove the pipeline's operations one at a time until the values vary again.",
        "Check the source: iterate it without the pipeline and print a few rows.",
    )
    label_causes = (
        "The data set is sorted by class and not shuffled: every batch of the first part of "
        "the epoch holds one class, which biases the updates.",
        "All samples carry the same label (a label-reading bug, a wrong label column).",
    )
    label_next_steps = (
        "Shuffle the training data (GeneratorDataset(..., shuffle=True), or dataset.shuffle()"
        " with a buffer at least the size of the data set).",
        "Count the labels of the whole training set.",
    )

    def run(self, data: RunData) -> list[Finding]:
        findings = []
        for col in data_columns(data):
            lo, hi, std = (col.stats.get(k) for k in ("min", "max", "std"))
            constant = (std is not None and std == 0.0) or (
                lo is not None and hi is not None and lo == hi
            )
            rows = col.rows
            if not constant or (rows is not None and rows < 2):
                continue
            value = lo if lo is not None else col.stats.get("mean")
            label = col.kind == "label"
            where = f"{rows} rows of " if rows else ""
            findings.append(
                self.finding(
                    "warning" if label else "error",
                    f"{col.role} column {col.name!r} is constant: every value in the "
                    f"{where}first batch is {fmt(value) if value is not None else 'the same'}",
                    metric=col.metric("std" if std is not None else "max"),
                    step=None,
                    value=value,
                    column=col.name,
                    kind=col.kind,
                    rows=rows,
                    causes=self.label_causes if label else None,
                    next_steps=self.label_next_steps if label else None,
                )
            )
        return findings
