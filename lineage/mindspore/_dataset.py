"""Describe a ``mindspore.dataset`` pipeline: sources, sizes, fingerprint, serialized graph."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lineage.tags import data_tag

# Attributes under which MindSpore's file-backed source datasets keep their location.
_PATH_ATTRS = ("dataset_dir", "dataset_files", "dataset_file", "dataset_path", "file_path")
# In-memory sources larger than this are not hashed (fingerprint left unset).
_MAX_HASH_BYTES = 512 << 20


@dataclass
class DatasetInfo:
    """What the recorder knows about one dataset (``train`` or ``val``)."""

    role: str
    batch_size: int | None = None
    steps: int | None = None
    samples: int | None = None
    sources: list[str] = field(default_factory=list)
    source_kinds: list[str] = field(default_factory=list)
    fingerprint: str | None = None
    pipeline: dict[str, Any] | None = None
    pipeline_error: str | None = None

    def params(self) -> dict[str, Any]:
        p = self.role
        out: dict[str, Any] = {
            f"{p}_size": self.samples,
            f"{p}_source": ",".join(self.source_kinds) or None,
        }
        if self.role == "train":
            out["batch_size"] = self.batch_size
            out["steps_per_epoch"] = self.steps
        else:
            out[f"{p}_batch_size"] = self.batch_size
        return {k: v for k, v in out.items() if v is not None}

    def tags(self) -> dict[str, Any]:
        role = self.role
        out: dict[str, Any] = {data_tag(role, "kind"): ",".join(self.source_kinds)}
        if self.sources:
            out[data_tag(role, "path")] = ",".join(self.sources)[:4000]
        if self.fingerprint:
            out[data_tag(role, "fingerprint")] = self.fingerprint
        if self.samples is not None:
            out[data_tag(role, "samples")] = self.samples
        return out


def _leaves(ds: Any) -> Iterator[Any]:
    children = list(getattr(ds, "children", None) or [])
    if not children:
        yield ds
        return
    for child in children:
        yield from _leaves(child)


def _paths(leaf: Any) -> list[str]:
    out: list[str] = []
    for attr in _PATH_ATTRS:
        value = getattr(leaf, attr, None)
        if isinstance(value, str) and value:
            out.append(value)
        elif isinstance(value, list | tuple):
            out.extend(str(v) for v in value if isinstance(v, str))
    return out


def _arrays(obj: Any, depth: int = 0) -> Iterator[np.ndarray]:
    """numpy arrays held by an in-memory source object (a few levels deep)."""
    if depth > 3:
        return
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, dict):
        for key in sorted(obj, key=str):
            yield from _arrays(obj[key], depth + 1)
    elif isinstance(obj, list | tuple):
        if obj and all(isinstance(v, np.ndarray) for v in obj):
            yield from obj
        elif obj and len(obj) <= 16:
            for v in obj:
                yield from _arrays(v, depth + 1)
    elif hasattr(obj, "__dict__") and depth < 2:
        for key in sorted(vars(obj)):
            yield from _arrays(vars(obj)[key], depth + 1)


def _memory_digest(leaf: Any, digest: Any) -> bool:
    source = getattr(leaf, "source", None)
    if source is None:
        return False
    arrays = list(_arrays(source))
    if not arrays or sum(a.nbytes for a in arrays) > _MAX_HASH_BYTES:
        return False
    for a in arrays:
        c = np.ascontiguousarray(a)
        digest.update(f"{c.dtype.str}{c.shape}".encode())
        digest.update(c.data)
    return True


def _path_digest(paths: list[str], digest: Any) -> bool:
    from lineage._fingerprint import fingerprint

    for path in paths:
        try:
            fp = fingerprint(path)
        except Exception:  # a glob pattern, a remote path, or a missing file
            return False
        digest.update(f"{fp.sha256}\n".encode())
    return True


def _serialize(ds: Any) -> tuple[dict[str, Any] | None, str | None]:
    from mindspore import dataset as mds

    try:
        graph = mds.serialize(ds)
        json.dumps(graph)  # a Python callable in a map cannot be stored: fail here, not later
        return graph, None
    except Exception as exc:  # recorded: the error goes in the lineage
        return _op_tree(
            ds
        ), f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _op_tree(ds: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"op_type": type(ds).__name__}
    for attr in ("batch_size", "drop_remainder", "count", "num_parallel_workers", "shuffle_flag"):
        value = getattr(ds, attr, None)
        if isinstance(value, bool | int | float | str):
            node[attr] = value
    ops = getattr(ds, "operations", None)
    if ops:
        node["operations"] = [getattr(o, "__name__", type(o).__name__) for o in ops]
    node["children"] = [_op_tree(c) for c in getattr(ds, "children", None) or []]
    return node


def describe_dataset(ds: Any, role: str, *, fingerprint: bool = True) -> DatasetInfo:
    """Sizes, sources, content fingerprint and the serialized pipeline of ``ds``.

    ``samples`` is the sum of the source datasets' sizes (after their samplers and shards).
    The fingerprint is ``sha256:`` over the source files (``lineage._fingerprint``) or over
    the numpy arrays an in-memory source holds; it is left unset when neither can be read.
    """
    info = DatasetInfo(role=role)
    for attr, getter in (("steps", "get_dataset_size"), ("batch_size", "get_batch_size")):
        with contextlib.suppress(Exception):
            setattr(info, attr, int(getattr(ds, getter)()))
    leaves = list(_leaves(ds))
    digest = hashlib.sha256()
    hashed = fingerprint
    samples = 0
    for leaf in leaves:
        info.source_kinds.append(type(leaf).__name__)
        paths = _paths(leaf)
        info.sources.extend(paths)
        try:
            samples += int(leaf.get_dataset_size())
        except Exception:  # -1: size unknown (a source that cannot tell)
            samples = -1
        if hashed:
            hashed = _path_digest(paths, digest) if paths else _memory_digest(leaf, digest)
    info.samples = samples if samples >= 0 and leaves else None
    if hashed and leaves:
        info.fingerprint = f"sha256:{digest.hexdigest()}"
    info.pipeline, info.pipeline_error = _serialize(ds)
    return info
