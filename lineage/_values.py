"""A base for the small value classes that ``lineage runs`` loads on every call.

NamedTuple and dataclasses would read better, but ``import typing`` plus building each
NamedTuple class, or ``import dataclasses`` (it imports ``inspect``), cost a query command
5-20 ms of its ~60 ms start-up. The modules on that path therefore define plain classes on
:class:`Value` and import ``typing`` only for the type checker::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import Any

(mypy treats any constant named ``TYPE_CHECKING`` as true.)
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["Value"]


class Value:
    """Equality, hash, repr and tuple unpacking from the subclass's ``_fields`` (in order),
    which it also uses as its ``__slots__`` (``__slots__ = _fields``: written directly, a
    linter would sort them). A subclass whose fields hold lists or dicts sets
    ``__hash__ = None``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Value) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __iter__(self) -> Iterator[Any]:  # unpacks like the NamedTuple it replaces
        return iter(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"
