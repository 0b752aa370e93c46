"""Which direction is better for a metric, guessed from its name."""

from __future__ import annotations

import re

# Names that are errors or costs: lower is better. Everything else (accuracy, f1, auc,
# reward, ...) is taken as higher-is-better.
_LOWER_IS_BETTER = re.compile(r"loss|err|mse|mae|rmse|perplexity|ppl|wer|cer|latency|regret")


def metric_goal(name: str) -> str:
    """``"min"`` for names containing loss, error, err (and mse, mae, perplexity, ...),
    else ``"max"``."""
    return "min" if _LOWER_IS_BETTER.search(name.lower()) else "max"
