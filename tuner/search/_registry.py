"""The one registry of samplers and pruners: their config names, Optuna classes and options.

Every sampler and pruner name a config accepts is spelled here and nowhere else:
``tuner.config`` derives its allowed values, its JSON Schema and its rules from these tables.
This module imports neither ``tuner.config`` nor Optuna at import time (Optuna costs ~1 s and
the config validator imports this module).

``sampler.options`` / ``pruner.options`` are passed as keyword arguments to the Optuna class,
so every Optuna knob is reachable without this module naming it; ``sampler.seed`` is passed
as ``seed``. A constructor that rejects an option becomes a :class:`ConfigError` naming it,
phrased by the config itself (``config.error(path, rule, value)``). What building a sampler
reads of a campaign is a `SamplerPlan`, cut from the config by `SamplerPlan.of`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

    from tuner._errors import ConfigError, ErrorAt
    from tuner.search._shapes import CampaignShape as CampaignConfig
    from tuner.search._shapes import ParameterShape as Parameter
    from tuner.search._shapes import PrunerShape as PrunerConfig
    from tuner.search._shapes import SamplerShape as SamplerConfig
    from tuner.search._shapes import WarmStartShape as WarmStartConfig

__all__ = [
    "ALTERNATIVES",
    "GRID_SAMPLERS",
    "LEARNING",
    "MULTI_OBJECTIVE_SAMPLERS",
    "NAMED_OPTIONS",
    "NEEDS",
    "NO_PRUNING",
    "NUMERIC_ONLY",
    "PRUNERS",
    "PRUNER_REQUIRED",
    "SAMPLERS",
    "SamplerPlan",
    "controller_seed",
    "make_pruner",
    "make_sampler",
    "missing_dependency",
    "module_available",
    "ranked_if_warm",
    "search_space",
    "torch_available",
]


def _class(module: str, name: str) -> Callable[[], type]:
    def get() -> type:
        return getattr(importlib.import_module(module), name)

    get.__qualname__ = name
    return get


#: Config name -> a function returning the Optuna class (imported lazily). The first is the
#: default of ``sampler.name``.
SAMPLERS: dict[str, Callable[[], type]] = {
    "tpe": _class("optuna.samplers", "TPESampler"),
    "gp": _class("optuna.samplers", "GPSampler"),
    "random": _class("optuna.samplers", "RandomSampler"),
    "cmaes": _class("optuna.samplers", "CmaEsSampler"),
    "grid": _class("optuna.samplers", "GridSampler"),
    "qmc": _class("optuna.samplers", "QMCSampler"),
    "nsga2": _class("optuna.samplers", "NSGAIISampler"),
}
#: Config name -> the Optuna pruner class. The first is the default of ``pruner.name``.
PRUNERS: dict[str, Callable[[], type]] = {
    "median": _class("optuna.pruners", "MedianPruner"),
    "hyperband": _class("optuna.pruners", "HyperbandPruner"),
    "successive_halving": _class("optuna.pruners", "SuccessiveHalvingPruner"),
    "percentile": _class("optuna.pruners", "PercentilePruner"),
    "none": _class("optuna.pruners", "NopPruner"),
}

#: Samplers that accept several objectives (Optuna 4.x/5.x); CMA-ES is single-objective.
MULTI_OBJECTIVE_SAMPLERS: tuple[str, ...] = ("nsga2", "tpe", "gp", "random", "qmc", "grid")

#: The pruner that never prunes (the only one Optuna allows with several objectives).
NO_PRUNING = "none"

#: Samplers of numbers only, with how many unconditional numeric parameters each needs.
NUMERIC_ONLY: dict[str, int] = {"cmaes": 2}
#: Samplers that walk a finite grid: every parameter needs a step or choices, none a `when`.
GRID_SAMPLERS: tuple[str, ...] = ("grid",)
#: What a message suggests instead of a sampler that does not fit the search space.
ALTERNATIVES: dict[str, str] = {"cmaes": "tpe or gp", "grid": "tpe or random"}

#: Samplers that learn from trials' values (random, qmc and grid ignore them): a warm start
#: with ``compare: auto`` or ``rank`` wraps these (`ranked_if_warm`).
LEARNING: tuple[str, ...] = ("tpe", "gp", "cmaes", "nsga2")

#: Keyword arguments an Optuna class requires, with the value used when options omit them.
PRUNER_REQUIRED: dict[str, dict[str, Any]] = {"percentile": {"percentile": 25.0}}

_INDEPENDENT: dict[str, Callable[[], type]] = {
    "random": SAMPLERS["random"],
    "tpe": SAMPLERS["tpe"],
}
_CROSSOVERS: dict[str, Callable[[], type]] = {
    name: _class("optuna.samplers.nsgaii", cls)
    for name, cls in (
        ("uniform", "UniformCrossover"),
        ("blxalpha", "BLXAlphaCrossover"),
        ("sbx", "SBXCrossover"),
        ("vsbx", "VSBXCrossover"),
        ("undx", "UNDXCrossover"),
        ("spx", "SPXCrossover"),
    )
}

#: Options that take a Python object, given in a config by one of these names.
NAMED_OPTIONS: dict[str, tuple[str, ...]] = {
    "independent_sampler": tuple(_INDEPENDENT),
    "crossover": tuple(_CROSSOVERS),
}

#: Replaced in tests to simulate an environment without the ``gp`` extra.
_import_module: Callable[[str], Any] = importlib.import_module


#: Samplers whose Optuna class needs a package beyond Optuna's own dependencies, and the hint.
NEEDS: dict[str, tuple[str, str]] = {
    "gp": ("torch", "gp needs PyTorch; install the 'gp' extra: pip install 'lineage-tuner[gp]'"),
    "cmaes": ("cmaes", "cmaes needs the 'cmaes' package: pip install cmaes"),
}


def module_available(name: str) -> bool:
    """Whether ``name`` can be imported; found without importing it (cheap, for validation)."""
    if _import_module is not importlib.import_module:
        try:
            _import_module(name)
        except ImportError:
            return False
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[name] is None
        return False


def torch_available() -> bool:
    """Whether PyTorch (the ``gp`` extra) can be imported."""
    return module_available("torch")


def missing_dependency(sampler: str) -> str | None:
    """The hint for a sampler whose extra package is not installed, else None."""
    need = NEEDS.get(sampler)
    if need is not None and not module_available(need[0]):
        return need[1]
    return None


@dataclass(frozen=True)
class SamplerPlan:
    """What building a campaign's sampler reads of its config."""

    #: The ``sampler:`` section (name, options, seed).
    section: SamplerConfig
    #: The search space (``parameters:``): the grid, conditional parameters, focus.
    parameters: Mapping[str, Parameter]
    #: Trials that run at once (``resources.parallel``): above 1, TPE gets a constant liar.
    parallel: int
    #: The ``warm_start:`` section (None: the campaign does not warm-start).
    warm_start: WarmStartConfig | None
    #: Phrases the one-line error at ``sampler.name`` or ``sampler.options``.
    error: ErrorAt
    #: ``scheduler: {model: rung}``: the steps the sampler may be fitted at (the rungs and the
    #: last step), and how many chains a step needs; empty: it reads the study as it is.
    rungs: tuple[int, ...] = ()
    rung_points: int = 0

    @classmethod
    def of(cls, config: CampaignConfig) -> SamplerPlan:
        """The plan of ``config``'s sampler. It takes the whole config because this is where
        what a sampler reads is cut out of it; nothing past it does."""
        scheduler = config.scheduler
        by_rung = getattr(scheduler, "model", "study") == "rung"
        rungs: Any = getattr(scheduler, "rungs", None)
        last: Any = getattr(scheduler, "max_resource", None)
        return cls(
            section=config.sampler,
            parameters=config.parameters,
            parallel=config.resources.parallel,
            warm_start=config.warm_start,
            error=config.error,
            rungs=(*rungs(), last) if by_rung and rungs else (),
            rung_points=getattr(scheduler, "model_points", 0),
        )


