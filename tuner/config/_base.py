"""The base of every config model, and the objective model."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Goal", "Objective", "PrunerName", "SamplerName"]

Goal = Literal["minimize", "maximize"]
SamplerName = Literal["tpe", "gp", "random", "cmaes", "grid", "qmc", "nsga2"]
PrunerName = Literal["median", "hyperband", "percentile", "none"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_default=True)


class Objective(_Model):
    """One metric to optimize and its direction."""

    metric: str = Field(min_length=1, description="metric key, as logged by the trial")
    goal: Goal = Field(description="minimize or maximize")
