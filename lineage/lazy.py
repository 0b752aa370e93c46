"""Names a package loads on first use (a module ``__getattr__``, PEP 562).

A package's ``__init__`` imports what is cheap and lists the rest by the module that defines
each; the first access imports that module and keeps the value in the package's namespace,
so later accesses are plain lookups::

    __getattr__ = lazy_names(globals(), {"format_table": "lineage.query._layout"})

This module imports nothing (``__import__`` is built in; importing ``importlib`` would cost a
command-line call ~0.5 ms), so loading names lazily costs a package nothing at start-up.
`tuner` uses it too: it is part of lineage's public API.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: dict[str, Any],
    names: Mapping[str, str],
    *,
    modules: Mapping[str, str] | None = None,
) -> Callable[[str], Any]:
    """The ``__getattr__`` of the package whose globals are ``namespace``.

    ``names`` maps each name loaded on first use to the module that defines it, written
    ``"module:attribute"`` where the package gives it another name than the module does;
    ``modules`` maps names bound to a whole module. The value is stored in ``namespace`` on
    first access. Any other name raises `AttributeError`, as for a module without it."""
    package = namespace["__name__"]
    whole = modules or {}

    def __getattr__(name: str) -> Any:
        if name in whole:
            value = __import__(whole[name], fromlist=["__name__"])
        elif name in names:
            module, _, attribute = names[name].partition(":")
            attribute = attribute or name
            value = getattr(__import__(module, fromlist=[attribute]), attribute)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    return __getattr__
