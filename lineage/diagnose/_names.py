"""Which recorded metrics and parameters the checks read, by name.

Names are compared by their *tokens*: split on anything that is not a letter or digit and at
camelCase boundaries, lower-cased (``val/Loss``, ``val_loss`` and ``valLoss`` all read as
``val loss``).

Metrics
  - loss-like: a token ``loss`` (not followed by ``scale``/``scaling``/``weight``: a loss
    scale is a hyperparameter), or one of ``nll mse rmse mae perplexity ppl``.
  - accuracy-like: a token ``acc``, ``accuracy`` or ``top1``.
  - role: ``val valid validation eval evaluation dev`` -> validation; ``test testing`` ->
    test; otherwise training (``loss``, ``train_loss``, ``accuracy``, ``train_acc``).
  - the *primary* loss / accuracy of a role is one whose other tokens are only
    ``train/val/test...``, ``epoch step avg mean batch total``: ``val_loss``,
    ``eval/loss``, ``train_loss_epoch``, ``val_accuracy``, ``test_acc``. Component losses
    (``kl_loss``, ``aux_loss``) are checked for runaway only. Among several primaries of one
    role the one with the most points wins.
  - gradient norm: tokens ``grad|grads|gradient|gradients`` + ``norm`` (``grad_norm``,
    ``global_grad_norm``, ``gradient_norm``).
  - weight norm: ``weight|weights|param|params`` + ``norm`` (``weight_norm``).
  - weight change: ``weight|weights|param|params|update`` + ``delta|update|change``,
    optionally ``norm`` (``weight_delta``, ``weight_update_norm``, ``update_norm``).

Parameters (read by the tokens of the last component after ``.`` or ``/``; a parent that
names a schedule, an optimizer or an evaluation, as in ``lr_schedule.epochs``, is not read)
  - epochs: ``epochs``, ``num_epochs``, ``n_epochs``, ``max_epochs``, ``train_epochs``,
    ``num_train_epochs`` (Hugging Face), ``epoch_num``, ``epoch_size`` (the MindSpore model
    zoo's name for the epoch count), ``total_epochs``.
  - batch size: ``batch_size``, ``train_batch_size``, ``bs``.
  - training-set size (a whole number of samples): ``train_size`` (``lineage.mindspore``
    records it), ``train_samples``, ``num_train_samples``, ``n_train``,
    ``num_train_examples``, ``train_set_size``; or the tag ``lineage.data.train.samples``.
    (``dataset_size`` is not read: MindSpore's ``get_dataset_size()`` counts batches.)
  - steps per epoch: ``steps_per_epoch`` (``lineage.mindspore``), ``iters_per_epoch``,
    ``batches_per_epoch``; in MindSpore sink mode ``sink_size`` when positive.
  - total steps, when the budget is set in steps: ``max_steps``, ``total_steps``,
    ``train_steps``, ``num_train_steps``, ``num_training_steps`` (values <= 0 mean unset).
"""

from __future__ import annotations

import re
from typing import Literal

