"""Every use the tuner makes of Optuna's private attributes and modules, in one place.

Optuna's public API is built for ``study.optimize`` and for ask/tell by one process. The tuner
does more with a study: it changes the state and attributes of trials it did not just ask for
(a retried failure, a trial whose controller died, a stale trial of a dead worker), records
heartbeats outside ``optimize``, keeps a whole study in memory (`ExclusiveCachedStorage`), and
asks the database which RUNNING trials still have a live heartbeat. None of that has a public
door, so it goes through the functions below: an Optuna release that renames one of these
attributes breaks this module and no other, and each function says why it is needed.

Written against Optuna 5.1 (``optuna.storages._rdb``, ``Study._storage``,
``FrozenTrial._trial_id``, ``Study._get_trials``: every built-in sampler reads trials through
it, so the study view of `tuner.search._ranked` answers that call, reading through
`sampler_trials`).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.storages import BaseStorage, RDBStorage
    from optuna.study._frozen import FrozenStudy as FrozenStudy  # for storage signatures
    from optuna.trial import FrozenTrial

__all__ = [
    "contains",
    "create_trial_row",
    "enqueued",
    "insert_params",
    "n_trials",
    "running_heartbeats",
    "sampler_trials",
    "stale_trial_ids",
    "storage_of",
    "study_id",
    "study_id_of_trial",
    "trial_id",
]


def storage_of(study: optuna.Study) -> BaseStorage:
    """The storage behind ``study``.

    Why: a trial's state and attributes are set by id when the trial object that Optuna
    handed out is gone (re-queue, supersede, discard a prepared trial), and a study has no
    public accessor for its storage.
    """
    return study._storage


def study_id(study: optuna.Study) -> int:
    """The storage's id of ``study`` (storage methods take ids, the study hides its own)."""
    return int(study._study_id)


def trial_id(trial: optuna.Trial | FrozenTrial) -> int:
    """The storage's id of a trial: what heartbeats and the storage's setters take; the
    public ``number`` is per study and not what the storage is keyed by."""
    return int(trial._trial_id)


def n_trials(study: optuna.Study) -> int:
    """How many trials the study holds (one count query, no trial copies)."""
    return int(storage_of(study).get_n_trials(study_id(study)))


def stale_trial_ids(storage: RDBStorage, study_id_: int) -> list[int]:
    """Ids of RUNNING trials whose heartbeat is older than the storage's grace period.

    A RUNNING trial with no heartbeat at all (its controller died between creating it and
    recording its first heartbeat) gets one now, on its behalf: a live owner beats it again
    within the interval, a dead one never does, and the trial turns stale one grace period
    later (the database's clock throughout). Optuna skips such trials, so they stayed RUNNING
    for ever and every worker waited on them. Call under the study lock (a trial is created
    and gets its first heartbeat under it).

    Why: Optuna fails stale trials only inside ``study.optimize``
    (``fail_stale_trials``), and then without the re-queue under the tuner's lock.
    """
    import contextlib

    import optuna
    import sqlalchemy

    stale = list(storage._get_stale_trial_ids(study_id_))
    # During a database outage the next round marks them (the stale ones above stand).
    with contextlib.suppress(
        sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError
    ):
        _beat_unbeaten(storage, study_id_)
    return stale


def study_id_of_trial(storage: RDBStorage, trial_id_: int) -> int:
    """The id of the study that holds the trial with id ``trial_id_`` (Optuna's public
    storage API answers the other way round only)."""
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    with _create_scoped_session(storage.scoped_session) as session:
        (study,) = session.query(models.TrialModel.study_id).filter_by(trial_id=trial_id_).one()
    if study is None:
        raise KeyError(f"trial id {trial_id_} belongs to no study")
    return int(study)


def _beat_unbeaten(storage: RDBStorage, study_id_: int) -> None:
    import sqlalchemy
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session
    from optuna.trial import TrialState

    with _create_scoped_session(storage.scoped_session, True) as session:
        unbeaten = (
            session.query(models.TrialModel.trial_id)
            .outerjoin(
                models.TrialHeartbeatModel,
                models.TrialHeartbeatModel.trial_id == models.TrialModel.trial_id,
            )
            .filter(models.TrialModel.study_id == study_id_)
            .filter(models.TrialModel.state == TrialState.RUNNING)
            .filter(models.TrialHeartbeatModel.trial_id.is_(None))
            .all()
        )
        for (trial_id,) in unbeaten:
            session.add(
                models.TrialHeartbeatModel(
                    trial_id=trial_id, heartbeat=session.execute(sqlalchemy.func.now()).scalar_one()
                )
            )


