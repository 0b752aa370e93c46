"""One rule for heartbeat timing, the same for `tuner run`, `resume` and `worker`: flags, then
the environment, then the config's ``heartbeat:`` section, then the defaults."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tuner.cli import main
from tuner.config import HeartbeatConfig
from tuner.coordination import heartbeat_timing


def test_flags_beat_environment_beat_config_beat_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TUNER_HEARTBEAT_INTERVAL", raising=False)
    monkeypatch.delenv("TUNER_HEARTBEAT_GRACE", raising=False)
    section = HeartbeatConfig(interval=2, grace=9)
    assert heartbeat_timing() == (5, 30)
    assert heartbeat_timing(section=HeartbeatConfig(interval=20)) == (20, 60)
    assert heartbeat_timing(section=section) == (2, 9)
    monkeypatch.setenv("TUNER_HEARTBEAT_INTERVAL", "3")
    monkeypatch.setenv("TUNER_HEARTBEAT_GRACE", "11")
    assert heartbeat_timing(section=section) == (3, 11)
    assert heartbeat_timing(1, 4, section=section) == (1, 4)


def test_a_grace_not_after_the_interval_is_one_line(
    write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from _campaign_base import base_config

    write_config({**base_config(), "heartbeat": {"interval": 10, "grace": 10}})
    assert main(["validate", "c.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("c.yaml: heartbeat.grace must be > interval (10), got 10.")


@pytest.mark.parametrize("command", ["run", "resume", "worker"])
def test_every_controller_takes_the_same_flags(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "c.yaml", "--heartbeat", "5", "--stale-after", "5"]) == 2
    assert "--stale-after must be > --heartbeat (5), got 5" in capsys.readouterr().err


def test_the_resolved_pair_is_checked_wherever_each_value_came_from(
    write_config: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from _campaign_base import base_config

    monkeypatch.delenv("TUNER_HEARTBEAT_INTERVAL", raising=False)
    monkeypatch.delenv("TUNER_HEARTBEAT_GRACE", raising=False)
    # A grace in the config below the default interval: every live trial would look stale.
    write_config({**base_config(), "heartbeat": {"grace": 3}})
    for argv in (["validate", "c.yaml"], ["run", "c.yaml"], ["worker", "c.yaml"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(
            "c.yaml: the heartbeat grace (heartbeat.grace) must be > the heartbeat interval "
            "5 s (the default), got 3"
        ), err
        assert "Traceback" not in err
    # A flag against the config.
    write_config({**base_config(), "heartbeat": {"grace": 8}})
    assert main(["resume", "c.yaml", "--heartbeat", "10"]) == 2
    assert "the heartbeat grace (heartbeat.grace) must be > the heartbeat interval 10 s " in (
        capsys.readouterr().err
    )
    # The environment against the config, and an environment value that is no number.
    monkeypatch.setenv("TUNER_HEARTBEAT_INTERVAL", "9")
    assert main(["validate", "c.yaml"]) == 2
    assert "interval 9 s (TUNER_HEARTBEAT_INTERVAL), got 8" in capsys.readouterr().err
    monkeypatch.setenv("TUNER_HEARTBEAT_INTERVAL", "soon")
    assert main(["validate", "c.yaml"]) == 2
    err = capsys.readouterr().err
    assert "TUNER_HEARTBEAT_INTERVAL must be a whole number of seconds >= 1, got 'soon'" in err
