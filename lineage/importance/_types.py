"""What kind of quantity each parameter is, inferred from the values MLflow stored.

MLflow keeps every parameter as a string, so ``"0.001"``, ``"1e-3"`` and ``"adam"`` all arrive
alike. A parameter is numeric when every present value parses as a finite number; a numeric
parameter whose values are all positive, span two decades or more and are spread on that
scale (at least a fifth of them below a tenth of the maximum) is analysed as ``log10(value)`` (a learning rate from 1e-5 to 1e-1 is a five-step scale, not a line on which
everything below 0.01 is "zero"); everything else is categorical.

Missing values (a conditional parameter that a run did not have, or MLflow's ``"None"``) stay
explicit: NaN in a numeric column, which the forest routes on its own, and a category of their
own for categoricals.

Categoricals are one-hot encoded and importance is measured by permuting *all* of a
parameter's columns together, so a parameter with twelve values is one unit of analysis, not
twelve chances to look important.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["MISSING", "Column", "EncodedParams", "ParamSpec", "encode", "infer_spec", "infer_specs"]

Column = Sequence[Any] | np.ndarray
"""One parameter's values over the runs: raw values, or floats once parsed."""

MISSING = "(missing)"
"""The category that stands for a run that did not have the parameter."""

_MISSING_STRINGS = frozenset({"", "none", "null", "nan"})
_MAX_CATEGORIES = 32  # beyond this, rare values are pooled: a one-hot block must stay small
OTHER = "(other)"
LOG_DECADES = 2.0
LOG_SHARE_BELOW_TENTH = 0.2


@dataclass(frozen=True)
class ParamSpec:
    """How one parameter is analysed.

    ``kind`` is ``"numeric"`` or ``"categorical"``; ``log`` marks a numeric parameter analysed
    on a log10 scale; ``categories`` lists a categorical's values in a stable order (most
    frequent first), ``(missing)`` included when some run lacked it.
    """

    name: str
    kind: Literal["numeric", "categorical"]
    log: bool = False
    categories: tuple[str, ...] = ()
    n_missing: int = 0

    @property
    def label(self) -> str:
        if self.kind == "categorical":
            return f"categorical ({len(self.categories)})"
        return "numeric, log" if self.log else "numeric"


def _text(values: Iterable[Any]) -> np.ndarray:
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("")
        elif isinstance(v, bool):
            out.append(str(v))
        else:
            out.append(str(v).strip())
    return np.asarray(out, dtype=str) if out else np.empty(0, dtype=str)


def _missing_mask(text: np.ndarray) -> np.ndarray:
    return np.isin(np.char.lower(text), list(_MISSING_STRINGS))


def _parse_numbers(text: np.ndarray, missing: np.ndarray) -> np.ndarray | None:
    """Floats (NaN where missing), or None when some present value is not a finite number."""
    present = text[~missing]
    if present.size == 0:
        return None
    lowered = np.char.lower(present)
    if np.isin(lowered, ["true", "false"]).any():
        return None  # True/False are two labels, not 1.0 and 0.0
    try:
        numbers = np.where(missing, "nan", text).astype(float)
    except ValueError:
        return None
    if not np.isfinite(numbers[~missing]).all():
        return None
    return numbers


def _fast_numbers(values: Column) -> np.ndarray | None:
    # The common case, every value a number, a numeric string or None, in one C-level pass.
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        numbers = values
    else:
        if bool in set(map(type, values)):
            return None  # True/False are two labels, not 1.0 and 0.0
        try:
            numbers = np.array(values, dtype=float)
        except (TypeError, ValueError):
            return None
    return numbers if numbers.ndim == 1 and not np.isinf(numbers).any() else None


def as_numbers(values: Sequence[Any]) -> Column:
    """``values`` as a float array (NaN for missing) when they are all numeric, else as
    given: parse once, then every later step reads floats."""
    numbers = _fast_numbers(values)
    return numbers if numbers is not None and not np.isnan(numbers).all() else values


def _spread_on_log(present: np.ndarray) -> bool:
    # Two decades are necessary but not enough: uniform(0, 0.5) dropout or a seed in
    # [1, 10000] span them too, with nearly every value in the top decade. A log-scale
    # parameter (log-uniform learning rate, batch sizes 16..2048) puts a good share of its
    # values below a tenth of its maximum.
    return bool(np.mean(present < present.max() / 10.0) >= LOG_SHARE_BELOW_TENTH)


