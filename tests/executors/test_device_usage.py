"""The campaign's device-hours and occupancy, from its trials' placements (plain records)."""

from __future__ import annotations

import pytest

from tuner.records import device_usage, device_usage_tags


def test_device_hours_count_busy_time_once_and_occupancy_is_trials_at_once() -> None:
    placements = [
        {"device": "gpu:0", "started": 0.0, "duration": 3600.0},
        {"device": "gpu:0", "started": 1800.0, "duration": 3600.0},  # overlaps by half
        {"device": "gpu:1,2", "started": 0.0, "duration": 1800.0},  # two devices, half hour
        {"device": "cpu#0", "started": 0.0, "duration": 3600.0},  # no device
        {},  # a trial that never ran
    ]
    usage = device_usage(placements)
    assert usage == {
        "gpu:0": (5400.0, 7200.0),
        "gpu:1": (1800.0, 1800.0),
        "gpu:2": (1800.0, 1800.0),
    }
    tags = device_usage_tags(placements)
    assert float(tags["tuner.device_hours"]) == pytest.approx(2.5)
    assert tags["tuner.occupancy.gpu:0"] == "1.33"
    assert tags["tuner.occupancy.gpu:1"] == "1.00"
    assert device_usage_tags([{"device": "cpu#1", "started": 0.0, "duration": 5.0}]) == {}


def test_ray_labels_keep_their_host() -> None:
    usage = device_usage([{"device": "ray:gpu:0@node-a", "started": 10.0, "duration": 5.0}])
    assert usage == {"gpu:0@node-a": (5.0, 5.0)}
