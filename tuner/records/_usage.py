"""The campaign's use of its devices, from each trial's placement (`placement_attr`): the
device-hours it held and how many trials each device ran at once on average."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tuner.records import _tags as T

__all__ = ["device_usage", "device_usage_tags"]

# ``gpu:0``, ``gpu:0,1``, ``npu:3``, ``gpu:MIG-...``; Ray's ``ray:gpu:0@host``; not ``cpu#0``.
_LABEL = re.compile(r"^(?:ray:)?(gpu|npu):([^@]*)(@.*)?$")


def _devices(label: str) -> list[str]:
    m = _LABEL.match(label)
    if m is None:
        return []
    return [
        f"{m.group(1)}:{d}{m.group(3) or ''}" for d in m.group(2).split(",") if d not in ("", "-")
    ]


def _busy(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(spans):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def device_usage(placements: Iterable[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """``{device: (busy seconds, trial seconds)}``: the time it held at least one trial, and
    the sum of its trials' durations (their ratio is its mean occupancy while busy)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for p in placements:
        started, duration = p.get("started"), p.get("duration")
        if not isinstance(started, int | float) or not isinstance(duration, int | float):
            continue
        for device in _devices(str(p.get("device", ""))):
            spans.setdefault(device, []).append((started, started + max(duration, 0.0)))
    return {d: (_busy(s), sum(b - a for a, b in s)) for d, s in spans.items()}


def device_usage_tags(placements: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``tuner.device_hours`` and ``tuner.occupancy.<device>`` of the campaign's run; none for
    a campaign on CPU slots."""
    usage = device_usage(placements)
    if not usage:
        return {}
    tags = {T.DEVICE_HOURS: f"{sum(b for b, _ in usage.values()) / 3600:.4f}"}
    for device, (busy, held) in sorted(usage.items()):
        if busy > 0:
            tags[f"{T.OCCUPANCY_PREFIX}{device}"] = f"{held / busy:.2f}"
    return tags
