"""The summary of ``bench_schedulers.py --suite mfh``: per task and arm, the median regret at
the budget and the epochs to reach the default's median result; the goals, as measured."""

from __future__ import annotations

import math
import statistics
from typing import Any

DEFAULT = "tpe-median"
#: Tasks whose first rungs rank configurations well: the recommended arm must need at most
#: half the default's epochs there.
WELL_RANKED = ("mfh3_good", "mfh6_good", "mfh3_moderate", "mfh6_moderate")


def _epochs_to(trace: list[list[float]], target: float) -> float:
    best = math.inf
    for epochs, error in trace:
        best = min(best, error)
        if best <= target + 1e-12:
            return epochs
    return math.inf


def _worse_p(mine: list[float], default: list[float]) -> float:
    """One-sided Mann-Whitney U: the probability of regrets this much above the default's
    when both come from one distribution."""
    from scipy.stats import mannwhitneyu

    if mine == default:
        return 1.0
    return float(mannwhitneyu(mine, default, alternative="greater").pvalue)


def summarize(runs: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """``runs[task][arm]``: one trace per seed (``{"full": [[epochs, error]...], "optimum"}``)."""
    out: dict[str, Any] = {}
    for task, arms in runs.items():
        regrets = {
            arm: [min((e for _, e in t["full"]), default=math.inf) - t["optimum"] for t in traces]
            for arm, traces in arms.items()
        }
        # The upper middle value: with an even number of seeds the median lies between two
        # seeds' regrets, half the default's seeds never reach it, and its own median epochs to
        # it would be infinite; with an odd number it is the median.
        target = statistics.median_high(regrets[DEFAULT])
        base = None
        rows: dict[str, Any] = {}
        for arm, traces in arms.items():
            epochs = statistics.median(_epochs_to(t["full"], target + t["optimum"]) for t in traces)
            rows[arm] = {
                "seeds": len(traces),
                "median_regret": round(statistics.median(regrets[arm]), 4),
                "median_epochs_to_default_median": None if math.isinf(epochs) else epochs,
                "median_full_evaluations": statistics.median(len(t["full"]) for t in traces),
                "p_worse_than_default": round(_worse_p(regrets[arm], regrets[DEFAULT]), 4),
            }
            if arm == DEFAULT:
                base = epochs
        for row in rows.values():
            mine = row["median_epochs_to_default_median"]
            row["epochs_ratio_to_default"] = (
                round(mine / base, 3)
                if mine is not None and base and not math.isinf(base)
                else None
            )
        out[task] = rows
    return out


def goals(summary: dict[str, Any], recommended: str) -> dict[str, Any]:
    """The goals for the ``recommended`` arm: never significantly worse than the default
    (one-sided p < 0.05) on any task; at most half its epochs where first rungs rank well."""
    worse = {
        task: rows[recommended]["p_worse_than_default"]
        for task, rows in summary.items()
        if recommended in rows
    }
    ratios = {
        task: summary[task][recommended]["epochs_ratio_to_default"]
        for task in WELL_RANKED
        if task in summary and recommended in summary[task]
    }
    return {
        f"{recommended}_never_significantly_worse_than_{DEFAULT}": {
            "worst_p": min(worse.values(), default=None),
            "met": all(p >= 0.05 for p in worse.values()),
        },
        f"{recommended}_epochs_at_most_half_of_{DEFAULT}_on_good_and_moderate": ratios
        | {"met": all(r is not None and r <= 0.5 for r in ratios.values())},
    }


def print_table(summary: dict[str, Any]) -> None:
    print(f"{'task':15} {'arm':20} {'regret':>8} {'epochs':>7} {'/dflt':>6} {'full':>5} {'p>':>6}")
    for task, rows in summary.items():
        for arm, row in rows.items():
            epochs = row["median_epochs_to_default_median"]
            ratio = row["epochs_ratio_to_default"]
            print(
                f"{task:15} {arm:20} {row['median_regret']:8.4f} "
                f"{'-' if epochs is None else epochs:>7} {'-' if ratio is None else ratio:>6} "
                f"{row['median_full_evaluations']:>5} {row['p_worse_than_default']:6.3f}"
            )
