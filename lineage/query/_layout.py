"""The run table a person reads: which columns ``lineage runs`` shows, and how many fit.

A store's runs easily hold 50 params and metrics; a table of all of them has empty cells at
any terminal width. :func:`table_layout` picks, in this order of priority: the run's name,
id, status and start time (and its experiment when several are selected); the target metrics
(a tuning campaign's target and objectives, else the metric most runs have); the parameters
that vary across the selected training runs, the most important first (by the newest
importance analysis among the runs, else by how many values they take), one column per
setting (a callback's ``optimizer.lr`` beside ``lr``); the other metrics, those that differ
between runs first, most common first. On a campaign's runs the tuned parameters come before
the start time, and the other varying parameters (derived ones, such as steps per epoch)
after the metrics. Then as many as fit ``width`` characters, each cell cut to a readable
width, shown in reading order: id and name, the target metrics, the parameters, status
and start, the other metrics. What is left out is returned, for the caller to say so.
``--format json`` and ``csv`` keep every column.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from lineage.query._fields import Field, to_number
from lineage.query._focus import Focus, focus_of, importance_ranking
from lineage.query._table import is_training
from lineage.store import RunRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Columns between cells.
GAP = 2
#: The widest a param or metric cell gets in a fitted table (run names: NAME_WIDTH).
CELL_WIDTH = 16
NAME_WIDTH = 24


class Layout:
    """``fields`` to show, in display order, with their ``widths``; ``hidden``: the params
    and metrics of the selected runs that are not shown."""

    __slots__ = ("fields", "hidden", "widths")

    def __init__(self, fields: list[Field], widths: list[int], hidden: list[Field]) -> None:
        self.fields = fields
        self.widths = widths
        self.hidden = hidden


def candidate_columns(runs: Sequence[RunRecord], focus: Focus | None = None) -> list[Field]:
    """Every column worth showing, most wanted first (see the module docstring). ``focus``:
    what the runs' experiments optimise (:func:`~lineage.query.experiment_focus`), read
    from the runs themselves when not given."""
    training = [r for r in runs if is_training(r)] or list(runs)
    base = [Field("attributes", k) for k in ("run_name", "run_id", "status", "start_time")]
    if len({r.experiment_id for r in runs}) > 1:
        base.append(Field("attributes", "experiment"))
    if focus is None:
        focus = focus_of(runs)
    targets = focus.metrics
    shown = {r.run_id for r in runs}
    importance = importance_ranking(
        [*runs, *(r for r in focus.records if r.run_id not in shown)], targets
    )
    metrics = _metrics_by_use(training, targets)
    varying = _varying(training)
    ranked = _by_weight(varying, training, importance)
    tuned = _by_weight(
        [k for k in focus.tuned if any(k in r.params for r in training)], training, importance
    )
    params = _one_per_alias(tuned + [k for k in ranked if k not in tuned], training)
    lead = [k for k in targets if k in metrics] or metrics[:1]
    out = base + [Field("metrics", k) for k in lead]
    if tuned:
        # A campaign's table: its tuned params, most important first, then the start time
        # (the trial number is in the name), the other metrics, and last the params the
        # script derived or recorded beside them (steps per epoch, a model's size).
        start = out.pop(3)
        out += [Field("params", k) for k in params if k in tuned] + [start]
        out += [Field("metrics", k) for k in metrics if k not in lead]
        out += [Field("params", k) for k in params if k not in tuned]
        return out
    out += [Field("params", k) for k in params]
    out += [Field("metrics", k) for k in metrics if k not in lead]
    return out


def _by_weight(
    keys: Sequence[str], runs: Sequence[RunRecord], importance: dict[str, float]
) -> list[str]:
    """``keys``, those an importance analysis ranked first (most important first), then
    the others by how many values they take among ``runs`` (most first), ties in order."""
    counts: dict[str, set[Any]] = {}
    for run in runs:
        for key in keys:
            raw = run.params.get(key)
            if raw is not None:
                number = to_number(raw)
                counts.setdefault(key, set()).add(raw if number is None else number)
    position = {k: i for i, k in enumerate(keys)}
    return sorted(
        keys,
        key=lambda k: (
            k not in importance,
            -importance.get(k, 0.0),
            -len(counts.get(k, ())),
            position[k],
        ),
    )


def table_layout(
    runs: Sequence[RunRecord],
    render: Callable[[Field, Any], str],
    headers: Callable[[Sequence[Field]], list[str]],
    width: int | None,
    value: Callable[[Field, RunRecord], Any] | None = None,
    focus: Focus | None = None,
) -> Layout:
    """The columns of :func:`candidate_columns` that fit in ``width`` characters (``None``:
    all of them, cells uncut). ``render(field, value)`` gives a cell's text, ``headers``
    the column titles of a list of fields, ``value(field, run)`` a cell's value (default:
    the field's own); ``focus``: as in :func:`candidate_columns`."""
    get = value or (lambda field, run: field.value(run))
    wanted = candidate_columns(runs, focus)
    titles = headers(wanted)
    natural = []
    # Fitted, the name column is as wide as the training runs' names: a campaign's or an
    # analysis's longer name, listed apart, is cut rather than widening every row.
    training = [r for r in runs if is_training(r)] if width is not None else []
    for field, title in zip(wanted, titles, strict=True):
        sized = training if training and field.key == "run_name" else runs
        cells = max((len(render(field, get(field, r))) for r in sized), default=0)
        natural.append(max(len(title), cells))
    if width is None:
        chosen = list(range(len(wanted)))
        widths = natural
    else:
        widths = [min(w, _cap(f)) for f, w in zip(wanted, natural, strict=True)]
        # The run name is always shown (cut to the width if need be); then, greedily in
        # priority order, every column that still fits: a wide one that does not leaves
        # room for narrower ones after it.
        widths[0] = min(widths[0], max(width, 8))
        chosen, used = [0], widths[0]
        for i in range(1, len(wanted)):
            if used + GAP + widths[i] <= width:
                chosen.append(i)
                used += GAP + widths[i]
    first_param = next((i for i, f in enumerate(wanted) if f.kind == "params"), len(wanted))
    order = sorted(chosen, key=lambda i: _display_rank(wanted[i], i, first_param))
    fields = [wanted[i] for i in order]
    shown = set(fields)
    every = _all_keys(runs)
    hidden = [f for f in every if f not in shown]
    return Layout(fields, [widths[i] for i in order], hidden)


