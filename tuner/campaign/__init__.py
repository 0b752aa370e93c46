"""The campaign: the controller's loop and what it decides.

The `Controller` asks for trials, launches them on executor slots (``_launch``), takes in
their metrics and prunes (``_intake``), judges how each attempt ended and tells Optuna
(``_outcome``), tracks each attempt's lifecycle (``_state``, ``_running``), shows
progress (``_progress``), closes every MLflow run of the campaign however it ends
(``_closing``) and says what it reached (``_result``). Its parts are built from the config
sections they read (``_parts``). ``tuner worker`` runs rounds of the same controller on a
shared study (``_worker``).
"""

from __future__ import annotations

from tuner.campaign._controller import Controller
from tuner.campaign._progress import RichObserver
from tuner.campaign._running import CampaignResult, Observer, RunningTrial
from tuner.campaign._state import IllegalTransition, TrialState
from tuner.campaign._worker import WorkerResult, run_worker

__all__ = [
    "CampaignResult",
    "Controller",
    "IllegalTransition",
    "Observer",
    "RichObserver",
    "RunningTrial",
    "TrialState",
    "WorkerResult",
    "run_worker",
]
