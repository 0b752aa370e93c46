"""What the controller tracks per trial, what a campaign returns, and who watches it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tuner.campaign._state import TrialState
from tuner.schedulers import Continue, Pause, Stop

if TYPE_CHECKING:
    import optuna

    from tuner.collectors import Collector
    from tuner.config import CampaignConfig
    from tuner.coordination import Spent
    from tuner.executors import TrialHandle

__all__ = ["CampaignResult", "CampaignView", "Observer", "Prepared", "RunningTrial"]


@dataclass
class RunningTrial:
    """One attempt in flight, as the controller tracks it."""

    trial: optuna.Trial
    handle: TrialHandle
    params: dict[str, Any]
    attempt: int
    run_id: str | None
    collectors: list[Collector]
    device: str
    state: TrialState = TrialState.RUNNING
    latest: dict[str, float] = field(default_factory=dict)
    history: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)
    reported_steps: set[int] = field(default_factory=set)
    #: The checkpoint step a continuation resumed from: its reports up to there are its
    #: parent's, copied; one it repeats (a script that evaluates its last checkpoint again)
    #: is not recorded twice.
    resumed_step: int | None = None
    #: A continuation's ancestors' MLflow runs, nearest first: at its end their series are
    #: carried into its run below the steps it recorded (`tuner.records.carry_history`).
    carry_from: tuple[str, ...] = ()
    #: Another controller re-queued this trial while it ran (the study holds it as ended):
    #: nothing more is told about it, and its process is stopped.
    superseded: bool = False
    last_check: float = 0.0
    #: The decision that stops this attempt, once one took effect (`tuner.campaign` applies
    #: decisions in one place, `Decisions`); None while it goes on.
    decided: Stop | Continue | None = None
    #: A pause waiting for the checkpoint of its step, and until when it waits.
    pending: Pause | None = None
    pending_until: float = 0.0
    #: Secret values the attempt received (argv flags, env); masked out of its output and
    #: fail reason before they are recorded.
    secrets: frozenset[str] = frozenset()

    @property
    def number(self) -> int:
        return int(self.trial.number)

    @property
    def prune_reason(self) -> str | None:
        """Why the attempt is told PRUNED (None while no decision stopped it)."""
        return None if self.decided is None else self.decided.reason

    @property
    def end_attrs(self) -> Mapping[str, Any]:
        """User attributes set on the trial just before it is told PRUNED (a scheduler's pause
        or exploit: ``tuner.paused_at``, ``tuner.exploited_at``)."""
        return {} if self.decided is None else self.decided.attrs

    @property
    def counted(self) -> bool:
        """False once a scheduler made another trial count for this one (a PBT exploit)."""
        return not isinstance(self.decided, Continue)


@dataclass
class Prepared:
    """A trial asked for (parameters fixed) but not started yet."""

    trial: optuna.Trial
    params: dict[str, Any]
    seconds: float


@dataclass
class CampaignResult:
    """What a finished (or stopped) campaign reached."""

    counts: dict[str, int]
    finished: int
    budget: int | None
    best: dict[str, Any] | None
    stop_reason: str | None = None
    parent_run_id: str | None = None
    experiment_id: str | None = None
    importance: str | None = None
    lineage_errors: dict[str, str] = field(default_factory=dict)


class CampaignView(Protocol):
    """What an observer reads of a running campaign (the controller provides it)."""

    @property
    def config(self) -> CampaignConfig: ...

    @property
    def budget(self) -> int | None: ...

    def spent(self) -> Spent:
        """What the study's trials spent: counted trials, reported steps, device-hours."""
        ...

    @property
    def counts(self) -> Mapping[str, int]: ...

    @property
    def failures(self) -> int: ...

    def study_counts(self) -> Mapping[str, int]:
        """The study's counted trials by final state, whichever controller ran them."""
        ...

    @property
    def running(self) -> Mapping[int, RunningTrial]: ...

    @property
    def study(self) -> optuna.Study | None: ...

    def best(self) -> dict[str, Any] | None: ...


class Observer:
    """Receives progress; the CLI's live view implements it. Called from the controller thread."""

    def update(self, controller: CampaignView) -> None:
        """The state changed (throttled by the controller to a few calls a second)."""

    def message(self, text: str) -> None:
        """A one-line event worth showing (a failure, a stop)."""
