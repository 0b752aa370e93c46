"""What every recorder writes about its data the same way: the metric names of a sampled
column, the transforms that keep a value range, and the policy for what fails on the way."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from lineage import tags as T

__all__ = ["SAME_RANGE_OPS", "error_line", "metric_key", "noting_errors"]

SAME_RANGE_OPS = frozenset(
    {
        "HwcToChw",
        "HWC2CHW",
        "TypeCast",
        "Resize",
        "RandomResize",
        "CenterCrop",
        "RandomCrop",
        "RandomResizedCrop",
        "RandomHorizontalFlip",
        "RandomVerticalFlip",
        "RandomRotation",
        "Rotate",
        "Pad",
        "Crop",
        "Grayscale",
    }
)
"""Transforms (torchvision's, MindSpore's vision ops) that move or resample values without
changing their range: a value range a pipeline implies passes through them unchanged."""


def metric_key(role: str, column: str, stat: str) -> str:
    """``data.<role>.<column>.<stat>`` with the column name made safe for MLflow.

    Args:
        role: the data's role in the key (``train``, ``val``, ...), used as given.
        column: the sampled column's name; each run of characters other than letters, digits,
            ``_`` and ``-`` becomes ``_``, outer ``_`` are stripped, and an empty result is
            ``column``.
        stat: the statistic's name, the key's last part, used as given.

    Returns:
        The metric key.
    """
    safe = re.sub(r"[^A-Za-z0-9_\-]+", "_", column).strip("_") or "column"
    return f"data.{role}.{safe}.{stat}"


def error_line(exc: BaseException) -> str:
    """An exception as the one short line an error tag holds: its type and the first line
    of its message.

    Args:
        exc: the exception to describe.

    Returns:
        ``<type name>: <first line of the message, at most 300 characters>`` (nothing after
        ``: `` when the message is empty).
    """
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


@contextlib.contextmanager
def noting_errors(run: Any, role: str, field: str) -> Iterator[None]:
    """A picture or a sample is never worth a failed training: an ``Exception`` raised in
    the block becomes the tag ``lineage.data.<role>.<field>`` (`error_line`) instead.

    Args:
        run: the run the tag is set on (anything with ``set_tags``).
        role: the data's role (``train``, ``val``), the tag name's middle part.
        field: the tag name's last part, naming what failed (``graph_error``,
            ``sample_error``).

    Returns:
        A context manager; it swallows an ``Exception`` raised in its block (not a
        ``BaseException`` such as ``KeyboardInterrupt``, which propagates).
    """
    try:
        yield
    except Exception as exc:  # recorded as the tag; the training goes on
        run.set_tags({T.data_tag(role, field): error_line(exc)})
