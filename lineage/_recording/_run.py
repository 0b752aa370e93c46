"""``Run``: the handle a training script logs through, and ``start_run`` that makes one.

Ownership of the final status: a run created by ``start_run`` (or resumed by an explicit
``run_id=``) is owned by this process, which ends it FINISHED, FAILED or KILLED. A run
attached through ``MLFLOW_RUN_ID`` was created by someone else (the tuner controller) who
reads the process's exit code and sets the final status itself; this process then only
flushes and records the outcome it saw in the ``lineage.outcome`` tag. Set
``LINEAGE_END_ATTACHED_RUN=1`` to make an attached script end the run itself.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from lineage import tags as T
from lineage._errors import LineageError, StoreError, UsageError
from lineage._fingerprint import DataFingerprint, dataset_name, fingerprint
from lineage._params import (
    MAX_TAG_VALUE_LENGTH,
    encode_params,
    same_param_value,
    split_types_tag,
    validate_key,
)
from lineage._recording import _lifecycle
from lineage._recording._recorder import Recorder, spill
from lineage._recording._writer import Writer
from lineage._secrets import mask_value

if TYPE_CHECKING:
    from lineage._recording._client import LazyClient

STATUSES = ("FINISHED", "FAILED", "KILLED")
#: ``Run.flush``'s default: the run's ``LINEAGE_FLUSH_TIMEOUT``.
_CONFIGURED: Any = object()


class Run:
    """One MLflow run being recorded. Log calls are cheap and thread-safe; they return before
    the data is stored (``flush`` waits for it). Use as a context manager or call ``end``.
    Made by `lineage.start_run`; not constructed directly."""

    def __init__(
        self,
        *,
        client: LazyClient,
        writer: Writer,
        run_id: str,
        experiment_id: str,
        tracking_uri: str,
        owns_run: bool,
        existing_params: Mapping[str, str],
        existing_types: Mapping[str, str],
        interval: float,
        flush_timeout: float,
    ) -> None:
        self.run_id = run_id
        self.experiment_id = experiment_id
        self.tracking_uri = tracking_uri
        self.owns_run = owns_run
        self.status = "RUNNING"
        self._client = client
        self._recorder = Recorder(writer, run_id, interval=interval)
        self._flush_timeout = flush_timeout
        self._params: dict[str, str] = dict(existing_params)
        self._types: dict[str, str] = dict(existing_types)
        self._metric_keys: set[str] = set()
        # The last (step, value) logged per key, and the keys whose last point came from
        # `log_reported`: what keeps a value both recorded here and reported from being
        # stored twice.
        self._last: dict[str, tuple[int, float]] = {}
        self._reported: set[str] = set()
        self._ended = False
        self._error: str | None = None
        self._signal: int | None = None

    def __repr__(self) -> str:
        return f"Run(run_id={self.run_id!r}, status={self.status!r}, store={self._recorder.writer.kind})"

    # -- logging (training thread) ----------------------------------------------------------
    def log_metric(
        self, key: str, value: float, step: int | None = None, timestamp: int | None = None
    ) -> None:
        """Record one point; returns at once (a writer thread stores it).

        Args:
            key: The metric's name.
            value: A number.
            step: The step of the point (default 0).
            timestamp: Milliseconds since the epoch (default: now).

        Raises:
            UsageError: The run has ended, the name breaks MLflow's rules, or the value is
                not a number.
        """
        if key not in self._metric_keys:
            validate_key(key, "metric")
            self._check_open()
            self._metric_keys.add(key)
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise UsageError(f"metric {key!r} must be a number, got {value!r}") from None
        s = 0 if step is None else int(step)
        if key in self._reported:
            self._reported.discard(key)
            if self._last.get(key) == (s, v):
                return  # `log_reported` stored this very point
        self._last[key] = (s, v)
        self._recorder.add_point(
            (key, v, int(time.time() * 1000) if timestamp is None else int(timestamp), s)
        )

    def log_metrics(
        self, metrics: Mapping[str, float], step: int | None = None, timestamp: int | None = None
    ) -> None:
        """Record several metrics at the same step and timestamp.

        Args:
            metrics: Metric name to number.
            step: The step of the points (default 0).
            timestamp: Milliseconds since the epoch (default: now).
        """
        ts = int(time.time() * 1000) if timestamp is None else int(timestamp)
        for key, value in metrics.items():
            self.log_metric(key, value, step, ts)

    def log_reported(self, step: int, metrics: Mapping[str, float]) -> None:
        """Record values the script also reports to another tool (``tuner.trial.report``),
        so that each (metric, step) is stored once: a value this run's last point of that
        metric already holds at ``step`` is not logged again, and a ``log_metric`` of the
        same metric, step and value right after this call is skipped.

        Args:
            step: The step the values were reported at.
            metrics: Metric name to number.
        """
        s = int(step)
        for key, value in metrics.items():
            v = float(value)
            if self._last.get(key) == (s, v):
                continue
            self.log_metric(key, v, s)
            self._reported.add(key)

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Record hyperparameters; nested mappings become dotted keys (``optimizer.lr``).

        MLflow params are immutable: logging a key again with the same value is a no-op, with a
        different value a :class:`UsageError`. Secret-looking names are stored masked.
        """
        self._check_open()
        texts, types = encode_params(params)
        for key, text in texts.items():
            old = self._params.get(key)
            if old is not None and not same_param_value(old, text):
                raise UsageError(
                    f"param {key!r} is already {old!r} in run {self.run_id}; MLflow params cannot "
                    f"change once logged, got {text!r} (use a metric or a tag for values that change)"
                )
        new_types = False
        for key, text in texts.items():
            if key not in self._params:
                self._params[key] = text
                self._recorder.params.append((key, text))
            # Also for a param the tuner already logged: the script knows its real type.
            if key in types and self._types.get(key) != types[key]:
                self._types[key] = types[key]
                new_types = True
        if new_types:
            for name, value in split_types_tag(self._types).items():
                self._recorder.tags.append((name, value))

    def log_param(self, key: str, value: Any) -> None:
        """Record one hyperparameter (``log_params({key: value})``)."""
        self.log_params({key: value})

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        """Set tags (last value wins). Secret-looking names and URI passwords are masked."""
        self._check_open()
        checked = []
        for key, value in tags.items():
            validate_key(key, "tag")
            text = str(mask_value(key, "" if value is None else str(value)))
            if len(text) > MAX_TAG_VALUE_LENGTH:
                raise UsageError(
                    f"tag {key!r}: MLflow keeps at most {MAX_TAG_VALUE_LENGTH} characters per value, got {len(text)}"
                )
            checked.append((key, text))
        self._recorder.tags.extend(checked)

    def set_tag(self, key: str, value: Any) -> None:
        """Set one tag (``set_tags({key: value})``)."""
        self.set_tags({key: value})

    def log_dataset(self, path: str | os.PathLike[str], name: str | None = None) -> DataFingerprint:
        """Fingerprint a dataset file or folder into ``lineage.data.<name>.{path,fingerprint,size,files}``."""
        fp = fingerprint(path)
        name = name or dataset_name(path)
        validate_key(T.data_tag(name, "fingerprint"), "dataset name")
        self.set_tags(
            {
                T.data_tag(name, "path"): fp.path,
                T.data_tag(name, "fingerprint"): f"sha256:{fp.sha256}",
                T.data_tag(name, "size"): fp.size,
                T.data_tag(name, "files"): fp.files,
            }
        )
        return fp

    def log_artifact(self, path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """Upload a file or folder to the run's artifact store (synchronously).

        Args:
            path: The file or folder.
            artifact_path: The folder under the run's artifacts (default: the top).

        Raises:
            UsageError: The run has ended, or ``path`` does not exist.
        """
        self._check_open()
        p = Path(path)
        if not p.exists():
            raise UsageError(f"artifact path must exist, got {str(path)!r}")
        if p.is_dir():
            self._client.get().log_artifacts(self.run_id, str(p), artifact_path)
        else:
            self._client.get().log_artifact(self.run_id, str(p), artifact_path)

    # -- lifecycle ---------------------------------------------------------------------------
    def flush(self, timeout: float | None = _CONFIGURED) -> None:
        """Block until everything logged so far is in the store (``StoreError`` after
        ``timeout`` seconds; by default ``LINEAGE_FLUSH_TIMEOUT``, 60; None: no limit)."""
        self._recorder.flush(self._flush_timeout if timeout is _CONFIGURED else timeout)

    @property
    def rejected_params(self) -> dict[str, tuple[str, str]]:
        """Params the store refused because another writer stored a different value first."""
        return dict(self._recorder.rejected)

    def end(self, status: str = "FINISHED") -> None:
        """Flush and end the run. An attached run that this process does not own keeps its
        status (the tuner sets it); ``lineage.outcome`` records what this process saw.

        Args:
            status: ``FINISHED``, ``FAILED`` or ``KILLED``.

        Raises:
            UsageError: ``status`` is not one of the three.
            StoreError: The store did not take the records in time; they are saved to a
                local file that a line on stderr names.
        """
        if status not in STATUSES:
            raise UsageError(f"run status must be one of {', '.join(STATUSES)}, got {status!r}")
        if self._ended:
            return
        self._ended = True
        _lifecycle.unregister(self)
        tags = {T.OUTCOME: status}
        if self._error:
            tags[T.ERROR] = self._error
        self._recorder.tags.extend(tags.items())
        try:
            self._recorder.close(self._flush_timeout)
        except StoreError:
            if isinstance(self._recorder.fatal, StoreError) and getattr(
                self._recorder.fatal, "said_by_caller", False
            ):
                raise self._recorder.fatal from None  # a full spool: no room to spill either
            path = spill(self._recorder.unsent(), self.run_id)
            print(
                f"lineage: run {self.run_id}: store unreachable, unsent records saved to {path}",
                file=sys.stderr,
            )
            raise
        finally:
            if self.owns_run:
                self._set_status(status, int(time.time() * 1000))
            if not self._recorder._thread.is_alive():
                self._recorder.writer.close()
            self.status = status

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self._note_exception(exc_type, exc)
        self.end(self._status_for(exc_type, exc))

    def _set_status(self, status: str, end_time: int | None) -> None:
        # Through the writer when it can (no MLflow import inside a signal handler), else MLflow.
        try:
            writer = self._recorder.writer
            if self._recorder._thread.is_alive() or not writer.set_status(
                self.run_id, status, end_time
            ):
                self._client.get().set_terminated(self.run_id, status, end_time)
        except Exception as exc:  # said on stderr: ending must not raise
            print(
                f"lineage: run {self.run_id}: could not set status {status}: {exc}", file=sys.stderr
            )

    # -- internals ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._ended:
            raise UsageError(
                f"run {self.run_id} has ended ({self.status}); start a new run to log more"
            )

    def _status_for(self, exc_type: type[BaseException] | None, exc: BaseException | None) -> str:
        if self._signal is not None or (
            exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        ):
            return "KILLED"
        if exc_type is None:
            return "FINISHED"
        if issubclass(exc_type, SystemExit):
            code = getattr(exc, "code", None)
            return "FINISHED" if code in (None, 0) else "FAILED"
        return "FAILED"

    def _note_exception(self, exc_type: type[BaseException], exc: BaseException | None) -> None:
        if issubclass(exc_type, SystemExit | KeyboardInterrupt):
            return
        from lineage._secrets import mask_uri

        text = mask_uri(f"{exc_type.__name__}: {exc}")
        self._error = text[:1000]

    def _on_signal(self, signum: int) -> None:
        self._signal = signum
        try:
            self._recorder.flush(10.0)
        except LineageError as exc:
            print(f"lineage: {exc}", file=sys.stderr)

    def _end_quietly(self, status: str) -> None:
        try:
            self.end(status)
        except Exception as exc:  # said on stderr: ending must not raise
            print(f"lineage: run {self.run_id}: {exc}", file=sys.stderr)


def active_run() -> Run | None:
    """The run this process is recording into, or None."""
    run = _lifecycle.active()
    assert run is None or isinstance(run, Run)  # only `start_run` registers, and only a Run
    return run
