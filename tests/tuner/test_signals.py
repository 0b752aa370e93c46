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
