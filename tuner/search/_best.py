"""Which finished trials are a campaign's best: one rule for `tuner run`'s result and
`tuner status`, which read trials through different paths (Optuna; the study's tables)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["best_numbers"]


def best_numbers(
    trials: Iterable[tuple[int, Sequence[float]]], maximize: Sequence[bool]
) -> list[int]:
    """The numbers of the best of ``trials`` (``(number, values)`` pairs, values in the
    order of ``maximize``), ascending. One objective: the best value, the lowest number of
    equals. Several: the Pareto front, every trial no other is at least as good as in every
    objective and better in one; trials with equal values are all on it (as Optuna's
    ``best_trials``)."""
    keyed = [
        (tuple(-v if up else v for v, up in zip(values, maximize, strict=True)), n)
        for n, values in trials
    ]
    if not keyed:
        return []
    if len(maximize) == 1:
        return [min(keyed)[1]]
    return sorted(
        n
        for k, n in keyed
        if not any(all(x <= y for x, y in zip(o, k, strict=True)) and o != k for o, _ in keyed)
    )
