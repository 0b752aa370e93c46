"""``tuner run`` / ``tuner resume``: the controller that owns its campaign.

It holds the campaign's lock (``.tuner/<campaign>/controller.lock``), so no other ``tuner
run`` drives the study at the same time; ``tuner worker``s may still join a study on a server
database, which is why new trials are still taken under the study lock.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tuner.coordination._base import Coordination
from tuner.coordination._budget import ask_within_budget
from tuner.coordination._campaign_dir import CampaignDir
from tuner.coordination._lock import StudyLock
from tuner.coordination._recovery import recover_stale

if TYPE_CHECKING:
    import optuna

    from tuner.config import CampaignConfig
    from tuner.records import LineageRecorder

__all__ = ["Standalone"]


class Standalone(Coordination):
    """The campaign's own controller (see the module's text).

    Storage: on SQLite, the exclusive write-through cache (this process is the only writer);
    on a server database, Optuna's plain cached storage, as workers may share it. Recovery:
    every orphan is failed and re-queued; the process groups it left on this host are ended
    (SIGTERM, then SIGKILL after ``trial.grace_period``).
    """

    def __init__(self, config: CampaignConfig) -> None:
        super().__init__(config)
        self._lock = StudyLock(config.optuna_storage_url(), config.study_name)

    def campaign_dir(self) -> CampaignDir:
        return CampaignDir(self.config.base_dir, self.config.name)

    def open_storage(self) -> optuna.storages.BaseStorage:
        from tuner.search._study import open_storage

        url = self.config.optuna_storage_url()
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
        del recorder  # the recorder reconciles the runs itself when it starts
        grace = self.config.trial.grace_period
        recover_stale(study, orphans, socket.gethostname(), grace, message)

    def ask(self, study: optuna.Study, budget: int) -> optuna.Trial | None:
        return ask_within_budget(study, budget, self._lock)

    def close(self) -> None:
        self._lock.close()
