"""Import an optional framework, or fail with the one line that says how to install it."""

from __future__ import annotations

import importlib
from types import ModuleType

from lineage._errors import UsageError


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``; when it is missing raise `UsageError` naming the package extra.

    Only a missing module is translated: an installed framework that fails to import for
    another reason (a broken build, a missing shared library) raises its own error.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != top:
            raise
        raise UsageError(
            f"lineage.{extra} needs the {top!r} package, which is not installed: "
            f"pip install 'lineage-tuner[{extra}]'"
        ) from None
