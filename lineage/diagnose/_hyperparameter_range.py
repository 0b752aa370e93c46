"""``hyperparameter_range``: learning rate, loss scale, initialization, batch size and other
hyperparameters outside the range where training usually works.

Parameter names are read by the tokens of their last component (after ``.`` or ``/``,
see :mod:`lineage.diagnose._names`), so ``lr``, ``learning_rate``, ``optimizer.lr``,
``optim/base_lr`` and ``head_lr`` are all learning rates:

- learning rate: ``lr``, ``learning_rate``, ``base_lr``, ``max_lr``, ``peak_lr``,
  ``init_lr``, ``initial_lr``, ``*_lr``; not schedule ends or factors (names with ``min``,
  ``end``, ``final``, ``warmup``, ``start``, ``decay``, ``gamma``, ``factor``...).
  Adam-like optimizers (a parameter ``optimizer``/``optim``/``optimizer.name`` naming adam,
  adamw, rmsprop, adagrad, adadelta, lamb, lion, adafactor) use ``lr_max_adaptive``.
- loss scale: ``loss_scale``, ``loss_scale_value``, ``init_loss_scale``,
  ``loss_scale_manager.init_loss_scale``.
- initialization: ``sigma``, ``init_std``, ``init_sigma``, ``weight_init_std``,
  ``initializer_range``, ``init.std``, ``init.sigma``; a scheme named by ``init``,
  ``weight_init``, ``initializer`` or ``kernel_init`` whose value is ``zeros``, ``ones`` or
  ``constant`` (bias initializers are not judged).
- ``batch_size``, ``train_batch_size``, ``bs``; ``momentum``, ``beta1``; ``weight_decay``,
  ``wd``; ``dropout``, ``dropout_rate``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from lineage.diagnose import _names
from lineage.diagnose._base import Check, Finding, RunData, Severity
from lineage.diagnose._thresholds import Thresholds

_LR_EXACT = (["lr"], ["learning", "rate"], ["learningrate"])
_LR_NOT = frozenset(
    {
        "min",
        "end",
        "final",
        "warmup",
        "start",
        "decay",
        "gamma",
        "factor",
        "scheduler",
        "schedule",
        "step",
        "steps",
        "ratio",
        "mult",
        "multiplier",
        "scale",
        "patience",
        "policy",
        "type",
        "name",
        "milestones",
        "power",
        "cycle",
    }
)
_ADAPTIVE = ("adam", "rmsprop", "adagrad", "adadelta", "lamb", "lion", "adafactor", "adamax")
_INIT = frozenset({"init", "initializer", "initialization", "initialize"})
_SYMMETRIC = frozenset({"zeros", "zero", "ones", "one", "constant"})

_LR_CAUSES = {
    "high": (
        "A learning rate this large makes updates overshoot: the loss runs away to NaN/Inf "
        "or oscillates.",
    ),
    "low": (
        "A learning rate this small barely changes the weights: the loss converges slowly "
        "or not at all.",
    ),
}
_LR_STEPS = (
    "Check the learning rate against the reference script of this model; typical values are "
    "1e-4 to 1e-3 for Adam-like optimizers and 1e-3 to 0.5 for SGD/Momentum.",
    "Run a short learning-rate range test or tune it (e.g. log-uniform over 1e-5..1).",
)


_leaf = _names.param_leaf


def _float(raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if not math.isnan(value) else None


def is_learning_rate(name: str) -> bool:
    leaf, _ = _leaf(name)
    if leaf in _LR_EXACT:
        return True
    if any(t in _LR_NOT for t in leaf):
        return False
    return len(leaf) >= 2 and (leaf[-1] == "lr" or leaf[-2:] == ["learning", "rate"])


def _is_loss_scale(name: str) -> bool:
    leaf, parent = _leaf(name)
    core = [t for t in leaf if t not in {"init", "initial", "value"}]
    return core == ["loss", "scale"] or (core == ["scale"] and "loss" in parent)


def _is_init_std(name: str) -> bool:
    leaf, parent = _leaf(name)
    if leaf == ["initializer", "range"]:
        return True
    if leaf in (["std"], ["sigma"], ["stddev"]):
        return (leaf == ["sigma"] and not parent) or any(t in _INIT for t in parent)
    has_scale = any(t in {"std", "sigma", "stddev"} for t in leaf)
    return (
        has_scale
        and any(t in _INIT for t in leaf)
        and set(leaf) <= (_INIT | {"std", "sigma", "stddev", "weight", "weights"})
    )


def _is_init_scheme(name: str) -> bool:
    leaf, _ = _leaf(name)
    return (
        "bias" not in leaf
        and any(t in _INIT for t in leaf)
        and set(leaf) <= _INIT | {"weight", "weights", "kernel", "method", "scheme", "type"}
    )


def _leaf_is(*options: list[str]) -> Callable[[str], bool]:
    return lambda name: _leaf(name)[0] in options


def _is_dropout(name: str) -> bool:
    return "dropout" in _leaf(name)[0]


@dataclass(frozen=True, slots=True)
class _Range:
    """A numeric hyperparameter that must lie in ``[low, high]`` (``high_open``: ``high``
    excluded); the bounds are read from the thresholds so they stay in one place."""

    matches: Callable[[str], bool]
    bounds: Callable[[Thresholds], tuple[float, float]]
    high_open: bool
    severity: Severity
    causes: tuple[str, ...]
    next_steps: tuple[str, ...]

    def rule(self, t: Thresholds) -> str:
        low, high = self.bounds(t)
        return f"must lie in [{low:g}, {high:g}{')' if self.high_open else ']'}"

    def holds(self, value: float, t: Thresholds) -> bool:
        low, high = self.bounds(t)
        return low <= value and (value < high if self.high_open else value <= high)


_RANGES = (
    _Range(
        _is_loss_scale,
        lambda t: (t.loss_scale_min, t.loss_scale_max),
        False,
        "warning",
        (
            "A loss scale below 1 shrinks float16 gradients until they underflow to zero; one "
            "far above 2**24 overflows them to Inf.",
        ),
        (
            "Use a dynamic loss scale (MindSpore DynamicLossScaleManager) or a fixed scale such "
            "as 1024, and check for overflow steps.",
        ),
    ),
    _Range(
        _is_init_std,
        lambda t: (t.init_std_min, t.init_std_max),
        False,
        "warning",
        (
            "Weights initialized too small make signals and gradients vanish through the "
            "layers; too large, they explode.",
        ),
        (
            "Use a scaled initialization (Xavier/Glorot, He/Kaiming, or a normal with sigma "
            "about 0.01-0.02) matched to the activation.",
        ),
    ),
    _Range(
        _leaf_is(["momentum"], ["beta1"]),
        lambda t: (0.0, 1.0),
        True,
        "error",
        (
            "Momentum of 1 or more accumulates gradients without decay, so updates grow until "
            "the loss runs away.",
        ),
        ("Use a momentum such as 0.9 (beta1 0.9 for Adam).",),
    ),
    _Range(
        _leaf_is(["weight", "decay"], ["wd"]),
        lambda t: (0.0, t.weight_decay_max),
        True,
        "warning",
        (
            "Weight decay this strong pulls the weights to zero faster than the loss can train "
            "them (or, negative, makes them grow).",
        ),
        ("Use a weight decay between 1e-5 and 0.1.",),
    ),
    _Range(
        _is_dropout,
        lambda t: (0.0, 1.0),
        True,
        "error",
        ("A dropout rate of 1 drops every activation, so nothing reaches the output.",),
        (
            "Use a dropout rate such as 0.1-0.5 (MindSpore 1.x took keep_prob: check which one "
            "the layer expects).",
        ),
    ),
)
_SYMMETRIC_CAUSES = (
    "Weights initialized to one constant stay symmetric: every neuron of a layer learns the "
    "same thing, so the model cannot learn.",
)
_SYMMETRIC_STEPS = (
    "Use a random initialization (Xavier/Glorot, He/Kaiming, truncated normal); constants "
    "are for biases only.",
)
_is_batch_size = _names.is_batch_size


class HyperparameterRange(Check):
    """One finding per parameter outside its range; impossible values (lr <= 0, batch size
    < 1, momentum >= 1, dropout >= 1) are errors, unusual ones warnings."""

    id = "hyperparameter_range"
    causes = ("A hyperparameter is outside the range where this kind of training usually works.",)
    next_steps = ("Check the hyperparameters against the reference script or paper of this model.",)

    def run(self, data: RunData) -> list[Finding]:
        adaptive = any(
            any(a in value.lower() for a in _ADAPTIVE)
            for name, value in data.params.items()
            if {"optimizer", "optim", "opt"} & set(_names.tokens(name))
        )
        found: list[Finding] = []
        lr_seen: dict[float, Finding] = {}
        for name, raw in sorted(data.params.items(), key=lambda kv: (len(kv[0]), kv[0])):
            value = _float(raw)
            if is_learning_rate(name):
                if value is None:
                    continue
                if value in lr_seen:
                    # the same rate recorded twice (``lr`` by the script, ``optimizer.lr`` by a
                    # framework callback): one finding
                    lr_seen[value].evidence.setdefault("also", []).append(name)
                elif (finding := self._learning_rate(name, value, adaptive)) is not None:
                    found.append(finding)
                    lr_seen[value] = finding
            elif _is_init_scheme(name) and raw.strip().lower() in _SYMMETRIC:
                found.append(
                    self._out(
                        name,
                        raw,
                        "warning",
                        "initializes every weight to the same value",
                        None,
                        _SYMMETRIC_CAUSES,
                        _SYMMETRIC_STEPS,
                    )
                )
            elif _is_batch_size(name):
                found.extend(self._batch_size(name, raw, value))
            elif value is not None:
                found.extend(self._range(name, value))
        return found

    def _range(self, name: str, value: float) -> list[Finding]:
        t = self.thresholds
        for r in _RANGES:
            if r.matches(name):
                if r.holds(value, t):
                    return []
                return [
                    self._out(
                        name, value, r.severity, r.rule(t), r.bounds(t), r.causes, r.next_steps
                    )
                ]
        return []

    def _learning_rate(self, name: str, value: float, adaptive: bool) -> Finding | None:
        t = self.thresholds
        high = t.lr_max_adaptive if adaptive else t.lr_max
        allowed = (t.lr_min, high)
        severity: Severity = "warning"
        if value <= 0:
            severity, rule, causes = "error", "must be > 0", _LR_CAUSES["low"]
        elif value > high:
            kind = "an Adam-like optimizer" if adaptive else "SGD-like optimizers"
            rule, causes = f"is above {high:g}, large even for {kind}", _LR_CAUSES["high"]
        elif value < t.lr_min:
            rule, causes = f"is below {t.lr_min:g}", _LR_CAUSES["low"]
        else:
            return None
        return self._out(name, value, severity, rule, allowed, causes, _LR_STEPS)

    def _batch_size(self, name: str, raw: str, value: float | None) -> list[Finding]:
        t = self.thresholds
        if value is None:
            return []
        causes = ("A batch size must be a positive whole number of samples.",)
        steps = ("Set the batch size to a positive integer that fits in device memory.",)
        if value < 1 or value != int(value):
            return [
                self._out(name, raw, "error", "must be an integer >= 1", (1, None), causes, steps)
            ]
        if value > t.batch_size_max:
            return [
                self._out(
                    name,
                    value,
                    "warning",
                    f"is above {t.batch_size_max}",
                    (1, t.batch_size_max),
                    (
                        "A batch this large takes few update steps per epoch and needs a scaled "
                        "learning rate and warmup (LARS/LAMB) to converge.",
                    ),
                    ("Check the batch size; scale the learning rate with it and add warmup.",),
                )
            ]
        return []

    def _out(
        self,
        name: str,
        value: float | str,
        severity: Severity,
        rule: str,
        allowed: tuple[float | None, float | None] | None,
        causes: tuple[str, ...],
        steps: tuple[str, ...],
    ) -> Finding:
        return self.finding(
            severity,
            f"{name} = {value} {rule}",
            param=name,
            step=None,
            value=value,
            window=None,
            allowed=list(allowed) if allowed is not None else None,
            causes=causes,
            next_steps=(*steps, *self.next_steps),
        )