def search_space(
    section: SamplerConfig, parameters: Mapping[str, Parameter], *, error: ErrorAt
) -> dict[str, list[Any]]:
    """The grid for ``sampler: grid``: the ``sampler:`` section's ``options.search_space``
    entries, else each parameter's choices or its ``low..high`` values by ``step``. ``error``
    phrases the error at a parameter without a grid (`tuner.config.CampaignConfig.error`)."""
    explicit = section.options.get("search_space") or {}
    space: dict[str, list[Any]] = {}
    for name, param in parameters.items():
        values = explicit.get(name)
        if values is None:
            values = param.grid_values()
        if values is None:  # the config validator already refused this
            raise error(("parameters", name), "needs a step for sampler grid")
        space[name] = list(values)
    return space


def controller_seed(seed: int, starts: int) -> int:
    """The seed of the ``starts``-th controller (0: the first) to open a study whose config
    says ``sampler.seed: seed``: ``seed`` itself for the first, so a fresh campaign is
    reproducible; for a later one (a resume, another worker) a seed derived from both, so it
    does not replay the first controller's proposals."""
    import random

    return seed if starts == 0 else random.Random(f"{seed}/{starts}").getrandbits(31)


def make_sampler(plan: SamplerPlan, *, seed: int | None = None) -> optuna.samplers.BaseSampler:
    """The Optuna sampler ``plan.section`` names, seeded with ``seed`` (default
    ``sampler.seed``; see `controller_seed`)."""
    section = plan.section
    seed = section.seed if seed is None else seed
    name = section.name
    cls = SAMPLERS[name]()
    kwargs: dict[str, Any] = dict(section.options)
    if name in NEEDS:
        module, hint = NEEDS[name]
        try:
            _import_module(module)
        except ImportError:
            raise plan.error(("sampler", "name"), ": " + hint) from None
    if isinstance(kwargs.get("independent_sampler"), str):
        independent = _INDEPENDENT[kwargs["independent_sampler"]]()
        # The fallback for parameters the relative sampler cannot model (conditional ones).
        kwargs["independent_sampler"] = independent(seed=seed)
    if isinstance(kwargs.get("crossover"), str):
        kwargs["crossover"] = _quietly(_CROSSOVERS[kwargs["crossover"]]())
    if name in GRID_SAMPLERS:
        kwargs["search_space"] = search_space(section, plan.parameters, error=plan.error)
        cls = _ask_tell_grid(cls)
    if name in ("cmaes", "qmc", "gp"):
        # Conditional parameters fall back to the independent sampler by design; say so in
        # the docs, not in a warning per trial.
        kwargs.setdefault("warn_independent_sampling", False)
    if (
        name == "tpe"
        and kwargs.get("multivariate")
        and any(p.when for p in plan.parameters.values())
    ):
        # Multivariate TPE models one joint space; `group` splits it by which parameters a
        # trial has, instead of dropping conditional ones to independent sampling (and logging
        # a warning per trial).
        kwargs.setdefault("group", True)
    if name == "tpe" and plan.parallel > 1:
        # Without it, parallel workers ask while others run and get near-duplicate proposals.
        kwargs.setdefault("constant_liar", True)
    if seed is not None:
        kwargs["seed"] = seed
    sampler = _construct(plan.error, ("sampler", "options"), cls, kwargs, section.options)
    if plan.rungs and name in LEARNING:
        from tuner.search._rungs import RungModel

        sampler = RungModel(sampler, plan.rungs, plan.rung_points)
    return wrap_sampler(sampler, name=name, parameters=plan.parameters, warm_start=plan.warm_start)


