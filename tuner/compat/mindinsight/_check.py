"""MindInsight's rules for a mindoptimizer config, as its validator applied them.

Each failure is a :class:`~tuner._errors.ConfigError` of one line: the file, the key path,
the rule, and the value received.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner._errors import ConfigError
from tuner.compat.mindinsight._names import SYSTEM_PARAMS, SYSTEM_TARGETS

__all__ = ["MindConfig", "MindParam", "check_config"]

_TOP = ("command", "summary_base_dir", "tuner", "target", "parameters")
_PARAM_KEYS = ("bounds", "choice", "type", "source")
_NAME = re.compile(r"^[0-9A-Za-z_]+$")
_METHODS = ("ucb", "pi", "ei")
_TUNERS = ("gp", "random")


@dataclass
class MindParam:
    name: str
    bounds: tuple[float, float] | None
    choice: list[float] | None
    type: str | None
    source: str  # system_defined | user_defined, resolved as MindInsight resolves it


@dataclass
class MindConfig:
    command: str
    summary_base_dir: str
    tuner: str
    method: str | None
    target_name: str
    target_group: str  # system_defined | metric, resolved
    goal: str
    goal_given: bool
    params: list[MindParam]


def _fail(where: str, path: str, rule: str, value: Any = ...) -> ConfigError:
    got = "" if value is ... else f", got {_show(value)}"
    return ConfigError(f"{where}: {path} {rule}{got}.")


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return "null" if value is None else str(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_config(raw: Any, where: str) -> MindConfig:
    """Validate a parsed mindoptimizer YAML document (MindInsight's rules)."""
    if not isinstance(raw, Mapping):
        raise _fail(where, "the document", "must be a mapping of mindoptimizer keys", raw)
    for key in raw:
        if key not in _TOP:
            raise _fail(where, str(key), f"is not a mindoptimizer key (one of {', '.join(_TOP)})")
    for key in _TOP:
        if key not in raw:
            raise _fail(where, key, "is required")
    command, base = raw["command"], raw["summary_base_dir"]
    if not isinstance(command, str) or not command.strip():
        raise _fail(where, "command", "must be a non-empty string", command)
    if not isinstance(base, str) or not base.strip():
        raise _fail(where, "summary_base_dir", "must be a non-empty string", base)
    tuner, method = _check_tuner(raw["tuner"], where)
    target_name, group, goal, goal_given = _check_target(raw["target"], where)
    params = raw["parameters"]
    if not isinstance(params, Mapping) or not params:
        raise _fail(where, "parameters", "must be a mapping of at least one parameter", params)
    checked = [_check_param(str(name), spec, where) for name, spec in params.items()]
    return MindConfig(
        command=command.strip(),
        summary_base_dir=base,
        tuner=tuner,
        method=method,
        target_name=target_name,
        target_group=group,
        goal=goal,
        goal_given=goal_given,
        params=checked,
    )


def _check_tuner(tuner: Any, where: str) -> tuple[str, str | None]:
    if not isinstance(tuner, Mapping):
        raise _fail(where, "tuner", "must be a mapping {name: gp, args: {method: ucb}}", tuner)
    for key in tuner:
        if key not in ("name", "args"):
            raise _fail(where, f"tuner.{key}", "is not a tuner key (name, args)")
    name = tuner.get("name")
    if not isinstance(name, str) or name.lower() not in _TUNERS:
        raise _fail(where, "tuner.name", f"must be one of {', '.join(_TUNERS)}", name)
    args = tuner.get("args")
    if args is None:
        return name.lower(), None
    if not isinstance(args, Mapping):
        raise _fail(where, "tuner.args", "must be a mapping {method: ucb | pi | ei}", args)
    for key in args:
        if key != "method":
            raise _fail(where, f"tuner.args.{key}", "is not supported (only method)")
    method = args.get("method")
    if not isinstance(method, str) or method.lower() not in _METHODS:
        raise _fail(where, "tuner.args.method", f"must be one of {', '.join(_METHODS)}", method)
    return name.lower(), method.lower()


def _check_target(target: Any, where: str) -> tuple[str, str, str, bool]:
    if isinstance(target, str) and ":" in target:
        raise _fail(
            where,
            "target",
            "must be a mapping; YAML needs a space after the colon (`name: loss`)",
            target,
        )
    if not isinstance(target, Mapping):
        raise _fail(where, "target", "must be a mapping {group, name, goal}", target)
    for key in target:
        if key not in ("group", "name", "goal"):
            raise _fail(where, f"target.{key}", "is not a target key (group, name, goal)")
    name = target.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(where, "target.name", "is required and must be a string", name)
    group = target.get("group")
    if group is None:
        group = "system_defined" if name in SYSTEM_TARGETS else "metric"
    elif group not in ("system_defined", "metric"):
        raise _fail(where, "target.group", "must be system_defined or metric", group)
    elif group == "system_defined" and name not in SYSTEM_TARGETS:
        raise _fail(
            where,
            "target.group",
            f"system_defined is only for {', '.join(SYSTEM_TARGETS)}, not {name!r}",
            group,
        )
    goal = target.get("goal")
    if goal is not None and goal not in ("minimize", "maximize"):
        raise _fail(where, "target.goal", "must be minimize or maximize", goal)
    return name, group, goal or "minimize", goal is not None


def _check_param(name: str, spec: Any, where: str) -> MindParam:
    at = f"parameters.{name}"
    if not _NAME.match(name):
        raise _fail(where, at, "must be named with letters, digits and _ only", name)
    if not isinstance(spec, Mapping):
        raise _fail(where, at, "must be a mapping {bounds | choice, type, source}", spec)
    for key in spec:
        if key not in _PARAM_KEYS:
            raise _fail(where, f"{at}.{key}", f"is not a parameter key ({', '.join(_PARAM_KEYS)})")
    bounds, choice = spec.get("bounds"), spec.get("choice")
    kind, source = spec.get("type"), spec.get("source")
    if ("bounds" in spec) == ("choice" in spec):
        raise _fail(where, at, "must have exactly one of bounds or choice", dict(spec))
    if kind is not None and kind not in ("int", "float"):
        raise _fail(where, f"{at}.type", "must be int or float", kind)
    if source is not None and source not in ("system_defined", "user_defined"):
        raise _fail(where, f"{at}.source", "must be system_defined or user_defined", source)
    if source == "system_defined" and name not in SYSTEM_PARAMS:
        raise _fail(
            where,
            f"{at}.source",
            f"system_defined is only for {', '.join(SYSTEM_PARAMS)}, not {name!r}",
            source,
        )
    resolved = source or ("system_defined" if name in SYSTEM_PARAMS else "user_defined")
    system = resolved == "system_defined"
    if "bounds" in spec:
        if not isinstance(bounds, list) or len(bounds) != 2 or not all(_number(b) for b in bounds):
            raise _fail(where, f"{at}.bounds", "must be a list of 2 numbers [low, high)", bounds)
        if not bounds[1] > bounds[0]:
            raise _fail(
                where, f"{at}.bounds", "must have high > low (the range is [low, high))", bounds
            )
        if kind is None:
            raise _fail(where, f"{at}.type", "is required with bounds (int or float)")
        if kind == "int" and math.ceil(bounds[0]) >= bounds[1]:
            raise _fail(where, f"{at}.bounds", "must hold an integer for type: int", bounds)
    else:
        if not isinstance(choice, list) or not choice or not all(_number(c) for c in choice):
            raise _fail(where, f"{at}.choice", "must be a non-empty list of numbers", choice)
    if system:
        _check_system(name, at, kind, bounds, choice, where)
    return MindParam(
        name=name,
        bounds=(bounds[0], bounds[1]) if bounds is not None else None,
        choice=list(choice) if choice is not None else None,
        type=kind,
        source=resolved,
    )


def _check_system(name: str, at: str, kind: Any, bounds: Any, choice: Any, where: str) -> None:
    lr = name == "learning_rate"
    if kind is not None and kind != ("float" if lr else "int"):
        raise _fail(where, f"{at}.type", f"must be {'float' if lr else 'int'} for {name}", kind)
    if choice is not None:
        if lr and not all(isinstance(c, float) for c in choice):
            raise _fail(where, f"{at}.choice", "must hold floats for learning_rate", choice)
        if not lr and not all(isinstance(c, int) and not isinstance(c, bool) for c in choice):
            raise _fail(where, f"{at}.choice", f"must hold integers for {name}", choice)
    values = list(bounds[:1]) if bounds is not None else list(choice)
    if min(values) <= 0:
        raise _fail(
            where,
            f"{at}.{'bounds' if bounds is not None else 'choice'}",
            "must be > 0",
            bounds if bounds is not None else choice,
        )
    if lr and bounds is not None and bounds[1] > 1:
        raise _fail(where, f"{at}.bounds", "must have high <= 1 for learning_rate", bounds)
    if lr and choice is not None and max(choice) >= 1:
        raise _fail(where, f"{at}.choice", "must hold values < 1 for learning_rate", choice)
