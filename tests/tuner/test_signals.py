"""The controller's signal shield gives back the handlers it found."""

from __future__ import annotations

import signal
from typing import Any

from tuner.campaign._signals import cleanup_shielded


def test_cleanup_shield_ignores_signals_inside_and_restores_the_handlers_after() -> None:
    def mine(_signum: int, _frame: Any) -> None:
        return None

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    signal.signal(signal.SIGTERM, mine)
    try:
        with cleanup_shielded():
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                assert signal.getsignal(sig) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGHUP) == before[signal.SIGHUP]
        assert signal.getsignal(signal.SIGINT) == before[signal.SIGINT]
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_a_stop_signal_waits_for_a_safe_point_and_a_sleep_is_one() -> None:
    import os
    import time

    import pytest

    from tuner.campaign._signals import (
        Interrupted,
        interruptible,
        raise_pending,
        terminate_interrupts,
    )

    with terminate_interrupts(True):
        os.kill(os.getpid(), signal.SIGTERM)
        # Noted, not raised: the code between two safe points runs on.
        with pytest.raises(Interrupted):
            raise_pending()
        raise_pending()  # raised once
    with terminate_interrupts(True), pytest.raises(KeyboardInterrupt), interruptible():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # cut short by the signal


def test_release_frames_lets_go_of_the_read_lock_a_cut_short_query_held(tmp_path: Any) -> None:
    """A stop raised in the middle of a read keeps the read's statement open in the
    exception's frames, and with it SQLite's shared lock: another connection cannot commit
    until they are cleared."""
    import sqlite3

    from tuner.campaign._signals import Interrupted, release_frames

    path = tmp_path / "store.db"
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("CREATE TABLE t (x INTEGER)")
    setup.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    setup.close()
    reader = sqlite3.connect(path, isolation_level=None)

    def read() -> None:
        cursor = reader.execute("SELECT x FROM t")  # as a driver's result object holds it
        for (x,) in cursor:
            if x == 10:
                raise Interrupted(signal.SIGTERM)

    def commit() -> str:
        writer = sqlite3.connect(path, isolation_level=None, timeout=0.1)
        try:
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("UPDATE t SET x = x + 1 WHERE x = 1")
            writer.execute("COMMIT")
            return "committed"
        except sqlite3.OperationalError as exc:
            return str(exc)
        finally:
            writer.close()

    try:
        read()
    except Interrupted as exc:
        assert commit() == "database is locked"
        release_frames(exc)
        assert commit() == "committed"
