"""The buffer between the training thread and the store.

The training thread only appends tuples to lock-free deques (``deque.append`` is atomic), so
a log call costs a few microseconds whatever the store's latency. One daemon thread per run
drains the deques every ``interval`` seconds, or sooner when ``high_water`` points are
waiting, and hands batches of up to ``batch_points`` points to the writer. A failed batch is
kept and retried with backoff; nothing is dropped while the process lives. ``flush`` blocks
until everything appended before the call is in the store (or raises ``StoreError``).
No locks are shared with the training thread, so flushing from a signal handler that
interrupted a log call cannot deadlock.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from pathlib import Path

from lineage._errors import LineageError, StoreError
from lineage._recording._writer import Batch, Point, TransientError, Writer
from lineage._secrets import mask_uri

log = logging.getLogger("lineage.recording")


class Recorder:
    def __init__(
        self,
        writer: Writer,
        run_id: str,
        *,
        interval: float = 0.5,
        high_water: int = 20_000,
        batch_points: int = 50_000,
    ) -> None:
        self.writer = writer
        self.run_id = run_id
        self.points: deque[Point] = deque()
        self.params: deque[tuple[str, str]] = deque()
        self.tags: deque[tuple[str, str]] = deque()
        self.rejected: dict[str, tuple[str, str]] = {}
        self.last_error: BaseException | None = None
        self.fatal: BaseException | None = None
        self.written_points = 0
        self._interval = interval
        self._high_water = high_water
        self._batch_points = batch_points
        self._wake = threading.Event()
        self._requests: deque[threading.Event] = deque()
        self._pending: Batch | None = None  # a batch that failed and will be retried first
        self._closing = False
        self._thread = threading.Thread(
            target=self._loop, name=f"lineage-writer-{run_id[:8]}", daemon=True
        )
        self._thread.start()

    # -- training thread ---------------------------------------------------------------------
    def add_point(self, point: Point) -> None:
        self.points.append(point)
        if len(self.points) >= self._high_water:
            self._wake.set()

    def flush(self, timeout: float | None = 60.0) -> None:
        """Block until everything logged before this call is stored; ``StoreError`` if not."""
        if not self._thread.is_alive():
            if self.points or self.params or self.tags or self._pending:
                why = mask_uri(str(self.fatal)) if self.fatal else "the writer thread has stopped"
                raise StoreError(f"run {self.run_id}: records not stored: {why}")
            return
        done = threading.Event()
        self._requests.append(done)
        self._wake.set()
        finished = done.wait(timeout)
        if self.fatal is not None:
            raise StoreError(f"run {self.run_id}: records not stored: {mask_uri(str(self.fatal))}")
        if not finished:
            err = self.last_error
            raise StoreError(
                f"run {self.run_id}: records not stored after {timeout:g} s"
                + (f" (last error: {type(err).__name__}: {mask_uri(str(err))})" if err else "")
            )

    def close(self, timeout: float | None = 60.0) -> bool:
        """Flush and stop the thread. True when the thread has stopped, so the caller may use
        the writer itself (and must close it)."""
        try:
            self.flush(timeout)
        finally:
            self._closing = True
            self._wake.set()
            self._thread.join(timeout=5.0)
        return not self._thread.is_alive()

    def unsent(self) -> Batch:
        """Everything not yet stored (for spilling to disk when the store stays unreachable)."""
        out = Batch()
        if self._pending is not None:
            out.points.extend(self._pending.points)
            out.params.update(self._pending.params)
            out.tags.update(self._pending.tags)
        out.points.extend(self.points)
        out.params.update(dict(self.params))
        out.tags.update(dict(self.tags))
        return out

    # -- writer thread -----------------------------------------------------------------------
    def _take(self) -> Batch:
        batch = Batch()
        pop = self.points.popleft
        points = batch.points
        try:
            for _ in range(self._batch_points):
                points.append(pop())
        except IndexError:
            pass
        try:
            while True:
                k, v = self.params.popleft()
                batch.params.setdefault(
                    k, v
                )  # first value wins; later conflicting ones are rejected
        except IndexError:
            pass
        try:
            while True:
                k, v = self.tags.popleft()
                batch.tags[k] = v
        except IndexError:
            pass
        return batch

    def _drain(self) -> bool:
        """Write until the deques are empty; False if a write failed (batch kept for retry)."""
        while True:
            batch = self._pending if self._pending is not None else self._take()
            if not batch:
                self.writer.sync()
                return True
            self._pending = batch
            try:
                result = self.writer.write(self.run_id, batch)
            except TransientError as exc:
                self.last_error = exc
                log.warning(
                    "lineage: run %s: store busy, will retry: %s", self.run_id, mask_uri(str(exc))
                )
                return False
            except LineageError as exc:
                # The run is gone or deleted, or the spool's disk is full: nothing later can
                # succeed, so stop retrying (a full spool is said once, by ``Run.end``).
                self.last_error = self.fatal = exc
                if not getattr(exc, "said_by_caller", False):
                    log.error("lineage: run %s: %s", self.run_id, mask_uri(str(exc)))
                return False
            except Exception as exc:  # logged; the batch is retried
                self.last_error = exc
                log.error(
                    "lineage: run %s: write failed, will retry: %s: %s",
                    self.run_id,
                    type(exc).__name__,
                    mask_uri(str(exc)),
                )
                return False
            self._pending = None
            self.last_error = None
            self.written_points += len(batch.points)
            for key, (old, new) in result.rejected_params.items():
                self.rejected[key] = (old, new)
                log.warning(
                    "lineage: run %s: param %r is already %r; MLflow params are immutable, %r was not stored",
                    self.run_id,
                    key,
                    old,
                    new,
                )

    def _loop(self) -> None:
        backoff = 0.0
        while True:
            self._wake.wait(backoff or self._interval)
            self._wake.clear()
            waiting = len(self._requests)
            ok = self._drain()
            if ok:
                backoff = 0.0
                for _ in range(waiting):
                    self._requests.popleft().set()
                if self._closing:
                    return
            elif self.fatal is not None:
                while self._requests:
                    self._requests.popleft().set()  # flush() sees ``fatal`` and raises
                return
            else:
                backoff = min(max(backoff * 2, 0.1), 5.0)
                time.sleep(0)  # let the training thread run between retries


def spill(batch: Batch, run_id: str, directory: Path | None = None) -> Path:
    """Write unsent records as JSON lines beside the working directory; return the file."""
    path = (directory or Path.cwd()) / f"lineage-unsent-{run_id}.jsonl"
    with path.open("a", encoding="utf-8") as fh:
        for key, value in batch.params.items():
            fh.write(json.dumps({"type": "param", "key": key, "value": value}) + "\n")
        for key, value in batch.tags.items():
            fh.write(json.dumps({"type": "tag", "key": key, "value": value}) + "\n")
        for key, number, ts, step in batch.points:
            fh.write(
                json.dumps(
                    {"type": "metric", "key": key, "value": number, "timestamp": ts, "step": step}
                )
                + "\n"
            )
    return path
