"""The base of every config model, the objective model, and the registry-backed names."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from tuner.config._types import one_of
from tuner.search import PRUNERS, SAMPLERS

__all__ = ["DEFAULT_PRUNER", "DEFAULT_SAMPLER", "Goal", "Objective", "PrunerName", "SamplerName"]

Goal = Literal["minimize", "maximize"]
if TYPE_CHECKING:
    SamplerName = str
    PrunerName = str
else:
    #: A key of :data:`tuner.search.SAMPLERS` (the one place sampler names are spelled).
    SamplerName = one_of(SAMPLERS)
    #: A key of :data:`tuner.search.PRUNERS`.
    PrunerName = one_of(PRUNERS)
DEFAULT_SAMPLER = next(iter(SAMPLERS))
DEFAULT_PRUNER = next(iter(PRUNERS))

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_default=True)


class Objective(_Model):
    """One metric to optimize and its direction."""

    metric: str = Field(min_length=1, description="metric key, as logged by the trial")
    goal: Goal = Field(description="minimize or maximize")
