"""A write-through cache over an Optuna RDB storage, for a study with one writer.

`ExclusiveCachedStorage` keeps the study's trials in memory and writes every change through
to the database before returning (nothing is lost when the controller dies). Reads never
touch the database. It is correct only while this process is the study's only writer, which
the campaign lock guarantees for `tuner run`/`tuner resume`; workers sharing a study
(PostgreSQL, several controllers) use Optuna's plain cached storage instead.
"""

from __future__ import annotations

import copy
import datetime
import threading
from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, Any

from optuna.distributions import BaseDistribution, check_distribution_compatibility
from optuna.storages import BaseStorage, RDBStorage
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.search import _internals as internals

if TYPE_CHECKING:
    from tuner.search._internals import FrozenStudy

__all__ = ["ExclusiveCachedStorage"]


class ExclusiveCachedStorage(BaseStorage):
    """Write-through cache over an `RDBStorage` for a process that is a study's only writer.

    Thread-safe (one lock). Every write reaches the database before the call returns; reads
    are served from memory after the first load of each study.
    """

    def __init__(self, backend: RDBStorage) -> None:
        self._backend = backend
        self._lock = threading.RLock()
        self._trials: dict[int, dict[int, FrozenTrial]] = {}  # study_id -> number -> trial
        self._where: dict[int, tuple[int, int]] = {}  # trial_id -> (study_id, number)
        self._directions: dict[int, list[StudyDirection]] = {}
        self._dists: dict[int, dict[str, BaseDistribution]] = {}  # study_id -> name -> dist
        # Params of a running trial are written in one transaction, before any other write
        # to that trial and on `flush` (the controller flushes before starting the process).
        self._pending: dict[int, list[tuple[str, float, BaseDistribution]]] = {}

    @property
    def backend(self) -> RDBStorage:
        return self._backend

    # ----- studies: passed through (rare) ------------------------------------------------

    def create_new_study(
        self, directions: Sequence[StudyDirection], study_name: str | None = None
    ) -> int:
        study_id = self._backend.create_new_study(directions, study_name)
        with self._lock:
            self._trials[study_id] = {}
            self._dists[study_id] = {}
        return study_id

    def delete_study(self, study_id: int) -> None:
        self._backend.delete_study(study_id)
        with self._lock:
            for number_trial in self._trials.pop(study_id, {}).values():
                self._where.pop(internals.trial_id(number_trial), None)

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        self._backend.set_study_user_attr(study_id, key, value)

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        self._backend.set_study_system_attr(study_id, key, value)

    def get_study_id_from_name(self, study_name: str) -> int:
        return self._backend.get_study_id_from_name(study_name)

    def get_study_name_from_id(self, study_id: int) -> str:
        return self._backend.get_study_name_from_id(study_id)

    def get_study_directions(self, study_id: int) -> list[StudyDirection]:
        with self._lock:
            if study_id not in self._directions:
                self._directions[study_id] = self._backend.get_study_directions(study_id)
            return list(self._directions[study_id])

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        return self._backend.get_study_user_attrs(study_id)

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        return self._backend.get_study_system_attrs(study_id)

    def get_all_studies(self) -> list[FrozenStudy]:
        return self._backend.get_all_studies()

    # ----- trials --------------------------------------------------------------------------

    def _study(self, study_id: int) -> dict[int, FrozenTrial]:
        trials = self._trials.get(study_id)
        if trials is None:
            trials = {}
            dists: dict[str, BaseDistribution] = {}
            for trial in self._backend.get_all_trials(study_id, deepcopy=False):
                trials[trial.number] = trial
                self._where[internals.trial_id(trial)] = (study_id, trial.number)
                for name, dist in trial.distributions.items():
                    dists.setdefault(name, dist)
            self._trials[study_id] = trials
            self._dists[study_id] = dists
        return trials

    def _get(self, trial_id: int) -> FrozenTrial | None:
        # Trials of studies this process never loaded are not cached (not needed by a
        # controller, which works on one study).
        where = self._where.get(trial_id)
        if where is None:
            return None
        study_id, number = where
        return self._trials[study_id][number]

    def _put(self, trial: FrozenTrial) -> None:
        study_id, number = self._where[internals.trial_id(trial)]
        self._trials[study_id][number] = trial

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        with self._lock:
            trials = self._study(study_id)
            frozen = internals.create_trial_row(self._backend, study_id, template_trial)
            trials[frozen.number] = frozen
            self._where[internals.trial_id(frozen)] = (study_id, frozen.number)
            return internals.trial_id(frozen)

    def set_trial_param(
        self,
        trial_id: int,
        param_name: str,
        param_value_internal: float,
        distribution: BaseDistribution,
    ) -> None:
        with self._lock:
            cached = self._get(trial_id)
            if cached is None:
                self._backend.set_trial_param(
                    trial_id, param_name, param_value_internal, distribution
                )
                return
            self.check_trial_is_updatable(trial_id, cached.state)
            study_id = self._where[trial_id][0]
            previous = self._dists[study_id].get(param_name)
            if previous is not None:
                check_distribution_compatibility(previous, distribution)
            if param_name in cached.params:
                raise ValueError(f"param {param_name!r} of trial {cached.number} is already set")
            self._pending.setdefault(trial_id, []).append(
                (param_name, param_value_internal, distribution)
            )
            self._dists[study_id].setdefault(param_name, distribution)
            trial = copy.copy(cached)
            trial.params = {
                **trial.params,
                param_name: distribution.to_external_repr(param_value_internal),
            }
            trial.distributions = {**trial.distributions, param_name: distribution}
            self._put(trial)

    def flush(self, trial_id: int | None = None) -> None:
        """Write the buffered params of ``trial_id`` (all trials when None)."""
        with self._lock:
            ids = [trial_id] if trial_id is not None else list(self._pending)
            for tid in ids:
                rows = self._pending.pop(tid, None)
                if not rows:
                    continue
                internals.insert_params(
                    self._backend, [(tid, name, value, dist) for name, value, dist in rows]
                )

    def get_trial_id_from_study_id_trial_number(self, study_id: int, trial_number: int) -> int:
        with self._lock:
            trial = self._study(study_id).get(trial_number)
        if trial is None:
            return self._backend.get_trial_id_from_study_id_trial_number(study_id, trial_number)
        return internals.trial_id(trial)

    def set_trial_state_values(
        self, trial_id: int, state: TrialState, values: Sequence[float] | None = None
    ) -> bool:
        with self._lock:
            self.flush(trial_id)
            if not self._backend.set_trial_state_values(trial_id, state, values):
                return False
            cached = self._get(trial_id)
            if cached is None:
                return True
            trial = copy.copy(cached)
            trial.state = state
            if values is not None:
                trial.values = list(values)
            now = datetime.datetime.now()
            if state == TrialState.RUNNING:
                trial.datetime_start = now
            if state.is_finished():
                trial.datetime_complete = now
            self._put(trial)
            return True

    def set_trial_intermediate_value(
        self, trial_id: int, step: int, intermediate_value: float
    ) -> None:
        with self._lock:
            self.flush(trial_id)
            self._backend.set_trial_intermediate_value(trial_id, step, intermediate_value)
            cached = self._get(trial_id)
            if cached is None:
                return
            trial = copy.copy(cached)
            trial.intermediate_values = {**trial.intermediate_values, step: intermediate_value}
            self._put(trial)

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        with self._lock:
            self.flush(trial_id)
            self._backend.set_trial_user_attr(trial_id, key, value)
            cached = self._get(trial_id)
            if cached is None:
                return
            trial = copy.copy(cached)
            trial.user_attrs = {**trial.user_attrs, key: value}
            self._put(trial)

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        with self._lock:
            self.flush(trial_id)
            self._backend.set_trial_system_attr(trial_id, key, value)
            cached = self._get(trial_id)
            if cached is None:
                return
            trial = copy.copy(cached)
            trial.system_attrs = {**trial.system_attrs, key: value}
            self._put(trial)

    def get_trial(self, trial_id: int) -> FrozenTrial:
        with self._lock:
            cached = self._get(trial_id)
        if cached is None:
            return self._backend.get_trial(trial_id)
        return copy.deepcopy(cached)

    def get_all_trials(
        self,
        study_id: int,
        deepcopy: bool = True,
        states: Container[TrialState] | None = None,
    ) -> list[FrozenTrial]:
        with self._lock:
            trials = self._study(study_id)
            out = [trials[n] for n in sorted(trials)]
        if states is not None:
            out = [t for t in out if t.state in states]
        return copy.deepcopy(out) if deepcopy else out

    def remove_session(self) -> None:
        self.flush()
        self._backend.remove_session()
