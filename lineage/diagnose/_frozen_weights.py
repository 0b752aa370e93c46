"""``frozen_weights``: weights were frozen and training cannot make progress.

Reads, from tags or params (first found wins):

- the frozen weights: ``frozen_params``, as the framework recorders write it (or one of its
  older names, ``lineage.tags.TAG_ALIASES``): a count, a JSON list of parameter names, or a
  comma-separated string; ``0`` or ``[]`` means none;
- the number of trainable weights: ``trainable_params`` (or an older name): an integer
  (weights or elements: only 0 matters), or a JSON list of names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from lineage.diagnose._base import Check, Finding, RunData, fmt
from lineage.tags import FROZEN_PARAMS_KEYS, TRAINABLE_PARAMS_KEYS

FROZEN_KEYS = FROZEN_PARAMS_KEYS
TRAINABLE_KEYS = TRAINABLE_PARAMS_KEYS


def _lookup(data: RunData, keys: tuple[str, ...]) -> str | None:
    sources: tuple[Mapping[str, str], ...] = (data.tags, data.params)
    for source in sources:
        for key in keys:
            if key in source:
                return source[key]
    return None


def _frozen(raw: str) -> tuple[int, list[str]]:
    """(how many, names shown) from a count, a JSON list or a comma-separated string."""
    raw = raw.strip()
    if not raw:
        return 0, []
    try:
        value = json.loads(raw)
    except ValueError:
        names = [p.strip() for p in raw.split(",") if p.strip()]
        return len(names), names
    if isinstance(value, list):
        return len(value), [str(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value), []
    return 1, [str(value)]


def _count(raw: str) -> int | None:
    try:
        return int(float(raw))
    except ValueError:
        pass
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return len(value) if isinstance(value, list) else None


class FrozenWeights(Check):
    """An error when weights are frozen and nothing is left to train (trainable count 0); a
    warning when weights are frozen and the training loss improved by less than
    ``slow_min_improvement`` (the frozen part may be the part that had to learn)."""

    id = "frozen_weights"
    suppressed_by = ("loss_runaway", "divergence")
    causes = (
        "Weights that should train are frozen (requires_grad=False), e.g. a whole backbone, "
        "or the new head of a fine-tuned model.",
        "A checkpoint was loaded with its layers frozen for a different task.",
    )
    next_steps = (
        "Check the model structure: list the frozen weights (MindSpore runs: the "
        "frozen_params.json artifact) and unfreeze those that must adapt to this task (at "
        "least the task head).",
        "When fine-tuning, unfreeze the last blocks too, with a smaller learning rate.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        raw = _lookup(data, FROZEN_KEYS)
        count, names = _frozen(raw) if raw is not None else (0, [])
        if count <= 0:
            return []
        shown = names[:10] or None
        raw_count = _lookup(data, TRAINABLE_KEYS)
        trainable = _count(raw_count) if raw_count is not None else None
        if trainable == 0:
            return [
                self.finding(
                    "error",
                    f"every weight is frozen ({count} frozen, 0 trainable)",
                    param="frozen_params",
                    step=None,
                    value=count,
                    window=None,
                    frozen=shown,
                    trainable=0,
                )
            ]
        loss = data.primary("loss", "train")
        if loss is None:
            return []
        s = loss.finite()
        if len(s) < t.min_points_trend:
            return []
        initial = max(float(s.values[0]), s.initial_level(t))
        final = s.final_level(t)
        if initial == 0 or (initial - final) / abs(initial) >= t.slow_min_improvement:
            return []
        return [
            self.finding(
                "warning",
                f"{count} weight(s) frozen and {s.name} barely moved "
                f"({fmt(initial)} -> {fmt(final)})",
                metric=s.name,
                step=s.step_at(len(s) - 1),
                value=final,
                window=s.span(),
                frozen=shown,
                frozen_count=count,
                trainable=trainable,
            )
        ]
