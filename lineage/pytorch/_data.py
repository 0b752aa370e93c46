"""What a watcher records about its training data, kept off the training steps.

Python work on another thread of the training process competes with the training thread for
the interpreter lock: each time a tensor operation returns, the training thread may wait up to
a switch interval (5 ms) for it. So nothing here runs Python beside the steps:

- before the first step, on the caller's thread: the pipeline, the first-batch sample, its
  statistics and column descriptions (a dozen items through the dataset's transforms);
- in a child process at idle priority: the pictures, rendered by ``_sample.py`` from the
  sample's raw arrays written to a folder (matplotlib's import and drawing take about a
  second of CPU); when it has not finished by the end, they are drawn then, in process;
- on a thread: the fingerprint of a tensor-backed dataset, which is hashing only
  (``hashlib`` releases the lock while it hashes a buffer);
- at `DataRecord.finish` (the end of the training): the fingerprint of any other dataset,
  which runs its ``__getitem__`` and transforms, and the logging of the pictures.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lineage import tags as T
from lineage.pytorch import _introspect as intro
from lineage.pytorch import _sample
from lineage.training import SAME_RANGE_OPS, noting_errors

_FINGERPRINT_ITEMS = 1024  # items of a map-style dataset hashed when it is not a TensorDataset
_PIPELINE_TITLE = "train data pipeline (source on top; the last step feeds the loader)"


# -- fingerprint -----------------------------------------------------------------------------
def _buffer(t: torch.Tensor) -> memoryview:
    # The tensor's bytes without a copy on the CPU (any dtype, bfloat16 included).
    return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().data


def _tensor_base(dataset: Any) -> tuple[Any, list[Any]]:
    subsets = []
    base = dataset
    while isinstance(base, torch.utils.data.Subset):
        subsets.append(base)
        base = base.dataset
    return base, subsets


def tensor_backed(dataset: Any) -> bool:
    """True for a ``TensorDataset`` (under ``Subset``s), whose fingerprint is hashing only."""
    return isinstance(_tensor_base(dataset)[0], torch.utils.data.TensorDataset)


def fingerprint(dataset: Any) -> str | None:
    """A sha256 over the dataset's data: every tensor of a ``TensorDataset``, else the first
    items of a map-style dataset with its length. None when the dataset cannot be indexed."""
    digest = hashlib.sha256()
    base, subsets = _tensor_base(dataset)
    for subset in subsets:
        digest.update(repr(list(subset.indices)[:100_000]).encode())
    if isinstance(base, torch.utils.data.TensorDataset):
        for t in base.tensors:
            digest.update(str((t.dtype, tuple(t.shape))).encode())
            digest.update(_buffer(t))
        return digest.hexdigest()
    try:
        n = len(dataset)
        digest.update(str(n).encode())
        for i in range(min(n, _FINGERPRINT_ITEMS)):
            _hash_item(digest, dataset[i])
    except Exception:  # an unindexable dataset has no fingerprint
        return None
    return digest.hexdigest()


def _hash_item(digest: Any, item: Any) -> None:
    if isinstance(item, torch.Tensor):
        digest.update(_buffer(item))
    elif isinstance(item, list | tuple):
        for x in item:
            _hash_item(digest, x)
    elif isinstance(item, Mapping):
        for k in sorted(item):
            digest.update(str(k).encode())
            _hash_item(digest, item[k])
    else:
        digest.update(repr(item).encode())


# -- value range -----------------------------------------------------------------------------
def implied_range(steps: Sequence[Mapping[str, Any]]) -> tuple[list[float], str] | None:
    """The ``[low, high]`` the input transforms imply, and the steps that set it; None when
    they do not say. ``ToTensor`` and ``ToDtype``/``ConvertImageDtype`` with scaling give
    [0, 1], ``PILToTensor`` [0, 255]; a ``Normalize`` with no range before it is read as
    working on [0, 1] input when its means are all <= 1, else on [0, 255] (as the MindSpore
    recorder reads it); other transforms are assumed to keep the range."""
    lo_hi: tuple[float, float] | None = None
    source: list[str] = []
    for step in steps:
        if step.get("applies_to"):  # a target transform
            continue
        op = str(step.get("op"))
        if op == "ToTensor" or (op in ("ToDtype", "ConvertImageDtype") and step.get("scale")):
            lo_hi, source = (0.0, 1.0), [op]
        elif op == "PILToTensor":
            lo_hi, source = (0.0, 255.0), [op]
        elif op == "Normalize":
            try:
                mean = [float(m) for m in np.ravel(step["mean"])]
                std = [float(s) for s in np.ravel(step["std"])]
                if lo_hi is None:
                    lo_hi = (0.0, 1.0 if max(mean) <= 1.0 else 255.0)
                ends = [(e - m) / s for m, s in zip(mean, std, strict=True) for e in lo_hi]
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                return None
            lo_hi = (min(ends), max(ends))
            source.append(f"Normalize(mean={mean}, std={std})")
        elif lo_hi is not None and op not in SAME_RANGE_OPS and "module" not in step:
            source.append(op)  # shown, assumed to keep the range
    if lo_hi is None or not all(map(math.isfinite, lo_hi)):
        return None
    return [round(lo_hi[0], 6), round(lo_hi[1], 6)], " -> ".join(source)


# -- the record ------------------------------------------------------------------------------
class DataRecord:
    """Records one loader's dataset into ``run``: `start` before the first step, `finish`
    once the training is over (it waits for the pictures and the fingerprint). Errors never
    fail the training: they become the tags ``lineage.data.train.{graph,sample}_error``."""

    def __init__(
        self, run: Any, *, count: int, classes: int | None, fingerprint_data: bool
    ) -> None:
        self.run = run
        self.count = count
        self.classes = classes
        self.fingerprint_data = fingerprint_data
        self.dir = Path(tempfile.mkdtemp(prefix="lineage-torch-data-"))
        self._dataset: Any = None
        self._render: subprocess.Popen[bytes] | None = None
        self._hasher: threading.Thread | None = None
        self._digest: str | None = None

    def start(self, loader: Any) -> None:
        dataset = self._dataset = loader.dataset
        steps: list[dict[str, Any]] = []
        job: dict[str, Any] = {"title": _PIPELINE_TITLE, "count": 0, "names": []}
        with noting_errors(self.run, "train", "graph_error"):
            steps = intro.pipeline(dataset)
            self._log_json("train_pipeline.json", {"pipeline": steps})
            job["steps"] = steps
        if self.count:
            with noting_errors(self.run, "train", "sample_error"):
                cols = self._sample(loader, dataset, steps)
                np.savez(self.dir / "sample.npz", *cols.values())
                job.update(count=min(self.count, len(dataset)), names=list(cols))
        (self.dir / "job.json").write_text(json.dumps(job, default=str), encoding="utf-8")
        try:
            self._render = subprocess.Popen(
                [sys.executable, _sample.__file__, str(self.dir)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # its errors go to errors.json
            )
        except OSError:
            self._render = None  # drawn in this process at finish
        if self.fingerprint_data and tensor_backed(dataset):
            self._hasher = threading.Thread(target=self._hash, name="lineage-hash", daemon=True)
            self._hasher.start()

    def _sample(self, loader: Any, dataset: Any, steps: Any) -> dict[str, np.ndarray]:
        n = min(self.count, len(dataset))
        # The first items through the dataset's transforms and the loader's collate: the batch
        # as the model receives it, without touching the loader's sampler (a fresh iterator
        # would draw from the shuffle's random generator).
        collate = getattr(loader, "collate_fn", None) or torch.utils.data.default_collate
        cols = _sample.columns(collate([dataset[i] for i in range(n)]))
        described = _sample.describe(cols, classes=self.classes)
        found = implied_range(steps)
        first = next((k for k, v in described.items() if v["kind"] != "label"), None)
        if found is not None and first is not None:
            described[first]["implied_range"], described[first]["range_source"] = found
        self.run.set_tags({T.data_tag("train", "columns"): json.dumps(described)[:4000]})
        self.run.log_metrics(_sample.statistics(cols), step=0)
        self._log_json(
            "train_sample.json",
            {name: a[:n].tolist() for name, a in cols.items() if a.size <= 65_536},
        )
        return cols

    def _log_json(self, name: str, content: Any) -> None:
        path = self.dir / "out" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(content, indent=1, default=str), encoding="utf-8")
        self.run.log_artifact(path, "dataset")

    def _hash(self) -> None:
        self._digest = fingerprint(self._dataset)

    def finish(self, timeout: float = 60.0) -> None:
        """Log the pictures (drawn here if the child has not finished) and the fingerprint
        (waiting up to ``timeout`` for its thread), and remove the folder."""
        try:
            self._finish(timeout)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _finish(self, timeout: float) -> None:
        if self.fingerprint_data:
            if self._hasher is not None:
                self._hasher.join(timeout)
            else:
                self._digest = fingerprint(self._dataset)
            if self._digest:
                self.run.set_tags({T.data_tag("train", "fingerprint"): self._digest})
        # The child draws at idle priority, so on a busy machine it may not have finished;
        # the training is over, so drawing here delays no step.
        if self._render is not None and self._render.poll() is None:
            self._render.kill()
            self._render.wait()
        if self._render is None or self._render.returncode != 0:
            _sample.render(self.dir)
        errors = json.loads((self.dir / "errors.json").read_text(encoding="utf-8"))
        for name in ("train_pipeline.png", "train_sample.png", "train_sample_table.png"):
            if (self.dir / "out" / name).is_file():
                self.run.log_artifact(self.dir / "out" / name, "dataset")
        if errors:
            self.run.set_tags({T.data_tag("train", k): v for k, v in errors.items()})
