"""Coordination: how controllers share a study (or do not), and survive each other's death.

One small interface, `Coordination`, with two implementations injected into the one
controller: `Standalone` (``tuner run`` / ``tuner resume``) and `SharedStudy`
(``tuner worker``). Below them: the study lock, the exact budget, heartbeats, the recovery of
trials a dead controller left, and the campaign's local state folder.
"""

from __future__ import annotations

from tuner.coordination._base import Coordination, StudySite
from tuner.coordination._budget import (
    Limits,
    Spent,
    ask_within_budget,
    counted_trials,
    own_steps,
    running_seconds,
    spent_of,
)
from tuner.coordination._campaign_dir import CampaignDir
from tuner.coordination._heartbeat import (
    Heartbeat,
    default_timing,
    heartbeat_storage,
    heartbeat_timing,
    live_trial_ids,
)
from tuner.coordination._lock import StudyLock
from tuner.coordination._recovery import (
    recover_stale,
    requeue_and_close,
    requeue_stale,
    supersede,
)
from tuner.coordination._shared import SharedStudy
from tuner.coordination._standalone import Standalone

__all__ = [
    "CampaignDir",
    "Coordination",
    "Heartbeat",
    "Limits",
    "SharedStudy",
    "Spent",
    "Standalone",
    "StudyLock",
    "StudySite",
    "ask_within_budget",
    "counted_trials",
    "default_timing",
    "heartbeat_storage",
    "heartbeat_timing",
    "live_trial_ids",
    "own_steps",
    "recover_stale",
    "requeue_and_close",
    "requeue_stale",
    "running_seconds",
    "spent_of",
    "supersede",
]