def infer_spec(name: str, values: Iterable[Any] | np.ndarray) -> ParamSpec:
    """Infer one parameter's :class:`ParamSpec` from its raw values (strings, numbers, None).

    Args:
        name: the parameter's name.
        values: its value in each run, as MLflow stores them (strings) or as numbers; None where a
            run does not have it.

    Returns:
        A numeric spec (on a log scale when its positive values span ``LOG_DECADES`` decades
        or more and spread evenly on it) or a categorical one with its levels.
    """
    values = values if isinstance(values, Sequence | np.ndarray) else list(values)
    numbers = _fast_numbers(values)
    if numbers is not None and not np.isnan(numbers).all():
        missing = np.isnan(numbers)
    else:
        text = _text(values)
        missing = _missing_mask(text)
        numbers = _parse_numbers(text, missing)
    n_missing = int(missing.sum())
    if numbers is not None:
        present = numbers[~missing]
        low, high = float(present.min()), float(present.max())
        log = low > 0 and math.log10(high / low) >= LOG_DECADES and _spread_on_log(present)
        return ParamSpec(name, "numeric", log=log, n_missing=n_missing)
    levels, counts = np.unique(text[~missing], return_counts=True)
    ordered = [
        str(levels[i]) for i in sorted(range(len(levels)), key=lambda i: (-counts[i], levels[i]))
    ]
    if len(ordered) > _MAX_CATEGORIES:
        ordered = [*ordered[: _MAX_CATEGORIES - 1], OTHER]
    if n_missing:
        ordered.append(MISSING)
    return ParamSpec(name, "categorical", categories=tuple(ordered), n_missing=n_missing)


def infer_specs(columns: Mapping[str, Column]) -> list[ParamSpec]:
    """One :class:`ParamSpec` per column, in the mapping's order."""
    return [infer_spec(name, values) for name, values in columns.items()]


def numeric_values(spec: ParamSpec, values: Column) -> np.ndarray:
    """A numeric parameter's values as floats on its analysis scale, NaN where missing."""
    fast = _fast_numbers(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        if fast is not None:
            numbers = fast
        else:
            text = _text(values)
            try:
                numbers = np.where(_missing_mask(text), "nan", text).astype(float)
            except ValueError:
                numbers = np.array([_to_float(t) for t in text])
        numbers[~np.isfinite(numbers)] = np.nan
        if spec.log:
            numbers = np.where(numbers > 0, np.log10(np.where(numbers > 0, numbers, 1.0)), np.nan)
    return numbers


def _to_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def category_labels(values: Column) -> np.ndarray:
    """Each value as the category label it is analysed under (``(missing)`` for none)."""
    text = _text(values).astype(object)
    text[_missing_mask(text.astype(str))] = MISSING
    return text


def category_codes(spec: ParamSpec, values: Column) -> np.ndarray:
    """A categorical parameter's values as indices into ``spec.categories``."""
    index = {c: i for i, c in enumerate(spec.categories)}
    other = index.get(OTHER, len(spec.categories) - 1)
    return np.array([index.get(v, other) for v in category_labels(values)], dtype=np.int64)


@dataclass
class EncodedParams:
    """The design matrix a model sees, and which of its columns belong to which parameter."""

    X: np.ndarray
    specs: list[ParamSpec]
    groups: list[np.ndarray] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    missing: list[np.ndarray] = field(default_factory=list)
    """Per parameter, which runs lack it (all False for an unconditional parameter)."""


def encode(specs: Sequence[ParamSpec], columns: Mapping[str, Column]) -> EncodedParams:
    """Numeric columns as floats (NaN kept), categoricals as one-hot blocks (missing is a level).

    A two-level categorical becomes a single 0/1 column: its second column would say nothing
    the first does not.

    Args:
        specs: one spec per parameter, as :func:`infer_spec` gives them.
        columns: each parameter's values, one per run, by name.

    Returns:
        The design matrix, the columns of each parameter, and which runs lack each one.
    """
    blocks: list[np.ndarray] = []
    groups: list[np.ndarray] = []
    missing: list[np.ndarray] = []
    names: list[str] = []
    start = 0
    for spec in specs:
        values = columns[spec.name]
        if spec.kind == "numeric":
            block = numeric_values(spec, values)[:, None]
            names.append(spec.name)
            missing.append(np.isnan(block[:, 0]))
        else:
            codes = category_codes(spec, values)
            lacks = spec.categories.index(MISSING) if MISSING in spec.categories else -1
            missing.append(codes == lacks)
            levels = len(spec.categories)
            onehot = np.zeros((len(values), levels))
            onehot[np.arange(len(values)), codes] = 1.0
            if levels == 2:
                onehot = onehot[:, :1]
            block = onehot
            names.extend(f"{spec.name}={c}" for c in spec.categories[: block.shape[1]])
        blocks.append(block)
        groups.append(np.arange(start, start + block.shape[1]))
        start += block.shape[1]
    n = len(next(iter(columns.values()))) if columns else 0
    X = np.hstack(blocks) if blocks else np.empty((n, 0))
    return EncodedParams(X=X, specs=list(specs), groups=groups, columns=names, missing=missing)
