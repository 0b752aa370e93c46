"""``tuner run`` / ``tuner resume``: the controller that owns its campaign.

It holds the campaign's lock (``.tuner/<campaign>/controller.lock``), so no other ``tuner
run`` drives the study at the same time; ``tuner worker``s may still join a study on a server
database, which is why new trials are still taken under the study lock, and why there its
trials get heartbeats as a worker's do: a worker that joins sees them driven by a live
controller (it neither re-queues them nor closes their MLflow runs). Each trial also names
its owner (this host and campaign directory), so that the next ``tuner resume`` holding the
same directory takes them as its dead predecessor's at once, without waiting out their last
heartbeat.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from tuner.coordination._base import Coordination, StudySite
from tuner.coordination._budget import ask_within_budget
from tuner.coordination._campaign_dir import CampaignDir
from tuner.coordination._heartbeat import Heartbeat, heartbeat_storage
from tuner.coordination._lock import StudyLock
from tuner.coordination._recovery import recover_stale
from tuner.records import interrupted_tags
from tuner.search import LAUNCH_ATTR, OWNER_ATTR

if TYPE_CHECKING:
    import optuna

    from tuner.coordination._budget import Limits
    from tuner.records import LineageRecorder

__all__ = ["Standalone"]

_INTERRUPTED = "interrupted: its controller died; re-run as another trial"


class Standalone(Coordination):
    """The campaign's own controller (see the module's text).

    Storage: on SQLite, the exclusive write-through cache (this process is the only writer);
    on a server database, Optuna's plain cached storage, as workers may share it. Recovery:
    every orphan is failed and re-queued; the process groups it left on this host are ended
    (SIGTERM, then SIGKILL after ``trial.grace_period``).
    """

    def __init__(
        self, site: StudySite, *, interval: int | None = None, grace: int | None = None
    ) -> None:
        super().__init__(site, interval=interval, grace=grace)
        self._lock = StudyLock(site.storage_url, site.study_name)
        self._heartbeat: Heartbeat | None = None
        self._owner: str | None = None
        if not site.storage_url.startswith("sqlite"):
            path = self.campaign_dir().path.absolute()
            self._owner = f"{socket.gethostname()}:{path}"

    def campaign_dir(self) -> CampaignDir:
        return CampaignDir(self.site.base_dir, self.site.name)

    def joined(self, study: optuna.Study) -> None:
        if self._owner is None or self._heartbeat is not None:
            return
        interval, grace = self.timing()
        storage = heartbeat_storage(self.site.storage_url, interval=interval, grace=grace)
        self._heartbeat = Heartbeat(storage).start()

    def orphans(self, study: optuna.Study) -> tuple[list[optuna.trial.FrozenTrial], bool]:
        """As for any controller, and also every RUNNING trial this campaign directory's
        previous controller asked for: this one holds the directory's lock, so that one is
        dead even if its last heartbeat is recent."""
        import optuna

        stale, live = super().orphans(study)
        if self._owner is None:
            return stale, live
        known = {t.number for t in stale}
        running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        ours = [t for t in running if t.system_attrs.get(OWNER_ATTR) == self._owner]
        stale += [t for t in ours if t.number not in known]
        others_live = live and any(
            t.number not in known and t.system_attrs.get(OWNER_ATTR) != self._owner for t in running
        )
        return stale, others_live

    def open_storage(self) -> optuna.storages.BaseStorage:
        from tuner.search import open_storage

        url = self.site.storage_url
        # A server database may be shared with `tuner worker`s: no exclusive cache there.
        return open_storage(url, exclusive=url.startswith("sqlite"))

    def recover(
        self,
        study: optuna.Study,
        orphans: list[optuna.trial.FrozenTrial],
        *,
        recorder: LineageRecorder,
        message: Callable[[str], Any],
    ) -> None:
        grace = self.site.grace_period
        trials = self.campaign_dir().trials
        recover_stale(
            study, orphans, socket.gethostname(), grace, message, trials_dir=trials, lock=self._lock
        )
        if self._owner is None:
            return  # the recorder reconciled the runs itself when it started
        # On a shared study the recorder reconciles nothing while a worker is live: end the
        # runs of the trials taken over here (again, harmlessly, if it did).
        for frozen in orphans:
            run_id = (frozen.user_attrs.get(LAUNCH_ATTR) or {}).get("run_id")
            if run_id:
                tags = interrupted_tags(_INTERRUPTED)
                recorder.trial_finished(str(run_id), status="KILLED", tags=tags, output_tail="")

    @contextlib.contextmanager
    def study_lock(self) -> Iterator[None]:
        with self._lock.hold():
            yield

    def ask(self, study: optuna.Study, budget: int | Limits) -> optuna.Trial | None:
        return ask_within_budget(study, budget, self._lock, self._heartbeat, owner=self._owner)

    def lost_trials(self) -> set[int]:
        return self._heartbeat.take_lost() if self._heartbeat is not None else set()

    def trial_ended(self, trial_id: int) -> None:
        if self._heartbeat is not None:
            self._heartbeat.remove(trial_id)

    def close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        self._lock.close()
