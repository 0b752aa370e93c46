"""The search space of a campaign, as Optuna sees it.

A parameter with ``when: {optimizer: sgd}`` is sampled only in trials whose ``optimizer`` is
``sgd``; in the others it is absent (not ``None``): absent from the trial's params, from
the parameters the trial receives and from the MLflow run. Parameters are sampled in a fixed order (each after
the parameters its ``when`` names, otherwise in declaration order), so a seeded sampler gives
the same sequence every time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tuner.search import _internals as internals

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution

    from tuner.search._shapes import ParameterShape as Parameter

__all__ = [
    "distribution",
    "distributions",
    "is_active",
    "sample_params",
    "sampling_order",
    "validate_params",
]


def sampling_order(params: Mapping[str, Parameter]) -> list[str]:
    """Parameter names (the ``parameters:`` section), parents before the parameters
    conditioned on them."""
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(params):
        progressed = False
        for name, param in params.items():
            if name not in done and all(p in done for p in (param.when or {})):
                order.append(name)
                done.add(name)
                progressed = True
        if not progressed:  # the config validator refuses cycles; never loop forever
            raise ValueError("parameters.*.when forms a cycle")
    return order


def _matches(value: Any, wanted: Any) -> bool:
    options = wanted if isinstance(wanted, list) else [wanted]
    for option in options:
        if isinstance(value, bool) or isinstance(option, bool):
            if isinstance(value, bool) and isinstance(option, bool) and value == option:
                return True
        elif isinstance(value, int | float) and isinstance(option, int | float):
            if float(value) == float(option):
                return True
        elif type(value) is type(option) and value == option:
            return True
    return False


def is_active(param: Parameter, values: Mapping[str, Any]) -> bool:
    """Whether ``param``'s ``when`` holds for the values sampled so far (absent parent: no)."""
    return all(
        other in values and _matches(values[other], wanted)
        for other, wanted in (param.when or {}).items()
    )


def distribution(param: Parameter) -> BaseDistribution:
    """The Optuna distribution of one parameter."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if param.type == "categorical":
        return CategoricalDistribution(list(param.choices or []))
    assert param.low is not None and param.high is not None
    if param.type == "int":
        return IntDistribution(
            int(param.low), int(param.high), log=param.log, step=int(param.step or 1)
        )
    return FloatDistribution(float(param.low), float(param.high), log=param.log, step=param.step)


def distributions(
    parameters: Mapping[str, Parameter], params: Mapping[str, Any] | None = None
) -> dict[str, BaseDistribution]:
    """Distributions of every parameter of the ``parameters:`` section, or of those active given ``params``.

    With ``params`` (a finished or fixed trial's values) only the parameters present under
    their conditions are returned, ready for ``optuna.trial.create_trial`` or
    ``study.ask(fixed_distributions=...)``.
    """
    if params is None:
        return {name: distribution(parameters[name]) for name in sampling_order(parameters)}
    out: dict[str, BaseDistribution] = {}
    for name in sampling_order(parameters):
        param = parameters[name]
        if name in params and is_active(param, params):
            out[name] = distribution(param)
    return out


def validate_params(
    parameters: Mapping[str, Parameter], params: Mapping[str, Any]
) -> dict[str, Any]:
    """``params`` checked against the space (the ``parameters:`` section): every active parameter present and in range, no
    inactive or unknown one. Returns them in sampling order; raises ``ValueError``."""
    unknown = sorted(set(params) - set(parameters))
    if unknown:
        raise ValueError(f"params {unknown} are not declared parameters")
    out: dict[str, Any] = {}
    for name in sampling_order(parameters):
        param = parameters[name]
        active = is_active(param, out)
        if not active:
            if name in params:
                raise ValueError(f"param {name!r} is present but its `when` does not hold")
            continue
        if name not in params:
            raise ValueError(f"param {name!r} is missing")
        value = params[name]
        dist = distribution(param)
        try:
            internal = dist.to_internal_repr(value)
        except (ValueError, TypeError):
            raise ValueError(f"param {name!r} = {value!r} is not in its distribution") from None
        if not internals.contains(dist, internal):
            raise ValueError(f"param {name!r} = {value!r} is outside {dist}")
        out[name] = value
    return out


def sample_params(trial: optuna.Trial, parameters: Mapping[str, Parameter]) -> dict[str, Any]:
    """Ask ``trial`` for every active parameter of the ``parameters:`` section, in
    :func:`sampling_order`.

    Works with enqueued (fixed) trials too: Optuna returns the fixed values from ``suggest_*``.
    """
    values: dict[str, Any] = {}
    for name in sampling_order(parameters):
        param = parameters[name]
        if not is_active(param, values):
            continue
        if param.type == "categorical":
            values[name] = trial.suggest_categorical(name, list(param.choices or []))
        elif param.type == "int":
            assert param.low is not None and param.high is not None
            values[name] = trial.suggest_int(
                name, int(param.low), int(param.high), step=int(param.step or 1), log=param.log
            )
        else:
            assert param.low is not None and param.high is not None
            values[name] = trial.suggest_float(
                name, float(param.low), float(param.high), step=param.step, log=param.log
            )
    return values


# ----- a space that changed between runs of a campaign -----------------------------------------
