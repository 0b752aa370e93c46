"""Warm parents live in the controller's process tree, and none of them, nor any trial they
forked, outlives a kill -9 of the controller beyond what `tuner resume` ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tuner.test_resume import SCRIPT, _poll, _start, _wait_for_pids
from tuner.executors._procs import identity, is_alive

pytestmark = pytest.mark.slow


def _ppid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        pid = _ppid(pid)
        chain.append(pid)
    return chain


def test_warm_parents_are_the_controllers_and_end_after_its_kill_9(
    campaign, tmp_path: Path, cli
) -> None:
    config = campaign(
        SCRIPT, budget={"trials": 2}, resources={"parallel": 2}, trial={"grace_period": 1}
    )
    (tmp_path / "slow").touch()
    controller = _start(tmp_path)
    try:
        trials = _wait_for_pids(tmp_path, 2, config)
        parents = [_ppid(p) for p in trials]
        # Two slots, two warm parents: the second slot's is a copy of the first's.
        assert len(set(parents)) == 2 and controller.pid not in trials
        for parent in parents:
            assert b"_forkserver_main" in Path(f"/proc/{parent}/cmdline").read_bytes()
            assert controller.pid in _ancestors(parent), (parent, _ancestors(parent))
        watched = [identity(p) for p in (*parents, *trials)]
    finally:
        controller.kill()  # kill -9, also when a check above failed
        controller.wait(60)
    (tmp_path / "slow").unlink()
    rc, _, err = cli("resume", "campaign.yaml", "--quiet")
    assert rc == 0, err
    # resume ends the orphaned trials; their parents, whose controller is gone, end with them.
    _poll(lambda: not any(is_alive(w) for w in watched), "a warm parent or trial survived", 30)
