"""Rules across sections of a campaign config; each raises :class:`RuleError` with a full path."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tuner.config._placeholders import BUILTINS, placeholders
from tuner.config._resources import check_resources
from tuner.config._scheduler import check_scheduler
from tuner.config._types import RuleError, UnknownKey, format_value, suggest
from tuner.config._uris import check_uris
from tuner.config._warm_start import check_warm_start
from tuner.search import (
    ALTERNATIVES,
    GRID_SAMPLERS,
    MULTI_OBJECTIVE_SAMPLERS,
    NAMED_OPTIONS,
    NO_PRUNING,
    NUMERIC_ONLY,
    PRUNERS,
    SAMPLERS,
    missing_dependency,
)

if TYPE_CHECKING:
    from tuner.config._shape import Campaign

__all__ = ["campaign_warnings", "check_campaign"]


def check_campaign(config: Campaign, *, check_options: bool = True) -> None:
    _check_objectives(config)
    _check_conditions(config)
    _check_placeholders(config)
    _check_left_to_replace(config)
    _check_env(config)
    _check_sampler(config, check_options=check_options)
    if check_options:
        _check_pruner(config)
    check_uris(config.storage, config.lineage.tracking_uri)
    check_warm_start(config)
    check_scheduler(config)
    check_resources(config.resources, config.parameters)


def campaign_warnings(config: Campaign) -> list[str]:
    """What is legal but probably wrong, one line each (``tuner validate`` prints them)."""
    out = []
    unused = unused_parameters(config)
    if unused:
        names = ", ".join(unused)
        one = len(unused) == 1
        first = unused[0]
        form = f"{{{first}?}}" if config.parameters[first].when else f"{{{first}}}"
        out.append(
            f"{config.display_name}: parameter{'' if one else 's'} {names} "
            f"appear{'s' if one else ''} in no command placeholder, so a script that reads "
            f"only its arguments never receives {'it' if one else 'them'}; add {form} to "
            "command, or set reads_tuner_params: true if the script reads TUNER_PARAMS."
        )
    trial = config.trial
    if trial.retry_on is not None and trial.retries == 0:
        out.append(
            f"{config.display_name}: trial.retry_on is set but trial.retries is 0, so no "
            "failure is retried; set trial.retries to the re-runs a trial may have."
        )
    if isinstance(trial.preload, list):
        missing = [m for m in trial.preload if not module_installed(m)]
        if missing:
            out.append(
                f"{config.display_name}: trial.preload names module(s) the tuner's Python "
                f"cannot find, so they are not preloaded: {', '.join(missing)}."
            )
    return out


def module_installed(name: str) -> bool:
    """Whether module ``name`` can be imported, found without importing it or its packages
    (`importlib.util.find_spec` imports the parents of a dotted name: MindSpore, scikit-learn
    and MLflow would then load into the controller just to check or plan its trials)."""
    import importlib.machinery
    import importlib.util

    top, *rest = name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    for part in rest:
        if spec is None or not spec.submodule_search_locations:
            return False
        spec = importlib.machinery.PathFinder.find_spec(
            f"{spec.name}.{part}", list(spec.submodule_search_locations)
        )
    return spec is not None


def unused_parameters(config: Campaign) -> list[str]:
    """Parameters no ``command`` placeholder passes, unless the script reads TUNER_PARAMS."""
    if config.reads_tuner_params:
        return []
    used = {name for arg in config.command for name, _ in placeholders(arg)}
    return [name for name in config.parameters if name not in used]


def _check_objectives(config: Campaign) -> None:
    seen = {config.target.metric}
    for i, objective in enumerate(config.objectives):
        if objective.metric in seen:
            raise RuleError(
                ("objectives", i, "metric"), "repeats a metric already optimized", objective.metric
            )
        seen.add(objective.metric)
    if not config.objectives:
        return
    if config.budget.steps is not None:
        raise RuleError(
            ("budget", "steps"),
            "needs a single objective (steps are counted from the target's reports, which a "
            "campaign of several objectives does not pass to Optuna)",
            config.budget.steps,
        )
    if config.sampler.name not in MULTI_OBJECTIVE_SAMPLERS:
        raise RuleError(
            ("sampler", "name"),
            f"must be one of {', '.join(MULTI_OBJECTIVE_SAMPLERS)} with objectives "
            f"({config.sampler.name} optimizes one objective only)",
            config.sampler.name,
        )
    if config.pruner.name != NO_PRUNING:
        raise RuleError(
            ("pruner", "name"),
            f"must be {NO_PRUNING} with objectives (Optuna cannot prune multi-objective trials)",
            config.pruner.name,
        )


def _check_conditions(config: Campaign) -> None:
    params = config.parameters
    for name, param in params.items():
        for other, wanted in (param.when or {}).items():
            path = ("parameters", name, "when", other)
            if other == name:
                raise RuleError(path, "cannot make a parameter depend on itself", other)
            if other not in params:
                raise RuleError(
                    path,
                    "must name a declared parameter" + suggest(other, params),
                    other,
                    show_value=False,
                )
            parent = params[other]
            if parent.type != "categorical":
                raise RuleError(
                    path, f"must name a categorical parameter ({other} is {parent.type})", other
                )
            values = wanted if isinstance(wanted, list) else [wanted]
            if not values:
                raise RuleError(path, "must list at least one value", wanted)
            choices = parent.choices or []
            for value in values:
                if not any(_same(value, c) for c in choices):
                    raise RuleError(
                        path,
                        f"must be one of {other}'s choices {format_value(choices)}",
                        value,
                    )
    # A parameter's parents must be sampled before it; a cycle has no such order.
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = [*trail[trail.index(name) :], name]
            raise RuleError(
                ("parameters", cycle[0], "when"),
                "forms a cycle: " + " -> ".join(cycle),
                show_value=False,
            )
        state[name] = 1
        for other in params[name].when or {}:
            visit(other, [*trail, name])
        state[name] = 2

    for name in params:
        visit(name, [])


def _same(a: Any, b: Any) -> bool:
    # YAML `true` must not match a choice `1`, nor `1` match `1.0` in a different type family.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return type(a) is type(b) and a == b


def _check_placeholders(config: Campaign) -> None:
    for name in config.parameters:
        if name in BUILTINS:
            raise RuleError(
                ("parameters", name),
                f"is a reserved placeholder name ({', '.join(BUILTINS)}); rename the parameter",
                name,
                show_value=False,
            )
    known = [*config.parameters, *BUILTINS]
    for i, arg in enumerate(config.command):
        for ref, optional in placeholders(arg):
            if ref not in known:
                raise RuleError(
                    ("command", i),
                    f"has placeholder {{{ref}{'?' if optional else ''}}}, which names no "
                    "parameter" + suggest(ref, known) + f" (built-ins: {', '.join(BUILTINS)})",
                    arg,
                )
            param = config.parameters.get(ref)
            if param is not None and param.when and not optional:
                raise RuleError(
                    ("command", i),
                    f"has placeholder {{{ref}}} for a conditional parameter absent from some "
                    f"trials; write {{{ref}?}} to leave this argument out when it is inactive",
                    arg,
                )


#: What marks a value ``tuner init`` could not derive (a run that recorded no command): the
#: campaign cannot run until the user replaces it.
LEFT_TO_REPLACE = "CHANGE-ME"


def _check_left_to_replace(config: Campaign) -> None:
    rule = (
        f"holds a {LEFT_TO_REPLACE} placeholder left by tuner init; replace it with the "
        "command that trains one run, passing each parameter as a {name} placeholder"
    )
    for i, arg in enumerate(config.command):
        if LEFT_TO_REPLACE in arg:
            raise RuleError(("command", i), rule, arg)
    for name, value in config.env.items():
        if LEFT_TO_REPLACE in value:
            raise RuleError(("env", name), f"holds a {LEFT_TO_REPLACE} placeholder", value)


def _check_env(config: Campaign) -> None:
    # A LINEAGE_* value the trials' recording would refuse fails every trial: refuse it here.
    from lineage import environment

    found = environment.refused(config.env)
    if found is not None:
        name, rule, value = found
        raise RuleError(("env", name), f"must be {rule}", value)


def _check_sampler(config: Campaign, *, check_options: bool = True) -> None:
    sampler = config.sampler
    params = config.parameters
    if check_options:  # needs Optuna's classes (an import of ~0.5 s)
        _check_options(("sampler", "options"), sampler.options, SAMPLERS[sampler.name]())
    hint = missing_dependency(sampler.name)
    if hint is not None:
        raise RuleError(("sampler", "name"), ": " + hint, show_value=False)
    name = sampler.name
    if name in NUMERIC_ONLY:
        for pname, param in params.items():
            if param.type == "categorical":
                raise RuleError(
                    ("sampler", "name"),
                    f"{name} cannot sample categorical parameters (parameters.{pname}); "
                    f"use {ALTERNATIVES[name]}",
                    name,
                )
        numeric = [n for n, p in params.items() if not p.when]
        if len(numeric) < NUMERIC_ONLY[name]:
            raise RuleError(
                ("sampler", "name"),
                f"{name} needs at least {_count(NUMERIC_ONLY[name])} unconditional numeric "
                f"parameters; use {ALTERNATIVES[name]}",
                name,
            )
    if name in GRID_SAMPLERS:
        space = sampler.options.get("search_space")
        if space is not None:
            if not isinstance(space, dict):
                raise RuleError(
                    ("sampler", "options", "search_space"),
                    "must map parameter names to lists of values",
                    space,
                )
            for key, values in space.items():
                path = ("sampler", "options", "search_space", key)
                if key not in params:
                    raise RuleError(
                        path, "must name a declared parameter" + suggest(key, params), key
                    )
                if not isinstance(values, list) or not values:
                    raise RuleError(path, "must be a non-empty list of values", values)
                for i, value in enumerate(values):
                    problem = _outside(params[key], value)
                    if problem:
                        raise RuleError((*path, i), problem, value)
        for pname, param in params.items():
            if param.when:
                raise RuleError(
                    ("parameters", pname, "when"),
                    f"cannot be used with sampler {name} (the grid would repeat trials); "
                    f"use {ALTERNATIVES[name]}",
                    param.when,
                )
            if (space is None or pname not in space) and param.grid_values() is None:
                raise RuleError(
                    ("parameters", pname),
                    f"needs a step (or choices) for sampler {name}, or list its values in "
                    "sampler.options.search_space",
                    show_value=False,
                )


def _count(n: int) -> str:
    return {1: "one", 2: "two", 3: "three"}.get(n, str(n))


def _outside(param: Any, value: Any) -> str | None:
    """Why ``value`` is not a value of ``param``, or None."""
    if param.type == "categorical":
        if any(_same(value, c) for c in param.choices or []):
            return None
        return f"must be one of the parameter's choices {format_value(param.choices)}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number for type: {param.type}"
    if param.type == "int" and not float(value).is_integer():
        return "must be an integer for type: int"
    if not param.low <= value <= param.high:
        return f"must be within the parameter's [{param.low}, {param.high}]"
    return None


def _check_pruner(config: Campaign) -> None:
    _check_options(("pruner", "options"), config.pruner.options, PRUNERS[config.pruner.name]())


_OBJECT_TYPES = ("Callable", "Sampler", "Crossover", "Mutation", "FrozenTrial", "Study")
_PLAIN = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}


def _check_options(path: tuple[str, ...], options: dict[str, Any], cls: Callable[..., Any]) -> None:
    params = {
        name: p
        for name, p in inspect.signature(cls).parameters.items()
        if name not in ("seed", "self")
    }
    owner = getattr(cls, "__name__", str(cls))
    for key, value in options.items():
        if key not in params:
            raise UnknownKey((*path, key), params, owner=owner)
        raw = params[key].annotation
        annotation = raw.__name__ if isinstance(raw, type) else str(raw)
        if key in NAMED_OPTIONS:
            names = NAMED_OPTIONS[key]
            if value is not None and value not in names:
                raise RuleError((*path, key), f"must be one of {', '.join(names)}", value)
            continue
        if any(word in annotation for word in _OBJECT_TYPES):
            raise RuleError(
                (*path, key),
                f"takes a Python object in {owner} ({annotation}), which a config cannot give",
                value,
            )
        _check_plain(path, key, value, annotation, owner)


def _check_plain(path: tuple[str, ...], key: str, value: Any, annotation: str, owner: str) -> None:
    """Check ``value`` against an annotation made only of int/float/bool/str/None."""
    parts = [p.strip() for p in annotation.split("|")]
    if not parts or any(p not in _PLAIN and p != "None" for p in parts):
        return  # something richer (a dict, a Mapping): the constructor judges it
    if value is None and "None" in parts:
        return
    for part in parts:
        if part in _PLAIN and isinstance(value, _PLAIN[part]):
            if isinstance(value, bool) and part != "bool":
                continue
            return
    raise RuleError((*path, key), f"must be {' or '.join(parts)} for {owner}", value)