def wrap_sampler(
    sampler: optuna.samplers.BaseSampler,
    *,
    name: str,
    parameters: Mapping[str, Parameter],
    warm_start: WarmStartConfig | None,
) -> optuna.samplers.BaseSampler:
    """``sampler`` (named ``name`` under ``sampler:``) as a campaign uses it: focused where a parameter has a ``focus``
    (`tuner.search._focus`), inside the warm start's view (`ranked_if_warm`), so that the
    warm start is measured on every trial and the focus filters only what is sampled."""
    from tuner.search._focus import focused_if_set

    if name not in GRID_SAMPLERS:  # a grid walks its grid whatever the focus
        sampler = focused_if_set(parameters, sampler)
    return ranked_if_warm(warm_start, name, sampler)


def ranked_if_warm(
    section: WarmStartConfig | None, name: str, sampler: optuna.samplers.BaseSampler
) -> optuna.samplers.BaseSampler:
    """``sampler`` (named ``name`` under ``sampler:``), reading imported runs by rank (``compare: rank``, `tuner.search._ranked`)
    or as far as they are measured to carry over (``compare: auto``, `tuner.search._transfer`)
    when the campaign warm-starts and the sampler learns from values. Under ``compare: auto``
    the exploring trials see none of them, nor the trials they steered
    (`tuner.search._view.PriorFree`). ``section``: the
    ``warm_start:`` section (None: the campaign does not warm-start)."""
    if section is None or section.compare == "value" or name not in LEARNING:
        return sampler
    from tuner.search._ranked import RankedWarmStart

    if section.compare == "auto":
        from tuner.search._transfer import apart, steers, transfer_view
        from tuner.search._view import PriorFree

        # Outermost, so that an exploring trial's view holds no imported run for the
        # measured view to weigh, nor for a focus to narrow around.
        return PriorFree(RankedWarmStart(sampler, transfer_view, "auto", apart=apart), steers)
    return RankedWarmStart(sampler)


def make_pruner(section: PrunerConfig, *, error: ErrorAt) -> optuna.pruners.BasePruner:
    """The Optuna pruner the ``pruner:`` section names (``none``: ``NopPruner``). ``error``
    phrases the error about options Optuna refuses (`tuner.config.CampaignConfig.error`)."""
    cls = PRUNERS[section.name]()
    kwargs = {**PRUNER_REQUIRED.get(section.name, {}), **section.options}
    return _construct(error, ("pruner", "options"), cls, kwargs, section.options)


def _quietly(cls: type) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=_experimental_warning())
        return cls()


def _ask_tell_grid(base: type) -> type:
    class AskTellGridSampler(base):
        """``GridSampler`` for ask/tell: Optuna's calls ``study.stop()`` once the grid is
        used up, which raises outside ``optimize()``. The controller asks ``is_exhausted``."""

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            return None

    return AskTellGridSampler


def _construct(
    error_at: ErrorAt,
    path: tuple[str, ...],
    cls: type,
    kwargs: dict[str, Any],
    shown: Mapping[str, Any],
) -> Any:
    import warnings

    try:
        with warnings.catch_warnings():
            # Experimental-feature notices (constant_liar, multivariate) are Optuna's, not the
            # user's problem; real misuse raises below.
            warnings.simplefilter("ignore", category=_experimental_warning())
            return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        message = " ".join(str(exc).split()).rstrip(".")
        error: ConfigError = error_at(path, f"are invalid for {cls.__name__} ({message})", shown)
        raise error from None


def _experimental_warning() -> type[Warning]:
    from optuna.exceptions import ExperimentalWarning

    return ExperimentalWarning
