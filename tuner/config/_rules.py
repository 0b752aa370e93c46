"""Rules across sections of a campaign config; each raises :class:`RuleError` with a full path."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from tuner.config._placeholders import BUILTINS, placeholders
from tuner.config._types import RuleError, format_value

if TYPE_CHECKING:
    from tuner.config._model import CampaignConfig

__all__ = ["check_campaign", "suggest"]

#: Samplers that accept several objectives (Optuna 4.x/5.x); CMA-ES is single-objective.
MULTI_OBJECTIVE_SAMPLERS = ("tpe", "nsga2", "gp", "random", "qmc", "grid")


def suggest(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_campaign(config: CampaignConfig) -> None:
    _check_objectives(config)
    _check_conditions(config)
    _check_placeholders(config)
    _check_sampler(config)
    _check_pruner(config)
    _check_uris(config)


def _check_uris(config: CampaignConfig) -> None:
    storage, tracking = config.storage, config.lineage.tracking_uri
    if storage is not None and "://" not in storage:
        raise RuleError(
            ("storage",),
            "must be an Optuna storage URL such as sqlite:///optuna.db or "
            "postgresql://user@host/db",
            storage,
        )
    for path, uri in ((("storage",), storage), (("lineage", "tracking_uri"), tracking)):
        if uri and uri.startswith("sqlite:") and not uri.startswith("sqlite:///"):
            raise RuleError(
                path,
                "must be sqlite:///relative/file.db or sqlite:////absolute/file.db "
                "(three slashes, then the path)",
                uri,
            )
    if tracking and ":" not in tracking and tracking.endswith((".db", ".sqlite", ".sqlite3")):
        raise RuleError(
            ("lineage", "tracking_uri"),
            f"is a bare path, which MLflow reads as a file-store directory; for a SQLite file "
            f"write sqlite:///{tracking}",
            tracking,
        )


def _check_objectives(config: CampaignConfig) -> None:
    seen = {config.target.metric}
    for i, objective in enumerate(config.objectives):
        if objective.metric in seen:
            raise RuleError(
                ("objectives", i, "metric"), "repeats a metric already optimized", objective.metric
            )
        seen.add(objective.metric)
    if not config.objectives:
        return
    if config.sampler.name not in MULTI_OBJECTIVE_SAMPLERS:
        raise RuleError(
            ("sampler", "name"),
            "must be one of nsga2, tpe, gp, random, qmc, grid with objectives "
            f"({config.sampler.name} optimizes one objective only)",
            config.sampler.name,
        )
    if config.pruner.name != "none":
        raise RuleError(
            ("pruner", "name"),
            "must be none with objectives (Optuna cannot prune multi-objective trials)",
            config.pruner.name,
        )


def _check_conditions(config: CampaignConfig) -> None:
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


def _check_placeholders(config: CampaignConfig) -> None:
    for name in config.parameters:
        if name in BUILTINS:
            raise RuleError(
                ("parameters", name),
                f"is a reserved placeholder name ({', '.join(BUILTINS)}); rename the parameter",
                name,
                show_value=False,
            )
    known = set(config.parameters) | set(BUILTINS)
    for i, arg in enumerate(config.command):
        for ref in placeholders(arg):
            if ref not in known:
                raise RuleError(
                    ("command", i),
                    f"has placeholder {{{ref}}}, which names no parameter"
                    + suggest(ref, known)
                    + f" (built-ins: {', '.join(BUILTINS)})",
                    arg,
                )
            if config.parameters.get(ref) is not None and config.parameters[ref].when:
                raise RuleError(
                    ("command", i),
                    f"has placeholder {{{ref}}}, a conditional parameter absent from some "
                    "trials; read it from TUNER_PARAMS or tuner.trial.params() instead",
                    arg,
                )


def _check_sampler(config: CampaignConfig) -> None:
    from tuner.search._registry import SAMPLERS, missing_dependency

    sampler = config.sampler
    params = config.parameters
    _check_options(("sampler", "options"), sampler.options, SAMPLERS[sampler.name]())
    hint = missing_dependency(sampler.name)
    if hint is not None:
        raise RuleError(("sampler", "name"), ": " + hint, show_value=False)
    if sampler.name == "cmaes":
        for name, param in params.items():
            if param.type == "categorical":
                raise RuleError(
                    ("sampler", "name"),
                    f"cmaes cannot sample categorical parameters (parameters.{name}); "
                    "use tpe or gp",
                    "cmaes",
                )
        numeric = [n for n, p in params.items() if not p.when]
        if len(numeric) < 2:
            raise RuleError(
                ("sampler", "name"),
                "cmaes needs at least two unconditional numeric parameters; use tpe or gp",
                "cmaes",
            )
    if sampler.name == "grid":
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
        for name, param in params.items():
            if param.when:
                raise RuleError(
                    ("parameters", name, "when"),
                    "cannot be used with sampler grid (the grid would repeat trials); "
                    "use tpe or random",
                    param.when,
                )
            if (space is None or name not in space) and param.grid_values() is None:
                raise RuleError(
                    ("parameters", name),
                    "needs a step (or choices) for sampler grid, or list its values in "
                    "sampler.options.search_space",
                    show_value=False,
                )


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


def _check_pruner(config: CampaignConfig) -> None:
    from tuner.search._registry import PRUNERS

    _check_options(("pruner", "options"), config.pruner.options, PRUNERS[config.pruner.name]())


#: Options that take a Python object, given in a config by name.
NAMED_OPTIONS: dict[str, tuple[str, ...]] = {
    "independent_sampler": ("random", "tpe"),
    "crossover": ("uniform", "blxalpha", "sbx", "vsbx", "undx", "spx"),
}
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
            hint = suggest(key, params)
            listing = ", ".join(params) if params else "none"
            raise RuleError(
                (*path, key), f"is not an option of {owner}{hint} (options: {listing})", value
            )
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
