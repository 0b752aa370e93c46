"""``data_out_of_range``: values outside the range the data pipeline implies."""

from __future__ import annotations

from lineage.diagnose._base import Check, Finding, RunData, fmt
from lineage.diagnose._data_columns import data_columns


class DataOutOfRange(Check):
    """A column's recorded ``min`` or ``max`` lies outside the ``implied_range`` its
    pipeline implies (e.g. ``Normalize(mean=[0.5], std=[0.25])`` on [0, 1] input gives
    [-2, 2]) by more than ``data_range_tolerance`` of that range's width."""

    id = "data_out_of_range"
    causes = (
        "The normalisation does not match the data's scale: mean/std for [0, 1] input applied "
        "to 0-255 pixels (a missing Rescale(1/255)), or mean/std in 0-255 units on data "
        "already rescaled.",
        "The data is normalised twice, or the source already yields normalised values.",
    )
    next_steps = (
        "Open dataset/train_sample.png: wrongly scaled images look saturated or blank.",
        "Put Rescale(1.0 / 255.0, 0.0) before a Normalize whose means are in [0, 1], or give "
        "Normalize means and stds in 0-255 units (MindSpore's mean=[0.485 * 255, ...]).",
    )

    def run(self, data: RunData) -> list[Finding]:
        findings = []
        for col in data_columns(data):
            implied = col.pair("implied_range")
            lo, hi = col.stats.get("min"), col.stats.get("max")
            if implied is None or lo is None or hi is None:
                continue
            low, high = implied
            slack = self.thresholds.data_range_tolerance * max(high - low, 1e-12)
            below, above = lo < low - slack, hi > high + slack
            if not (below or above):
                continue
            value = hi if above else lo
            source = col.info.get("range_source")
            findings.append(
                self.finding(
                    "error",
                    f"{col.role} column {col.name!r} reaches {fmt(value)}, outside the range "
                    f"[{fmt(low)}, {fmt(high)}] its pipeline implies"
                    + (f" ({source})" if source else ""),
                    metric=col.metric("max" if above else "min"),
                    step=None,
                    value=value,
                    column=col.name,
                    observed=[lo, hi],
                    allowed=[low, high],
                    range_source=source,
                )
            )
        return findings
