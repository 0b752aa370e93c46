"""The search space as a study records it, and what changed between two of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tuner.config._types import format_value

if TYPE_CHECKING:
    from tuner.config._model import CampaignConfig

__all__ = ["space_difference", "space_spec"]


def space_spec(config: CampaignConfig) -> dict[str, dict[str, Any]]:
    """The search space as the YAML wrote it (defaults left out), JSON-ready: what a study
    records so that a later run of the campaign can tell whether its space changed."""
    return {
        name: param.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        for name, param in config.parameters.items()
    }


def space_difference(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """What changed from ``old`` to ``new`` (two `space_spec`), one short phrase each:
    ``x.high 1.0 -> 2.0``, ``lr added``, ``wd removed``; [] when they are the same."""
    out: list[str] = []
    for name, spec in new.items():
        if name not in old:
            out.append(f"{name} added")
            continue
        before = old[name]
        for key in [*before, *(k for k in spec if k not in before)]:
            a, b = before.get(key, _default(key)), spec.get(key, _default(key))
            if a != b:
                out.append(f"{name}.{key} {format_value(a)} -> {format_value(b)}")
    out.extend(f"{name} removed" for name in old if name not in new)
    return out


def _default(key: str) -> Any:
    from tuner.config._parameter import Parameter

    field = Parameter.model_fields.get(key)
    return None if field is None or field.is_required() else field.default
