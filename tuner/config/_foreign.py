"""Configs of other tools handed to ``tuner validate`` / ``tuner run``: recognized, so the
error names the command that converts them (``tuner.compat`` does the converting)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["is_mindoptimizer_config", "mindoptimizer_message"]


def is_mindoptimizer_config(raw: Any) -> bool:
    """True when ``raw`` (a parsed YAML document) is a MindInsight mindoptimizer config.

    Two of its marks must be present: a top-level ``summary_base_dir``, a top-level ``tuner``,
    a ``target`` with ``name``/``group`` (a campaign's has ``metric``), a parameter with
    ``bounds``/``choice``/``source`` (a campaign's have ``low``/``high``/``choices``). One mark
    alone could be a typo in a campaign.
    """
    if not isinstance(raw, Mapping):
        return False
    marks = 0
    marks += "summary_base_dir" in raw
    marks += "tuner" in raw
    target = raw.get("target")
    if (
        isinstance(target, Mapping)
        and "metric" not in target
        and ("name" in target or "group" in target)
    ):
        marks += 1
    params = raw.get("parameters")
    if isinstance(params, Mapping) and any(
        isinstance(p, Mapping) and ({"bounds", "choice", "source"} & set(p))
        for p in params.values()
    ):
        marks += 1
    return marks >= 2


def mindoptimizer_message(path: str) -> str:
    """One line for ``ConfigError``: what the file is, and the command that converts it."""
    return (
        f"{path}: is a MindInsight mindoptimizer config (summary_base_dir, tuner, "
        f"bounds/choice), not a campaign; convert it with: "
        f"tuner convert mindinsight {path} -o campaign.yaml"
    )
