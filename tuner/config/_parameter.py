"""One hyperparameter of the search space: its type, range or choices, and condition."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from tuner.config._base import _Model
from tuner.config._types import Number, RuleError, Scalar

__all__ = ["Focus", "Parameter"]


class Focus(_Model):
    """Where most trials of a parameter sample: a sub-range of its ``[low, high]``, or some of
    its choices."""

    low: Number = Field(
        default=None, description="float, int: lower end, inclusive (>= the parameter's low)"
    )
    high: Number = Field(
        default=None, description="float, int: upper end, inclusive (<= the parameter's high)"
    )
    choices: list[Scalar] | None = Field(
        default=None, description="categorical: some of the parameter's choices"
    )


class Parameter(_Model):
    """One hyperparameter of the search space."""

    # Lets an editor flag a float without bounds or a categorical without choices.
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "if": {"properties": {"type": {"const": "categorical"}}},
                    "then": {
                        "required": ["choices"],
                        "not": {"anyOf": [{"required": ["low"]}, {"required": ["high"]}]},
                    },
                    "else": {"required": ["low", "high"], "not": {"required": ["choices"]}},
                }
            ]
        }
    )

    type: Literal["float", "int", "categorical"] = Field(description="float, int or categorical")
    low: Number = Field(default=None, description="lower bound (float, int), inclusive")
    high: Number = Field(default=None, description="upper bound (float, int), inclusive")
    log: bool = Field(default=False, description="sample on a log scale (needs low > 0)")
    step: Number = Field(default=None, description="discretization step (float, int)")
    choices: list[Scalar] | None = Field(
        default=None, description="the values of a categorical parameter"
    )
    when: dict[str, Scalar | list[Scalar]] | None = Field(
        default=None,
        description="only sample this parameter when every named categorical parameter "
        "has the given value (or one of the listed values)",
    )
    focus: Focus | None = Field(
        default=None,
        description="where most trials sample (what `tuner init` refined): {low, high} inside "
        "[low, high], or {choices} among the choices; one trial in five samples the whole "
        "space, and the focus widens when the best trials sit at its edge or outside it",
    )

    @model_validator(mode="after")
    def _check(self) -> Parameter:
        if self.type == "categorical":
            for key in ("low", "high", "step"):
                if getattr(self, key) is not None:
                    raise RuleError(
                        (key,), "is not allowed for type: categorical", getattr(self, key)
                    )
            if self.log:
                raise RuleError(("log",), "is not allowed for type: categorical", self.log)
            if self.focus is not None:
                self._check_focus_choices(self.focus)
            if self.choices is None:
                raise RuleError(("choices",), "is required for type: categorical", show_value=False)
            if not self.choices:
                raise RuleError(("choices",), "must list at least one value", self.choices)
            for i, choice in enumerate(self.choices):
                # Optuna finds a choice with ==, so true and 1 (or 1 and 1.0) are one choice.
                if any(choice == earlier for earlier in self.choices[:i]):
                    raise RuleError(("choices", i), "repeats an earlier choice", choice)
            return self
        if self.choices is not None:
            raise RuleError(
                ("choices",), f"is only for type: categorical, not {self.type}", self.choices
            )
        if self.low is None:
            raise RuleError(("low",), f"is required for type: {self.type}", show_value=False)
        if self.high is None:
            raise RuleError(("high",), f"is required for type: {self.type}", show_value=False)
        if self.type == "int":
            for key in ("low", "high", "step"):
                value = getattr(self, key)
                if value is not None and not float(value).is_integer():
                    raise RuleError((key,), "must be an integer for type: int", value)
                if value is not None:
                    setattr(self, key, int(value))
        if not self.low < self.high:
            raise RuleError(("high",), f"must be > low ({self.low})", self.high)
        if self.log and self.low <= 0:
            raise RuleError(("low",), "must be > 0 when log: true", self.low)
        if self.step is not None:
            if self.step <= 0:
                raise RuleError(("step",), "must be > 0", self.step)
            if self.log and (self.type == "float" or self.step != 1):
                raise RuleError(
                    ("step",), f"cannot be combined with log: true for type: {self.type}", self.step
                )
            span = (self.high - self.low) / self.step
            if abs(span - round(span)) > 1e-8 * max(1.0, abs(span)):
                raise RuleError(
                    ("high",),
                    f"must be low + a whole number of steps ({self.low} + k * {self.step})",
                    self.high,
                )
        if self.focus is not None:
            self._check_focus(self.focus)
        if self.type == "float":
            # After the checks, so messages show the values as written.
            self.low, self.high = float(self.low), float(self.high)
            self.step = None if self.step is None else float(self.step)
        return self

    def _check_focus_choices(self, focus: Focus) -> None:
        if focus.low is not None or focus.high is not None:
            key = "low" if focus.low is not None else "high"
            raise RuleError(
                ("focus", key), "is not allowed for type: categorical", show_value=False
            )
        if not focus.choices:
            raise RuleError(
                ("focus", "choices"), "must list at least one of choices", focus.choices
            )
        for i, choice in enumerate(focus.choices):
            if not any(choice == c and type(choice) is type(c) for c in self.choices or []):
                raise RuleError(("focus", "choices", i), "must be one of choices", choice)

    def _check_focus(self, focus: Focus) -> None:
        assert self.low is not None and self.high is not None
        if focus.choices is not None:
            raise RuleError(
                ("focus", "choices"),
                f"is only for type: categorical, not {self.type}",
                focus.choices,
            )
        if focus.low is None or focus.high is None:
            missing = "low" if focus.low is None else "high"
            raise RuleError(("focus", missing), "is required", show_value=False)
        if not self.low <= focus.low < focus.high:
            raise RuleError(
                ("focus", "low"), f"must be >= low ({self.low}) and < focus.high", focus.low
            )
        if focus.high > self.high:
            raise RuleError(("focus", "high"), f"must be <= high ({self.high})", focus.high)
        if self.type == "int":
            for key in ("low", "high"):
                value = getattr(focus, key)
                if not float(value).is_integer():
                    raise RuleError(("focus", key), "must be an integer for type: int", value)
                setattr(focus, key, int(value))
        else:
            focus.low, focus.high = float(focus.low), float(focus.high)

    @property
    def conditional(self) -> bool:
        return bool(self.when)

    def grid_values(self) -> list[Any] | None:
        """Every value this parameter can take, or None when it is continuous."""
        if self.type == "categorical":
            return list(self.choices or [])
        step = self.step if self.step is not None else (1 if self.type == "int" else None)
        if step is None:
            return None
        assert self.low is not None and self.high is not None
        n = round((self.high - self.low) / step)
        if self.type == "int":
            return [int(self.low) + i * int(step) for i in range(n + 1)]
        return [float(self.low + i * step) for i in range(n + 1)]
