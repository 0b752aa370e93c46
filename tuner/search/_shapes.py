"""What the search layer reads of a campaign's config, as shapes (read-only protocols).

The config models (`tuner.config`) sit above this layer and fit these shapes; the search
layer names the shapes, never the models, so that it depends on nothing above it, for types
as for code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tuner._errors import ErrorAt

__all__ = [
    "CampaignShape",
    "FocusShape",
    "ParameterShape",
    "PrunerShape",
    "ResourcesShape",
    "SamplerShape",
    "WarmStartShape",
]


class FocusShape(Protocol):
    """Where most trials of a parameter sample (``parameters.NAME.focus``)."""

    @property
    def low(self) -> int | float | None: ...

    @property
    def high(self) -> int | float | None: ...

    @property
    def choices(self) -> Sequence[Any] | None: ...


class ParameterShape(Protocol):
    """One hyperparameter of the search space (``parameters.NAME``)."""

    @property
    def type(self) -> str: ...

    @property
    def low(self) -> int | float | None: ...

    @property
    def high(self) -> int | float | None: ...

    @property
    def log(self) -> bool: ...

    @property
    def step(self) -> int | float | None: ...

    @property
    def choices(self) -> Sequence[Any] | None: ...

    @property
    def when(self) -> Mapping[str, Any] | None: ...

    @property
    def focus(self) -> FocusShape | None: ...

    def grid_values(self) -> list[Any] | None:
        """Every value the parameter can take, or None when it is continuous."""
        ...


class SamplerShape(Protocol):
    """The ``sampler:`` section."""

    @property
    def name(self) -> str: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


class PrunerShape(Protocol):
    """The ``pruner:`` section."""

    @property
    def name(self) -> str: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


class WarmStartShape(Protocol):
    """The ``warm_start:`` section, as far as the sampler reads it."""

    @property
    def compare(self) -> str: ...


class ResourcesShape(Protocol):
    """The ``resources:`` section, as far as the sampler reads it."""

    @property
    def parallel(self) -> int: ...


class CampaignShape(Protocol):
    """What making a campaign's study and sampler reads of the whole config."""

    @property
    def study_name(self) -> str: ...

    def optuna_storage_url(self) -> str: ...

    @property
    def directions(self) -> Sequence[str]: ...

    @property
    def sampler(self) -> SamplerShape: ...

    @property
    def pruner(self) -> PrunerShape: ...

    @property
    def parameters(self) -> Mapping[str, ParameterShape]: ...

    @property
    def resources(self) -> ResourcesShape: ...

    @property
    def warm_start(self) -> WarmStartShape | None: ...

    @property
    def error(self) -> ErrorAt: ...

    @property
    def scheduler(self) -> object | None:
        """The ``scheduler:`` section; the sampler reads its rungs under ``model: rung``."""
        ...
