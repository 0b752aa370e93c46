"""The ``warm_start:`` section: earlier runs a campaign learns from before its first trial.

```yaml
warm_start:
  from:
    - experiment: mnist-sweeps           # or  campaign: NAME   (exactly one of the two)
      where: "params.batch_size = '32'"  # optional, the `lineage runs --where` language
      tracking_uri: sqlite:///other.db   # optional (default: the campaign's lineage store)
      params: {lr: optimizer.lr}         # optional: campaign parameter -> recorded param
      target: accuracy                   # optional: recorded metric of the campaign's target
  enqueue_best: 0                        # the K best earlier configurations re-run first
  compare: auto                          # auto (default), value or rank: how the sampler sees them
```

Only what can be checked without opening a store is checked here (one source kind, the
``where`` syntax, the URI's shape, names that must be campaign parameters or objectives);
`tuner.history.load_history` reads the sources and reports the rest (an unknown
experiment, a mapped name no run recorded, an unreachable store) as the same one-line
:class:`~tuner.ConfigError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from tuner.config._base import _Model
from tuner.config._sections import Int
from tuner.config._types import RuleError, suggest

if TYPE_CHECKING:
    from tuner.config._shape import Campaign

__all__ = ["WarmStartConfig", "WarmStartSource", "check_warm_start"]


class WarmStartSource(_Model):
    """One set of earlier runs: an MLflow experiment, or the trials of an earlier campaign."""

    experiment: str | None = Field(
        default=None, min_length=1, description="MLflow experiment whose runs are imported"
    )
    campaign: str | None = Field(
        default=None,
        min_length=1,
        description="earlier tuner campaign whose trials are imported (its trial runs, in "
        "whatever experiment they were recorded)",
    )
    where: str | None = Field(
        default=None,
        description="only the runs this filter selects (the `lineage runs --where` language)",
    )
    tracking_uri: str | None = Field(
        default=None,
        description="the MLflow store holding the runs (default: the campaign's; relative "
        "SQLite paths against the config file's directory)",
    )
    params: dict[str, str] = Field(
        default_factory=dict,
        description="campaign parameter -> the param name the runs recorded it under "
        "(default: the same name), e.g. {lr: optimizer.lr}",
    )
    target: str | dict[str, str] | None = Field(
        default=None,
        description="the metric name the runs recorded the campaign's target under; for a "
        "multi-objective campaign a mapping objective metric -> recorded name",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> WarmStartSource:
        if (self.experiment is None) == (self.campaign is None):
            both = self.experiment is not None
            raise RuleError(
                ("campaign",) if both else (),
                "must name exactly one of experiment: or campaign:"
                + (" (both are given)" if both else ""),
                show_value=False,
            )
        return self

    @field_validator("where")
    @classmethod
    def _where(cls, where: str | None) -> str | None:
        if where is None or not where.strip():
            return None
        from lineage import QuerySyntaxError
        from lineage.query import parse_where

        try:
            parse_where(where)
        except QuerySyntaxError as exc:
            reason = str(exc).splitlines()[0].removeprefix("malformed --where ")
            raise RuleError((), f"is not a valid filter ({reason})", where) from None
        return where

    @field_validator("tracking_uri")
    @classmethod
    def _uri(cls, uri: str | None) -> str | None:
        if uri:
            from tuner.config._uris import check_tracking_uri

            check_tracking_uri((), uri)
        return uri or None

    @property
    def kind(self) -> str:
        """``experiment`` or ``campaign``."""
        return "experiment" if self.experiment is not None else "campaign"

    @property
    def name(self) -> str:
        """The experiment's or the campaign's name."""
        return self.experiment if self.experiment is not None else str(self.campaign)

    @property
    def label(self) -> str:
        """``experiment 'x'`` / ``campaign 'y'``, for messages."""
        return f"{self.kind} {self.name!r}"

    def recorded_param(self, name: str) -> str:
        """The param name the runs hold campaign parameter ``name`` under."""
        return self.params.get(name, name)

    def recorded_metric(self, metric: str, *, first: bool) -> str:
        """The metric name the runs hold objective ``metric`` under (``first``: the target)."""
        if isinstance(self.target, dict):
            return self.target.get(metric, metric)
        if self.target is not None and first:
            return self.target
        return metric


class WarmStartConfig(_Model):
    """Earlier runs imported into the study as finished trials before the first ask."""

    sources: list[WarmStartSource] = Field(
        alias="from",
        min_length=1,
        description="the sets of earlier runs, each {experiment: NAME} or {campaign: NAME}",
    )
    enqueue_best: Int = Field(
        default=0,
        ge=0,
        description="re-run the K best imported configurations first, as new trials (they "
        "count against budget.trials; imported trials do not)",
    )
    compare: Literal["auto", "value", "rank"] = Field(
        default="auto",
        description="how the sampler weighs imported runs against the campaign's own trials: "
        "auto (measured from the campaign's trials: a source counts only once its rank "
        "agreement with them exceeds chance; the agreement and level shift then choose value, "
        "rank or a discount, and its weight fades with the campaign's own trials and with "
        "disagreement, down to none), value (as recorded) or rank (while an imported run is ahead of the campaign's best, "
        "each set's values are replaced by their normal scores within the set, so earlier runs "
        "that scored better than the new task can do not hold the search at their optimum)",
    )


def check_warm_start(config: Campaign) -> None:
    """Rules across sections: mapped names must be campaign parameters / objectives."""
    section = config.warm_start
    if not isinstance(section, WarmStartConfig):
        return
    params = list(config.parameters)
    metrics = config.metric_names
    for i, source in enumerate(section.sources):
        at = ("warm_start", "from", i)
        for name in source.params:
            if name not in config.parameters:
                raise RuleError(
                    (*at, "params", name),
                    "must be a campaign parameter"
                    + (suggest(name, params) or f" ({', '.join(params)})"),
                    show_value=False,
                )
        if isinstance(source.target, dict):
            for metric in source.target:
                if metric not in metrics:
                    raise RuleError(
                        (*at, "target", metric),
                        "must be an objective metric"
                        + (suggest(metric, metrics) or f" ({', '.join(metrics)})"),
                        show_value=False,
                    )
        elif source.target is not None and config.objectives:
            raise RuleError(
                (*at, "target"),
                "must be a mapping objective metric -> recorded name in a multi-objective "
                f"campaign ({', '.join(metrics)})",
                source.target,
            )
