"""The ``scheduler:`` section: asynchronous successive halving (``asha``) and
population-based training (``pbt``), both in reported steps.

Rules across sections (no pruner beside a scheduler, a ``perturb`` key that names a
parameter of the right kind, the budget of a population) live in
:func:`check_scheduler`, run from the campaign's validator.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from tuner.config._base import _Model
from tuner.config._types import RuleError, suggest
from tuner.search import NO_PRUNING

if TYPE_CHECKING:
    from tuner.config._shape import Campaign

__all__ = ["AshaConfig", "PbtConfig", "Perturb", "SchedulerConfig", "check_scheduler"]


class AshaConfig(_Model):
    """Asynchronous successive halving: at each rung step a trial goes on only if its value
    is in the top 1/reduction_factor of the values reached there so far; the others are
    paused (``promote``: kept with their checkpoint, resumed from it once later trials
    rank them in the top) or stopped (``stop``)."""

    name: Literal["asha"] = Field(description="asha")
    mode: Literal["promote", "stop"] = Field(
        default="promote",
        description="promote: a trial below the cut is paused at its checkpoint and resumed "
        "when it ranks in the top later; stop: it is stopped for good",
    )
    reduction_factor: int = Field(
        default=3, ge=2, description="eta: the top 1/eta of a rung goes on to the next"
    )
    min_resource: int = Field(default=1, ge=1, description="the first rung, in reported steps")
    max_resource: int = Field(
        ge=1, description="the last step of a full training (no rung at or beyond it)"
    )
    brackets: int = Field(
        default=3,
        ge=1,
        description="Hyperband: bracket s starts its rungs at min_resource * eta**s; each "
        "chain is ranked within one bracket, dealt so that every bracket spends about the "
        "same epochs (1: plain asha; capped at the number of rungs; the default 3 was the "
        "better measured on mf-prior-bench, see the schedulers guide)",
    )
    model: Literal["study", "rung"] = Field(
        default="rung",
        description="what the sampler fits: study: every trial as the study holds it (a "
        "paused one as PRUNED at its rung); rung: each chain's value at the highest rung "
        "with at least model_points values (BOHB; the default, the better measured)",
    )
    model_points: int = Field(
        default=10,
        ge=2,
        description="model: rung fits the highest rung reached by at least this many chains",
    )

    @model_validator(mode="after")
    def _order(self) -> AshaConfig:
        if self.max_resource <= self.min_resource:
            raise RuleError(
                ("max_resource",),
                f"must be > min_resource ({self.min_resource})",
                self.max_resource,
            )
        return self

    def rungs(self) -> list[int]:
        """The rung steps: min_resource * reduction_factor**k below max_resource."""
        out, step = [], self.min_resource
        while step < self.max_resource:
            out.append(step)
            step *= self.reduction_factor
        return out


class Perturb(_Model):
    """How PBT's explore step changes one parameter: exactly one of the three."""

    factor: list[float] | None = Field(
        default=None,
        description="numbers: multiply by one of these factors, picked at random, clipped to "
        "the parameter's range, e.g. [0.8, 1.2]",
    )
    neighbour: bool | None = Field(
        default=None, description="choices: move to the next or previous choice at random"
    )
    resample: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="any parameter: with this probability draw a fresh value from its range",
    )

    @model_validator(mode="after")
    def _one(self) -> Perturb:
        given = [k for k in ("factor", "neighbour", "resample") if getattr(self, k) is not None]
        if len(given) != 1:
            raise RuleError(
                (),
                "must set exactly one of factor, neighbour, resample",
                {k: getattr(self, k) for k in given},
                show_value=bool(given),
            )
        if self.factor is not None and (
            not self.factor or any(not math.isfinite(f) or f <= 0 for f in self.factor)
        ):
            raise RuleError(("factor",), "must list positive numbers", self.factor)
        if self.neighbour is False:
            raise RuleError(("neighbour",), "must be true when given", self.neighbour)
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("factor", "neighbour", "resample") if getattr(self, k) is not None)


class PbtConfig(_Model):
    """Population-based training: every ``interval`` steps a member in the bottom
    ``quantile`` of the population copies the checkpoint of a member in the top quantile
    (exploit) and continues with that member's parameters perturbed (explore)."""

    name: Literal["pbt"] = Field(description="pbt")
    population: int = Field(
        ge=2,
        description="members trained together; equals budget.trials (a member counts "
        "once, whatever its segments)",
    )
    interval: int = Field(ge=1, description="reported steps between exploit decisions")
    quantile: float = Field(
        default=0.25,
        gt=0,
        le=0.5,
        description="the bottom fraction that copies the top fraction",
    )
    perturb: dict[str, Perturb] = Field(
        description="the parameters explore may change, and how (other parameters are "
        "copied from the member whose checkpoint is taken)"
    )
    synch: bool = Field(
        default=False,
        description="decide at multiples of interval once every live member reached them "
        "(each pauses there), so a seeded campaign's decisions repeat; else each member is "
        "judged as it reports",
    )

    @model_validator(mode="after")
    def _some(self) -> PbtConfig:
        if not self.perturb:
            raise RuleError(("perturb",), "must name at least one parameter", self.perturb)
        return self


SchedulerConfig = Annotated[AshaConfig | PbtConfig, Field(discriminator="name")]


def check_scheduler(config: Campaign) -> None:
    """The rules a scheduler sets across sections; each raises `RuleError`."""
    scheduler = config.scheduler
    if not isinstance(scheduler, AshaConfig | PbtConfig):
        return
    if config.pruner.name != NO_PRUNING:
        raise RuleError(
            ("pruner", "name"),
            f"must be {NO_PRUNING} with scheduler {scheduler.name} (the scheduler decides "
            "which trials stop)",
            config.pruner.name,
        )
    if config.objectives:
        raise RuleError(
            ("scheduler", "name"),
            "needs a single objective (it ranks trials by target alone)",
            scheduler.name,
        )
    if isinstance(scheduler, PbtConfig):
        _check_pbt(config, scheduler)


def _check_pbt(config: Campaign, pbt: PbtConfig) -> None:
    if config.budget.trials is not None and config.budget.trials != pbt.population:
        raise RuleError(
            ("budget", "trials"),
            f"must equal scheduler.population ({pbt.population}) with scheduler pbt (each "
            "member counts once, whatever its segments)",
            config.budget.trials,
        )
    params = config.parameters
    for name, how in pbt.perturb.items():
        path = ("scheduler", "perturb", name)
        if name not in params:
            raise RuleError(
                path, "must name a declared parameter" + suggest(name, params), name,
                show_value=False,
            )  # fmt: skip
        param = params[name]
        if param.when:
            raise RuleError(path, "cannot perturb a conditional parameter", name, show_value=False)
        if how.kind == "factor" and param.type == "categorical":
            raise RuleError(
                (*path, "factor"), f"needs a number parameter ({name} is categorical); use "
                "neighbour or resample", how.factor,
            )  # fmt: skip
        if how.kind == "neighbour" and param.type != "categorical":
            raise RuleError(
                (*path, "neighbour"), f"needs a categorical parameter ({name} is {param.type}); "
                "use factor or resample", how.neighbour,
            )  # fmt: skip
