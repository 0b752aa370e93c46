"""The campaign's lineage in MLflow: one parent run per campaign, one child run per trial.

MLflow writes cost tens of milliseconds each on SQLite, so none of them is on the trial
path: a background thread does them in order, and keeps a small pool of child runs created
ahead (tag ``lineage.run_type=reserved``) so that a trial can get its run id (`tuner._protocol`) at
once. At the end (and on `tuner resume`) reserved runs nobody used are deleted.

A trial run's ``start_time`` and ``end_time`` are its process's own (a reserved run is created
early; its start time is set when a trial takes it). MLflow's API cannot change a run's start
time, so on a store the SQL writer cannot reach (an ``http://`` server, a file store) no run is
created ahead: the trial's run is created as the trial starts (one round trip).

A full disk under the store or its spool is not a hiccup: nothing more can be recorded. It is
kept (`fatal`, a one-line `DiskFull`) instead of logged, and the controller stops the campaign
on it; later writes that find the disk still full say nothing more.

The recorder remembers every run it handed out: `close` ends any a trial has not finished
(KILLED, ``tuner.state=FAIL`` with the reason) and deletes the unused reserved ones, so no run
of the campaign stays RUNNING whatever stopped the controller. Trial runs are named
``<campaign>-<trial number>`` (``-retry<k>`` for the k-th retry of a failure).

Tags on a trial run: ``lineage.run_type=trial``, ``mlflow.parentRunId``, ``tuner.campaign``,
``tuner.trial_number``, ``tuner.attempt``, ``tuner.sampler``, ``tuner.device``,
``tuner.command`` and ``lineage.command`` (secrets masked), ``tuner.env.<NAME>`` (masked),
then ``tuner.state`` (COMPLETE, PRUNED, FAIL), ``tuner.exit_code``, ``tuner.signal``,
``tuner.duration_s``, ``tuner.fail_reason`` or ``tuner.prune_reason``. The run's status is
FINISHED, KILLED (pruned) or FAILED; the controller sets it after the trial exits, whatever
the script itself did. The tail of stdout/stderr is the artifact ``tuner/output_tail.txt``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lineage import faults
from lineage.masking import mask_value
from tuner.records import _tags as T
from tuner.records._access import start_failure
from tuner.records._disk_full import disk_full
from tuner.records._late import LateWriter, RefusingClient, TooLate, deliver_spooled
from tuner.records._reconcile import EndedRun, reconcile_runs
from tuner.records._trial import clip_value, trial_start_tags
from tuner.records._write import (
    close_writer,
    create_run,
    open_http_writer,
    open_sql_writer,
    set_name,
    set_start_time,
    set_status,
    write_batch,
)

__all__ = ["LineageRecorder"]

_log = logging.getLogger(__name__)


class LineageRecorder:
    """Records a campaign into MLflow from a background thread.

    Methods are called from the controller thread; they only queue work, except `start`
    (which waits for the parent run) and `reserve_run` (which waits only when the pool is
    empty). `close` drains the queue. Errors are logged once per kind, never raised into
    the controller: a lineage hiccup must not kill a campaign. A full disk is the exception:
    `fatal` holds it (the controller stops on it) and `reserve_run` raises it.
    """

    def __init__(
        self,
        tracking_uri: str,
        experiment: str,
        campaign: str,
        *,
        pool_size: int = 2,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment
        self.campaign = campaign
        self.experiment_id: str | None = None
        self.parent_run_id: str | None = None
        self._pool_size = max(1, pool_size)
        self._pool: queue.Queue[str] = queue.Queue()
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._client: Any = None
        self._sql: Any = None  # lineage's direct SQL writer, when the store allows it
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._errors: dict[str, str] = {}
        self._fatal: Exception | None = None
        #: Run ids handed to trials and not finished yet -> whether a trial started in it.
        self._handed: dict[str, bool] = {}
        #: When `close` was given a limit: after it, queued writes are dropped (counted).
        self._give_up_at: float | None = None
        self._dropped = 0
        self._thread = threading.Thread(target=self._loop, name="tuner-lineage", daemon=True)

    # ----- controller side -----------------------------------------------------------------

    def start(
        self,
        *,
        parent_run_id: str | None,
        params: Mapping[str, Any],
        tags: Mapping[str, str],
        reconcile: str | None = None,
        used_runs: Mapping[str, int] | None = None,
        ended_runs: Mapping[str, EndedRun] | None = None,
        wait: bool = True,
    ) -> None:
        """Open the experiment and the parent run (reuse ``parent_run_id`` when it exists),
        then fill the pool. With ``reconcile`` (a reason), first close what a dead controller
        left (see `reconcile_runs`). With ``wait`` returns when the parent run exists."""
        self._thread.start()
        used = dict(used_runs or {})
        ended = dict(ended_runs or {})
        self._jobs.put(lambda: self._open(parent_run_id, params, tags, reconcile, used, ended))
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float | None = None) -> None:

        self._ready.wait(timeout)
        if self._start_error is not None:
            failure = start_failure(self._start_error, self.tracking_uri, self.experiment_name)
            if failure.__cause__ is self._start_error:
                raise failure from self._start_error
            raise failure from None

    def reserve_run(self) -> str:
        """A child run id for the next trial (from the pool; created now if it is empty).
        Raises `fatal` once the disk under the store or its spool is full."""
        self.wait_ready()
        if self._fatal is not None:
            raise self._fatal
        try:
            run_id = self._pool.get_nowait()
        except queue.Empty:
            try:
                run_id = self._create_reserved()
            except Exception as exc:
                full = disk_full(exc, self.tracking_uri)
                if full is None:
                    raise
                self._fatal = self._fatal or full
                raise self._fatal from None
        self._handed[run_id] = False
        self._jobs.put(self._refill)
        return run_id

    def release_run(self, run_id: str) -> None:
        """A reserved run that no trial will use: ended and deleted."""
        self._handed.pop(run_id, None)
        self._jobs.put(lambda: self._guard("delete", lambda: self._discard(run_id)))

    def trial_started(
        self,
        run_id: str,
        *,
        number: int,
        attempt: int,
        params: Mapping[str, Any],
        argv: Sequence[str],
        env: Mapping[str, str],
        device: str,
        sampler: str,
        started_at: float | None = None,
        extra_tags: Mapping[str, str] | None = None,
    ) -> None:
        """The trial's process started in ``run_id`` at ``started_at`` (``time.time()``):
        its params, tags and name, and the run's start time set to the process's."""
        self._handed[run_id] = True
        tags = trial_start_tags(
            self.campaign,
            number=number,
            attempt=attempt,
            sampler=sampler,
            device=device,
            argv=argv,
            env=env,
            extra=extra_tags,
        )
        # A secret-named parameter (``api_token``) is recorded masked, as lineage records it.
        param_items = {k: clip_value(mask_value(k, v)) for k, v in params.items()}
        name = tags[T.MLFLOW_RUN_NAME]

        start_ms = int(started_at * 1000) if started_at is not None else None

        def job() -> None:
            self._log(run_id, params=param_items, tags=tags)
            self._guard("name", lambda: set_name(self._client, self._sql, run_id, name))
            if start_ms is not None:
                self._guard("start_time", lambda: set_start_time(self._sql, run_id, start_ms))

        self._jobs.put(job)

    def trial_metrics(self, run_id: str, points: Sequence[tuple[str, float, int, float]]) -> None:
        """``points``: ``(key, value, step, unix_time_s)``."""
        if points:
            copied = list(points)
            self._jobs.put(lambda: self._log(run_id, metrics=copied))

    def trial_finished(
        self,
        run_id: str,
        *,
        status: str,
        tags: Mapping[str, str],
        output_tail: str,
        ended_at: float | None = None,
    ) -> None:
        """The attempt in ``run_id`` ended at ``ended_at`` (``time.time()``; default now):
        its closing tags, output tail, status and end time."""
        copied = dict(tags)
        self._handed.pop(run_id, None)
        end_ms = int((ended_at if ended_at is not None else time.time()) * 1000)

        def job() -> None:
            self._log(run_id, tags=copied)
            if output_tail:
                self._guard(
                    "artifact",
                    lambda: self._client.log_text(run_id, output_tail, "tuner/output_tail.txt"),
                )
            self._guard(
                "status", lambda: set_status(self._client, self._sql, run_id, status, end_ms)
            )

        self._jobs.put(job)

    def latest_metrics(self, run_id: str) -> dict[str, float]:
        """The latest value of every metric of a run, read now (for plain-mlflow scripts)."""
        self.wait_ready()
        try:
            return dict(self._client.get_run(run_id).data.metrics)
        except Exception as exc:  # noted: counted per kind and logged
            self._note("read", exc)
            return {}

    def call(self, fn: Callable[[Any], object]) -> None:
        """Queue ``fn(client)`` (for one-off writes such as the campaign summary)."""
        self._jobs.put(lambda: self._guard("call", lambda: fn(self._client)))

    def close(
        self,
        status: str,
        *,
        tags: Mapping[str, str] | None = None,
        reason: str = "interrupted: the controller stopped while the trial ran",
        wait: float | None = None,
    ) -> None:
        """End every run of the campaign still open, drain, stop: runs handed to trials and
        not finished (KILLED, ``tuner.state=FAIL``, ``tuner.fail_reason=reason``), unused
        reserved runs (deleted), then the parent run (``status``, ``tags``).

        ``wait``: seconds the writes still queued may take (a controller that was told to
        stop); after them, a locked database is not retried, a tracking server that is away
        keeps the rest in lineage's spool (delivered by the next process), and what is left
        of the queue is dropped with one warning: `tuner resume` closes the runs it leaves
        open. On a SQL store the batches, statuses and names left then go to lineage's spool
        instead (`tuner.records._late`), delivered by the next tuner process on the store.
        Without it, every write is made, however long the store takes."""
        if not self._thread.is_alive():
            return
        if wait is not None:
            self._give_up_at = time.monotonic() + wait
            retry_until = getattr(self._sql, "retry_until", None)
            if retry_until is not None:
                retry_until(self._give_up_at)
        leftover, self._handed = dict(self._handed), {}
        now_ms = int(time.time() * 1000)
        for run_id, started in leftover.items():
            self._jobs.put(
                lambda r=run_id, s=started: self._end_leftover(r, s, reason, now_ms)  # type: ignore[misc]
            )

        def finish() -> None:
            while True:
                try:
                    run_id = self._pool.get_nowait()
                except queue.Empty:
                    break
                self._guard("delete", lambda r=run_id: self._discard(r))  # type: ignore[misc]
            if self.parent_run_id is not None:
                if tags:
                    self._log(self.parent_run_id, tags=dict(tags))
                parent = self.parent_run_id
                self._guard("status", lambda: set_status(self._client, self._sql, parent, status))
            self._guard("close", lambda: close_writer(self._sql, wait=self._left()))

        self._pool_size = 0
        self._jobs.put(finish)
        self._jobs.put(None)
        self._thread.join(None if wait is None else wait + 2.0)
        journal = getattr(self._sql, "journal", None)
        if journal is not None and journal.records:
            _log.warning(
                "lineage: %d record(s) not made in time wait in %s; the next tuner command "
                "on this store delivers them (or: python -m lineage.recording drain URI)",
                journal.records,
                journal.journal or journal.directory,
            )
            if not self._thread.is_alive():
                journal.close()  # unlocked: another process may deliver it now
        if self._thread.is_alive() or self._dropped:
            _log.warning(
                "lineage: %d write(s) were not made in time (the store is locked or away); "
                "tuner resume closes the runs left open",
                self._dropped + self._jobs.qsize(),
            )

    def _left(self) -> float | None:
        """Seconds left before the writes stop (None: no limit)."""
        if self._give_up_at is None:
            return None
        return max(0.0, self._give_up_at - time.monotonic())

    @property
    def errors(self) -> dict[str, str]:
        return dict(self._errors)

    @property
    def fatal(self) -> Exception | None:
        """The first full disk a write into the store or its spool found (a one-line
        `tuner.search._resilient.DiskFull`), else ``None``: the campaign must stop."""
        return self._fatal

    # ----- background thread ---------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=1.0)
            except queue.Empty:
                if self._sql is not None:
                    self._guard("spool", self._sql.sync)  # deliver spooled records when back
                continue
            if job is None:
                return
            if self._give_up_at is not None and time.monotonic() > self._give_up_at:
                if not isinstance(self._sql, LateWriter):
                    self._dropped += 1  # no journal for this store: what its spool lacks
                    continue
                # Past the deadline on a SQL store: batches, statuses and names go to the
                # journal (`LateWriter`); what needs MLflow's client is refused at once.
                self._client = RefusingClient()
            try:
                job()
            except Exception as exc:  # keep the thread alive whatever a job does
                self._note("job", exc)

    def _note(self, kind: str, exc: BaseException) -> None:
        full = disk_full(exc, self.tracking_uri)
        if full is not None:  # said once, by the controller as it stops
            self._fatal = self._fatal or full
            return
        if kind not in self._errors:
            self._errors[kind] = f"{type(exc).__name__}: {exc}"
            _log.warning("lineage %s failed: %s", kind, exc)

    def _guard(self, kind: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except TooLate:  # a write only the client makes, past the stop's deadline: counted
            self._dropped += 1
            return None
        except Exception as exc:  # noted: counted per kind and logged
            self._note(kind, exc)
            return None

    def _open(
        self,
        parent_run_id: str | None,
        params: Mapping[str, Any],
        tags: Mapping[str, str],
        reconcile: str | None,
        used: Mapping[str, int],
        ended: Mapping[str, EndedRun],
    ) -> None:
        try:
            from mlflow.tracking import MlflowClient

            from lineage.recording import ensure_experiment

            self._client = client = MlflowClient(tracking_uri=self.tracking_uri)
            self._sql = open_sql_writer(self.tracking_uri)
            if self._sql is not None:
                # Records a stopped controller could not make in time wait in the spool.
                self._guard("spool", lambda: deliver_spooled(self.tracking_uri))
                self._sql = LateWriter(self._sql, self.tracking_uri)
            else:
                # No way to move a run's start time: create each trial's run as it starts.
                self._pool_size = 0
                # An mlflow server: records wait in a local spool while it is away.
                self._sql = open_http_writer(self.tracking_uri)
            # New experiments are tagged mlflow.experimentKind=custom_model_development (the
            # MLflow UI then opens them on their runs).
            self.experiment_id = ensure_experiment(
                client, self.experiment_name, restore_deleted=True
            )
            run = None
            if parent_run_id:
                from mlflow.exceptions import MlflowException

                try:
                    run = client.get_run(parent_run_id)
                except MlflowException as exc:
                    # Only a run the store no longer has is replaced; a store that cannot be
                    # read now fails the start (a second campaign run would split the records).
                    if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                        raise
                    run = None
                if run is not None and run.info.lifecycle_stage == "deleted":
                    run = None
            adopted = None
            if run is None and not parent_run_id:
                # A controller killed after creating the campaign run and before the study
                # recorded it left that run RUNNING: it is this campaign's, not a second one.
                run = adopted = self._orphan_campaign_run(client, tags)
            if adopted is not None:
                self.parent_run_id = adopted.info.run_id
                if not adopted.data.params:  # killed before its first write
                    self._log(
                        self.parent_run_id,
                        params={k: clip_value(mask_value(k, v)) for k, v in params.items()},
                    )
            elif run is None:
                run = client.create_run(
                    self.experiment_id,
                    run_name=self.campaign,
                    tags={T.RUN_TYPE: T.RUN_TYPE_CAMPAIGN, T.CAMPAIGN: self.campaign, **tags},
                )
                self.parent_run_id = run.info.run_id
                self._log(
                    self.parent_run_id,
                    params={k: clip_value(mask_value(k, v)) for k, v in params.items()},
                )
            else:
                self.parent_run_id = run.info.run_id
                client.update_run(self.parent_run_id, status="RUNNING")
        except BaseException as exc:  # raised to the controller by wait_ready
            self._start_error = exc
            self._ready.set()
            return
        if reconcile is not None:
            self._guard(
                "reconcile",
                lambda: reconcile_runs(
                    self.tracking_uri, self.experiment_name, self.campaign, reconcile, used, ended
                ),
            )
        self._ready.set()
        self._refill()

    def _orphan_campaign_run(self, client: Any, tags: Mapping[str, str]) -> Any:
        """The RUNNING campaign run of this campaign, study and storage that no study records
        (its controller died before recording it), newest first; None when there is none."""
        found = client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`{T.RUN_TYPE}` = '{T.RUN_TYPE_CAMPAIGN}' "
            "and attributes.status = 'RUNNING'",
            order_by=["attributes.start_time DESC"],
            max_results=50,
        )
        same = {
            T.CAMPAIGN: self.campaign,
            **{k: tags[k] for k in (T.STUDY, T.STORAGE) if k in tags},
        }
        for run in found:
            if all(run.data.tags.get(k) == v for k, v in same.items()):
                return run
        return None

    def _end_leftover(self, run_id: str, started: bool, reason: str, end_ms: int) -> None:
        if not started:
            self._guard("delete", lambda: self._discard(run_id))
            return
        self._log(run_id, tags={T.STATE: "FAIL", T.FAIL_REASON: reason})
        self._guard("status", lambda: set_status(self._client, self._sql, run_id, "KILLED", end_ms))

    def _discard(self, run_id: str) -> None:
        if isinstance(self._client, RefusingClient):
            # Not journaled: a reserved run must stay RUNNING for `tuner resume` to delete.
            raise TooLate("deleting an unused run past the stop's deadline")
        set_status(self._client, self._sql, run_id, "KILLED")
        self._client.delete_run(run_id)

    def _create_reserved(self) -> str:
        tags = {
            T.RUN_TYPE: T.RUN_TYPE_RESERVED,
            T.MLFLOW_PARENT_RUN_ID: self.parent_run_id,
            T.CAMPAIGN: self.campaign,
        }
        return create_run(self._client, self._sql, self.experiment_id, tags)

    def _refill(self) -> None:
        while self._pool.qsize() < self._pool_size:
            run_id = self._guard("reserve", self._create_reserved)
            if run_id is None:
                return
            self._pool.put(run_id)

    def _log(
        self,
        run_id: str,
        *,
        params: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
        metrics: Sequence[tuple[str, float, int, float]] = (),
    ) -> None:
        faults.point("recorder-batch-not-written")
        write_batch(
            self._client, self._sql, run_id, self._guard, params=params, tags=tags, metrics=metrics
        )
