"""The coordination interface: how one controller shares its study with others, or does not.

A `tuner.campaign.Controller` runs the same loop whether it is the campaign's only
controller (``tuner run`` / ``tuner resume``: `Standalone`) or one of several controllers
on a shared study (``tuner worker``: `SharedStudy`). What differs is injected as a
`Coordination`: where its local state lives, how its study storage is opened, what is
locked while the study and its records are created, how trials left RUNNING by a dead
controller are recovered, and how a new trial is taken within the exact budget.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.coordination._campaign_dir import CampaignDir
from tuner.coordination._heartbeat import heartbeat_timing, live_trial_ids

if TYPE_CHECKING:
    import optuna

    from tuner.config import CampaignConfig, HeartbeatConfig
    from tuner.coordination._budget import Limits
    from tuner.records import LineageRecorder

__all__ = ["Coordination", "StudySite"]


@dataclass(frozen=True)
class StudySite:
    """What a coordination reads of a campaign: where its study and local state live, and
    how long a stopped process may take."""

    #: The campaign's ``name``: its local state folder is named after it.
    name: str
    #: The folder relative paths of the config resolve against; the state folder is in it.
    base_dir: Path
    #: The Optuna storage URL and the study's name in it.
    storage_url: str
    study_name: str
    #: The ``heartbeat:`` section (flags and the environment come first, `Coordination.timing`).
    heartbeat: HeartbeatConfig
    #: Seconds between SIGTERM and SIGKILL when an orphan's process group is ended.
    grace_period: float

    @classmethod
    def of(cls, config: CampaignConfig) -> StudySite:
        """The site of ``config``'s campaign (its storage URL resolved once, here). It takes
        the whole config because this is where the controller cuts out what coordination
        reads (name, directories, storage, heartbeat, grace period); nothing past it does."""
        return cls(
            name=config.name,
            base_dir=config.base_dir,
            storage_url=config.optuna_storage_url(),
            study_name=config.study_name,
            heartbeat=config.heartbeat,
            grace_period=config.trial.grace_period,
        )


class Coordination(abc.ABC):
    """What a controller asks of the other controllers of its study.

    Contract. One controller uses one coordination for one `run`, and calls it from its own
    thread only, in this order:

    1. `campaign_dir` once, before anything: the local state folder whose lock this
       controller holds while it runs (two controllers never share one).
    2. `open_storage` once, unless the controller was given a storage.
    3. `setting_up` is held while the study, the MLflow experiment and the campaign's parent
       run are created or found; `joined` is called once the study is loaded.
    4. `recover` once, before the first trial, with the RUNNING trials that no live
       heartbeat owns (`orphans`). It must never touch a trial that a live controller runs.
    5. `ask` for every new trial: a trial within ``budget`` counted trials (WAITING ones
       first), or None once the study holds the budget. It must be atomic across every
       process driving the study (two controllers never exceed the budget between them).
    6. `trial_ended` after each asked trial was told its final state; `close` at the end.

    Methods raise `tuner.TunerError` for failures the user can act on; storage errors
    propagate as they are (the controller aborts and marks its trials).
    """

    def __init__(
        self, site: StudySite, *, interval: int | None = None, grace: int | None = None
    ) -> None:
        self.site = site
        #: Heartbeat flags (``--heartbeat``, ``--stale-after``), above the environment and
        #: the config's ``heartbeat:`` section (`timing`).
        self.interval = interval
        self.grace = grace

    def timing(self) -> tuple[int, int]:
        """``(interval, grace)`` of heartbeats: flags, environment, config, defaults."""
        return heartbeat_timing(self.interval, self.grace, section=self.site.heartbeat)

    @abc.abstractmethod
    def campaign_dir(self) -> CampaignDir:
        """The local state folder (controller lock, trial channels) of this controller."""

    @abc.abstractmethod
    def open_storage(self) -> optuna.storages.BaseStorage:
        """The Optuna storage of the campaign's study."""

    @contextlib.contextmanager
    def setting_up(self) -> Iterator[None]:
        """Held while the study and its lineage records are created. Default: nothing held."""
        yield

    @contextlib.contextmanager
    def study_lock(self) -> Iterator[None]:
        """Held while a scheduler reads the study and enqueues a continuation (a promotion,
        an exploit), so that two controllers never make the same decision twice. Default:
        nothing held (one controller only)."""
        yield

    def joined(self, study: optuna.Study) -> None:  # noqa: B027 - optional hook
        """The study is loaded (sampler and pruner attached). Default: nothing to do."""

    @abc.abstractmethod
    def recover(
        self,
        study: optuna.Study,
        orphans: list[optuna.trial.FrozenTrial],
        *,
        recorder: LineageRecorder,
        message: Callable[[str], Any],
    ) -> None:
        """End what dead controllers left: their processes, RUNNING trials and runs; re-queue
        the trials with the same parameters. ``message`` takes one line per event."""

    @abc.abstractmethod
    def ask(self, study: optuna.Study, budget: int | Limits) -> optuna.Trial | None:
        """A new (or re-queued) trial within ``budget``; None once the budget is reached."""

    def lost_trials(self) -> set[int]:
        """Ids of trials this controller runs that another process has re-queued meanwhile
        (their heartbeat went stale, say through a long pause of this host): the controller
        stops their processes at once, since their copy runs elsewhere. Each id is returned
        once; called from the controller's thread."""
        return set()

    def trial_ended(self, trial_id: int) -> None:  # noqa: B027 - optional hook
        """The trial with this storage id was told its final state. Default: nothing."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what `open_storage` and `ask` held. Idempotent. Default: nothing."""

    def orphans(self, study: optuna.Study) -> tuple[list[optuna.trial.FrozenTrial], bool]:
        """``(RUNNING trials without a live heartbeat, whether some live controller runs
        trials)``: what `recover` is given, and whether the lineage store may be reconciled
        (it may not while another controller is alive)."""
        import optuna

        from tuner.search import internals

        running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        if not running:
            return [], False
        from tuner.search import outage_for, retrying

        site = self.site
        url = site.storage_url
        live = retrying(
            lambda: live_trial_ids(url, site.study_name, self.timing()[1]), outage_for(url)
        )
        return [t for t in running if internals.trial_id(t) not in live], bool(live)