def _cap(field: Field) -> int:
    if field.kind == "attributes":
        return NAME_WIDTH if field.key in ("run_name", "experiment") else 19
    return CELL_WIDTH


def _display_rank(field: Field, priority: int, first_param: int) -> tuple[int, int]:
    # The run's id and name, the target metrics (ranked before any param), the params, the
    # run's status and start, then the other metrics, each in priority order: the answer a
    # reader came for sits right after the name.
    fixed = ("run_id", "run_name", "experiment")
    later = ("status", "start_time")
    if field.kind == "attributes":
        if field.key in later:
            return (3, later.index(field.key))
        return (0, fixed.index(field.key) if field.key in fixed else len(fixed))
    if field.kind == "params":
        return (2, priority)
    return (1 if priority < first_param else 4, priority)


def _metrics_by_use(runs: Sequence[RunRecord], first: Sequence[str]) -> list[str]:
    """``first``, then the metrics that differ between runs, then those that do not (a
    dataset's size, logged as a metric by every run, tells the runs nothing apart), each
    most common first."""
    counts: dict[str, int] = {}
    values: dict[str, set[float]] = {}
    for run in runs:
        for key, value in run.metrics.items():
            counts[key] = counts.get(key, 0) + 1
            values.setdefault(key, set()).add(value)
    varies = len(runs) < 2
    # A dataset's statistics (``data.train.image.mean``) describe the input, not the
    # training: after the metrics that do.
    ranked = sorted(
        counts,
        key=lambda k: (k.startswith("data."), not varies and len(values[k]) < 2, -counts[k], k),
    )
    return [k for k in first if k in counts] + [k for k in ranked if k not in first]


def _varying(runs: Sequence[RunRecord]) -> list[str]:
    """Params with at least two different values among the runs that have them (``0.1``
    and ``0.10`` are one value); every param when fewer than two runs are selected."""
    if len(runs) < 2:
        return sorted({k for r in runs for k in r.params})
    seen: dict[str, set[Any]] = {}
    for run in runs:
        for key, value in run.params.items():
            number = to_number(value)
            seen.setdefault(key, set()).add(value if number is None else number)
    return sorted(k for k, values in seen.items() if len(values) > 1)


def _one_per_alias(keys: Sequence[str], runs: Sequence[RunRecord]) -> list[str]:
    """``keys`` without the aliases of an earlier one: one column each. A later key is an
    alias when it names the earlier one's setting (``optimizer.lr`` or ``optimizer.name``
    after ``lr`` and ``optimizer``, as a framework callback records what the script also
    logged) and agrees with it wherever both are set, as text without case (``Momentum``
    and ``momentum``) or as numbers (0.0010000000474974513 is 0.001 in float32); or when,
    whatever its name, it equals the earlier one in every run that has both, at least two."""

    def column(key: str) -> tuple[Any, ...]:
        values = []
        for run in runs:
            raw = run.params.get(key)
            number = to_number(raw) if raw is not None else None
            values.append(raw if number is None else number)
        return tuple(values)

    def named(earlier: str, later: str) -> bool:
        head, _, tail = later.rpartition(".")
        return bool(head) and (
            tail == earlier.rpartition(".")[2] or (tail == "name" and head == earlier)
        )

    def agree(earlier: tuple[Any, ...], later: tuple[Any, ...], least: int) -> bool:
        # Compared where both are set: a continuation or a run without the callback lacks
        # the recorded one; a callback also records defaults a script left unset.
        both = [
            (a, b) for a, b in zip(earlier, later, strict=True) if a is not None and b is not None
        ]
        return len(both) >= least and all(_same(a, b) for a, b in both)

    kept: list[tuple[str, tuple[Any, ...]]] = []
    for key in keys:
        values = column(key)
        if not any(agree(earlier, values, 1 if named(name, key) else 2) for name, earlier in kept):
            kept.append((key, values))
    return [key for key, _ in kept]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=0.0)
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    return bool(a == b)


def _all_keys(runs: Sequence[RunRecord]) -> list[Field]:
    params = sorted({k for r in runs for k in r.params})
    metrics = sorted({k for r in runs for k in r.metrics})
    return [Field("params", k) for k in params] + [Field("metrics", k) for k in metrics]


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    widths: Sequence[int],
    numeric: Sequence[bool],
) -> list[str]:
    """Plain text lines: a header, then the rows; cells cut to ``widths`` with ``…``, numbers
    right-aligned. No colour, no rule, no control characters: the same in a terminal, a file
    and a pipe, one line per run for ``grep`` and ``awk``."""

    def cell(text: str, w: int, right: bool) -> str:
        if len(text) > w:
            text = text[: max(w - 1, 0)] + "…" if w > 0 else ""
        return text.rjust(w) if right else text.ljust(w)

    sep = " " * GAP
    lines = [
        sep.join(cell(h, w, r) for h, w, r in zip(headers, widths, numeric, strict=True)).rstrip(),
    ]
    for row in rows:
        lines.append(
            sep.join(cell(c, w, r) for c, w, r in zip(row, widths, numeric, strict=True)).rstrip()
        )
    return lines