def create_trial_row(
    backend: RDBStorage, study_id_: int, template: FrozenTrial | None
) -> FrozenTrial:
    """Create a trial row and get it back whole, in one round trip.

    Why: the public ``create_new_trial`` returns only the id, and the write-through cache
    would have to read the new trial back (a second query on every ask).
    """
    frozen: FrozenTrial = backend._create_new_trial(study_id_, template)
    return frozen


def insert_params(
    backend: RDBStorage, rows: Iterable[tuple[int, str, float, BaseDistribution]]
) -> None:
    """Insert ``(trial_id, name, internal value, distribution)`` rows in one transaction.

    Why: ``set_trial_param`` is one transaction per parameter, and the write-through cache
    buffers a trial's parameters to write them at once before its process starts.
    """
    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    items = [
        models.TrialParamModel(
            trial_id=tid,
            param_name=name,
            param_value=value,
            distribution_json=distribution_to_json(dist),
        )
        for tid, name, value, dist in rows
    ]
    if not items:
        return
    with _create_scoped_session(backend.scoped_session, True) as session:
        session.add_all(items)


def running_heartbeats(
    url: str, study_name: str
) -> tuple[datetime.datetime, list[tuple[int, datetime.datetime]]] | None:
    """``(database now, [(trial id, last heartbeat)])`` for the RUNNING trials of a study
    that have a heartbeat; None when the study (or Optuna's tables) does not exist.

    Why: a controller starting on a shared study must tell trials of live workers from
    orphans before it has a heartbeat-enabled storage of its own; Optuna only exposes the
    opposite question (stale ids) and only on such a storage. Times are the database's, so
    hosts need not agree on the clock.
    """
    import sqlalchemy
    from optuna.storages._rdb import models
    from optuna.trial import TrialState

    engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with sqlalchemy.orm.Session(engine) as session:
            study = session.query(models.StudyModel).filter_by(study_name=study_name).one_or_none()
            if study is None:
                return None
            now = session.execute(sqlalchemy.func.now()).scalar_one().replace(tzinfo=None)
            rows = (
                session.query(
                    models.TrialHeartbeatModel.trial_id, models.TrialHeartbeatModel.heartbeat
                )
                .join(
                    models.TrialModel,
                    models.TrialModel.trial_id == models.TrialHeartbeatModel.trial_id,
                )
                .filter(models.TrialModel.study_id == study.study_id)
                .filter(models.TrialModel.state == TrialState.RUNNING)
                .all()
            )
    except sqlalchemy.exc.OperationalError:
        return None  # no Optuna tables yet
    finally:
        engine.dispose()
    return now, [(int(tid), beat.replace(tzinfo=None)) for tid, beat in rows]


def contains(dist: BaseDistribution, internal: Any) -> bool:
    """Whether ``internal`` (a value in the distribution's internal representation) lies in
    ``dist``, steps and bounds included.

    Why: a warm-start or enqueued value must be checked exactly as Optuna will check it;
    ``_contains`` is that check, and there is no public twin.
    """
    return bool(dist._contains(internal))


def sampler_trials(
    study: optuna.Study,
    deepcopy: bool,
    states: Iterable[optuna.trial.TrialState] | None,
    use_cache: bool,
) -> list[FrozenTrial]:
    """``study._get_trials``: the call Optuna's samplers read trials through (``use_cache``
    has no public door), for a study view that changes what a sampler sees."""
    return study._get_trials(
        deepcopy=deepcopy, states=tuple(states) if states is not None else None, use_cache=use_cache
    )


def enqueued(trial: FrozenTrial) -> bool:
    """Whether ``trial`` was enqueued (``study.enqueue_trial``), its params fixed rather than
    proposed by the sampler: Optuna keeps them in the system attribute ``fixed_params``."""
    return "fixed_params" in trial.system_attrs