Role = Literal["train", "val", "test"]
Kind = Literal["loss", "accuracy"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")

_ROLE_TOKENS: dict[str, Role] = {
    "train": "train",
    "training": "train",
    "val": "val",
    "valid": "val",
    "validation": "val",
    "eval": "val",
    "evaluation": "val",
    "dev": "val",
    "test": "test",
    "testing": "test",
}
_MODIFIERS = frozenset({"epoch", "step", "avg", "mean", "batch", "total", "global", "running"})
_LOSS_ALIASES = frozenset({"nll", "mse", "rmse", "mae", "perplexity", "ppl"})
_NOT_A_LOSS_AFTER = frozenset({"scale", "scaling", "weight", "weights", "sense"})
_ACC_TOKENS = frozenset({"acc", "accuracy", "top1"})
_GRAD = frozenset({"grad", "grads", "gradient", "gradients"})
_WEIGHT = frozenset({"weight", "weights", "param", "params", "parameter", "parameters"})
_DELTA = frozenset({"delta", "update", "updates", "change"})


def tokens(name: str) -> list[str]:
    """The lower-case word tokens of a metric or parameter name."""
    return [t for t in _SPLIT.split(_CAMEL.sub(" ", name).lower()) if t]


def role(name: str) -> Role:
    for tok in tokens(name):
        if tok in _ROLE_TOKENS:
            return _ROLE_TOKENS[tok]
    return "train"


def is_loss_like(name: str) -> bool:
    toks = tokens(name)
    for i, tok in enumerate(toks):
        if tok == "loss" and not (i + 1 < len(toks) and toks[i + 1] in _NOT_A_LOSS_AFTER):
            return True
        if tok in _LOSS_ALIASES:
            return True
    return False


def is_accuracy_like(name: str) -> bool:
    return any(tok in _ACC_TOKENS for tok in tokens(name))


def core_tokens(name: str) -> list[str]:
    """The tokens of a metric name less its role and modifiers (``val/loss_epoch``: ``loss``)."""
    return [t for t in tokens(name) if t not in _ROLE_TOKENS and t not in _MODIFIERS]


def primary_kind(name: str) -> Kind | None:
    """``"loss"``/``"accuracy"`` when the name is a plain loss/accuracy of some role."""
    rest = [t for t in tokens(name) if t not in _ROLE_TOKENS and t not in _MODIFIERS]
    if rest == ["loss"]:
        return "loss"
    if rest and all(t in _ACC_TOKENS for t in rest):
        return "accuracy"
    return None


def _only(name: str, first: frozenset[str], second: frozenset[str], optional: set[str]) -> bool:
    rest = [t for t in tokens(name) if t not in _ROLE_TOKENS and t not in _MODIFIERS]
    return (
        len(rest) >= 2
        and rest[0] in first
        and rest[1] in second
        and all(t in optional for t in rest[2:])
    )


def is_grad_norm(name: str) -> bool:
    return _only(name, _GRAD, frozenset({"norm"}), set())


def is_weight_norm(name: str) -> bool:
    return _only(name, _WEIGHT, frozenset({"norm"}), set())


def is_weight_delta(name: str) -> bool:
    if tokens(name) in (["update", "norm"], ["updates", "norm"]):
        return True
    return _only(name, _WEIGHT | {"update"}, _DELTA, {"norm"})


# -- parameters --------------------------------------------------------------------------

_PARAM_PARENTS_NOT = frozenset(
    {
        "lr",
        "schedule",
        "scheduler",
        "warmup",
        "decay",
        "optimizer",
        "optim",
        "eval",
        "val",
        "valid",
        "validation",
        "test",
        "early",
        "stopping",
        "checkpoint",
        "ckpt",
    }
)
_EPOCHS = (
    ["epochs"],
    ["num", "epochs"],
    ["n", "epochs"],
    ["nb", "epochs"],
    ["max", "epochs"],
    ["total", "epochs"],
    ["train", "epochs"],
    ["num", "train", "epochs"],
    ["epoch", "num"],
    ["epoch", "size"],
)
_BATCH_SIZE = (["batch", "size"], ["bs"], ["train", "batch", "size"])
_TRAIN_SIZE = (
    ["train", "size"],
    ["train", "samples"],
    ["num", "train", "samples"],
    ["n", "train", "samples"],
    ["n", "train"],
    ["num", "train"],
    ["num", "train", "examples"],
    ["train", "examples"],
    ["train", "set", "size"],
    ["num", "training", "samples"],
)
_STEPS_PER_EPOCH = (
    ["steps", "per", "epoch"],
    ["iters", "per", "epoch"],
    ["iterations", "per", "epoch"],
    ["batches", "per", "epoch"],
)
_TOTAL_STEPS = (
    ["max", "steps"],
    ["total", "steps"],
    ["train", "steps"],
    ["total", "train", "steps"],
    ["num", "train", "steps"],
    ["num", "training", "steps"],
)

ParamRole = Literal["epochs", "batch_size", "train_size", "steps_per_epoch", "total_steps"]
_PARAM_ROLES: tuple[tuple[ParamRole, tuple[list[str], ...]], ...] = (
    ("epochs", _EPOCHS),
    ("batch_size", _BATCH_SIZE),
    ("train_size", _TRAIN_SIZE),
    ("steps_per_epoch", _STEPS_PER_EPOCH),
    ("total_steps", _TOTAL_STEPS),
)


def param_leaf(name: str) -> tuple[list[str], list[str]]:
    """The tokens of a parameter name's last component and those of its parents."""
    parts = name.replace("/", ".").split(".")
    return tokens(parts[-1]), [t for p in parts[:-1] for t in tokens(p)]


def param_role(name: str) -> ParamRole | None:
    """What a parameter says about the training's length: see the module docstring."""
    leaf, parent = param_leaf(name)
    if _PARAM_PARENTS_NOT.intersection(parent):
        return None
    for role_name, spellings in _PARAM_ROLES:
        if leaf in spellings:
            return role_name
    return None


def is_batch_size(name: str) -> bool:
    return param_leaf(name)[0] in _BATCH_SIZE
