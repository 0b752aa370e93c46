"""The protobuf messages of summary files, from MindSpore's own generated modules.

MindSpore ships ``summary_pb2`` (``Event``) and ``lineage_pb2`` (``LineageEvent``) under
``mindspore/train/``. Importing ``mindspore.train`` starts the whole framework (seconds, a
device runtime); the generated modules only need ``google.protobuf``, so they are loaded from
their files under a private package name instead, unless MindSpore is already imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from typing import Any

from lineage._errors import LineageError

__all__ = ["lineage_event", "summary_event"]

_ALIAS = "lineage.mindinsight._mindspore_pb"


def _module(name: str) -> Any:
    loaded = sys.modules.get(f"mindspore.train.{name}")
    if loaded is not None:
        return loaded
    if _ALIAS not in sys.modules:
        spec = importlib.util.find_spec("mindspore")
        if spec is None or spec.origin is None:
            raise LineageError(
                "reading MindInsight summaries needs the protobuf messages MindSpore ships "
                "(pip install mindspore), got no mindspore package"
            )
        train = os.path.join(os.path.dirname(spec.origin), "train")
        package = types.ModuleType(_ALIAS)
        package.__path__ = [train]
        sys.modules[_ALIAS] = package
    try:
        return importlib.import_module(f"{_ALIAS}.{name}")
    except Exception as exc:  # a MindSpore without these modules, or a protobuf mismatch
        raise LineageError(
            f"cannot load mindspore/train/{name}.py ({type(exc).__name__}: {exc}); "
            "it needs MindSpore >= 2.0"
        ) from exc


def summary_event() -> Any:
    """The ``Event`` message class of ``*_MS`` files."""
    return _module("summary_pb2").Event


def lineage_event() -> Any:
    """The ``LineageEvent`` message class of ``*_lineage`` files."""
    return _module("lineage_pb2").LineageEvent
