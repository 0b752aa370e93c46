"""The Optuna study of a campaign, on its RDB storage, fast enough for 1,000s of trials.

Two things make stock ask/tell on SQLite slow: every commit waits for an fsync (rollback
journal), and `optuna.storages._CachedStorage` re-reads unfinished trials from the database
on every `get_all_trials`, which samplers and pruners call several times per trial.

- SQLite storages are opened in WAL mode with ``synchronous=NORMAL``: a commit is durable
  against a process crash (kill -9) and needs no fsync; only a power cut may lose the last
  transactions. WAL also lets `tuner status` read while the controller writes.
- `ExclusiveCachedStorage` keeps the study's trials in memory and writes every change
  through to the database before returning (nothing is lost when the controller dies). Reads
  never touch the database. It is correct only while this process is the study's only
  writer, which the campaign lock guarantees for `tuner run`/`tuner resume`; workers
  sharing a study (PostgreSQL, several controllers) use the plain cached storage instead.
"""

from __future__ import annotations

import copy
import datetime
import threading
from collections.abc import Container, Sequence
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    check_distribution_compatibility,
    distribution_to_json,
)
from optuna.storages import BaseStorage, RDBStorage
from optuna.storages._rdb import models
from optuna.storages._rdb.storage import _create_scoped_session
from optuna.study import StudyDirection
from optuna.study._frozen import FrozenStudy
from optuna.trial import FrozenTrial, TrialState

__all__ = ["ExclusiveCachedStorage", "create_rdb", "open_storage"]


def create_rdb(url: str, **kwargs: Any) -> RDBStorage:
    """``RDBStorage(url, **kwargs)``, surviving a race to create Optuna's tables.

    The first client of an empty database creates the tables. Two clients doing so at once
    (a worker starting while `tuner status` or a notebook's ``load_study`` opens the same
    database) make one of them fail with "already exists" or a duplicate key on PostgreSQL's
    catalog; by then the other has created them, so a second attempt finds them."""
    import time

    from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

    for attempt in range(5):
        try:
            return RDBStorage(url, **kwargs)
        except (IntegrityError, OperationalError, ProgrammingError) as exc:
            text = str(exc).lower()
            if attempt == 4 or not ("already exists" in text or "duplicate key" in text):
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def open_storage(url: str, *, exclusive: bool) -> BaseStorage:
    """An RDB storage for ``url``; wrapped in `ExclusiveCachedStorage` when ``exclusive``."""
    is_sqlite = url.startswith("sqlite")
    engine_kwargs: dict[str, Any] = {}
    if is_sqlite:
        engine_kwargs["connect_args"] = {"timeout": 60}
    rdb = create_rdb(url, engine_kwargs=engine_kwargs)
    if is_sqlite:
        from sqlalchemy import event

        event.listen(rdb.engine, "connect", _sqlite_pragmas)
        rdb.engine.dispose()  # connections made during migration lack the pragmas
    if exclusive:
        return ExclusiveCachedStorage(rdb)
    return optuna.storages.get_storage(rdb)


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
                self._where.pop(number_trial._trial_id, None)

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
                self._where[trial._trial_id] = (study_id, trial.number)
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
        study_id, number = self._where[trial._trial_id]
        self._trials[study_id][number] = trial

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        with self._lock:
            trials = self._study(study_id)
            frozen = self._backend._create_new_trial(study_id, template_trial)
            trials[frozen.number] = frozen
            self._where[frozen._trial_id] = (study_id, frozen.number)
            return frozen._trial_id

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
                with _create_scoped_session(self._backend.scoped_session, True) as session:
                    session.add_all(
                        [
                            models.TrialParamModel(
                                trial_id=tid,
                                param_name=name,
                                param_value=value,
                                distribution_json=distribution_to_json(dist),
                            )
                            for name, value, dist in rows
                        ]
                    )

    def get_trial_id_from_study_id_trial_number(self, study_id: int, trial_number: int) -> int:
        with self._lock:
            trial = self._study(study_id).get(trial_number)
        if trial is None:
            return self._backend.get_trial_id_from_study_id_trial_number(study_id, trial_number)
        return trial._trial_id

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
