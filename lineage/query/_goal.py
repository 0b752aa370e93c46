"""Which direction is better for a metric, guessed from its name."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# Names that are errors or costs: lower is better. Everything else (accuracy, f1, auc,
# reward, ...) is taken as higher-is-better.
_LOWER_IS_BETTER = re.compile(r"loss|err|mse|mae|rmse|perplexity|ppl|wer|cer|latency|regret")


def metric_goal(name: str) -> str:
    """``"min"`` for names containing loss, error, err (and mse, mae, perplexity, ...),
    else ``"max"``."""
    return "min" if _LOWER_IS_BETTER.search(name.lower()) else "max"


def best_position(
    values: Sequence[float], goal: str, starts: Sequence[int | None] | None = None
) -> int:
    """The position of the best of ``values`` for ``goal`` (``min``/``minimize`` or
    ``max``/``maximize``). Among equal values the earliest run wins: the smallest of
    ``starts`` (start times), else the first position. The tuner's rule (``tuner status``:
    the lowest trial number of equals), so that every report names the same best."""
    if not values:
        raise ValueError("best_position needs at least one value")
    sign = -1.0 if goal.lower().startswith("max") else 1.0
    far = float("inf")

    def key(i: int) -> tuple[float, float, int]:
        start = starts[i] if starts is not None else None
        return (sign * float(values[i]), far if start is None else float(start), i)

    return min(range(len(values)), key=key)
