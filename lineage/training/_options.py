"""`RecorderOptions`: how a training is recorded, checked once where the user gives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from lineage._errors import UsageError

__all__ = [
    "DEFAULT_SAMPLE",
    "MAX_SAMPLE",
    "RecorderOptions",
    "Trial",
    "check_params",
    "sample_count",
]

DEFAULT_SAMPLE = 16
"""Rows of the first batch drawn when ``data_sample=True``."""
MAX_SAMPLE = 256
"""Largest sample a user may ask for (a grid of 256 images is already unreadable)."""


class Trial(Protocol):
    """What a recorder needs of the tuner's in-trial API (``tuner.trial`` fits)."""

    def report(self, step: int, **metrics: float) -> None: ...

    def should_prune(self) -> bool: ...


def sample_count(value: Any) -> int:
    """``data_sample`` as a row count: True -> 16, False or None -> 0 (off), an int 1..256
    as given; anything else raises `UsageError` naming the rule and the value.

    Args:
        value: the ``data_sample`` option: rows of the first batch to draw (True: 16, an int:
            that many, False: off).

    Returns:
        The row count, 0 for off.

    Raises:
        UsageError: ``value`` is none of True, False, None or an int from 1 to 256.
    """
    if value is True:
        return DEFAULT_SAMPLE
    if value is False or value is None:
        return 0
    if isinstance(value, int) and 1 <= value <= MAX_SAMPLE:
        return value
    raise UsageError(
        f"data_sample must be True, False or an int in [1, {MAX_SAMPLE}] (rows to draw), "
        f"got {value!r}"
    )


def _refuse(name: str, rule: str, value: Any) -> None:
    raise UsageError(f"{name} must be {rule}, got {type(value).__name__} {value!r:.200}")


def _flag(name: str, value: Any, *, none: bool = False) -> None:
    if isinstance(value, bool) or (none and value is None):
        return
    rule = "True, False or None" if none else "True or False"
    raise UsageError(f"{name} must be {rule}, got {value!r}")


@dataclass(frozen=True)
class RecorderOptions:
    """The options every framework's recorder shares, made once at the public entry (a
    callback's constructor, ``watch``, ``record_training``) and passed along whole.

    ``run``: a `lineage.Run` to record into; by default the active run, else a new run in
    ``experiment`` (attached to ``MLFLOW_RUN_ID`` under the tuner) that the recorder ends.
    ``log_every``: per-step metrics every N steps. ``data_sample``: rows of the first batch to
    draw (True: 16, an int: that many, False: off). ``fingerprint_data``: hash the training
    data. ``all_ranks``: record on every rank, not only rank 0. ``weight_stats``: log
    ``weight_norm`` and ``weight_delta`` each epoch (None: for models up to
    `lineage.training.AUTO_WEIGHT_LIMIT` trainable elements). ``grad_norm``: log the
    gradients' global norm at each logged step (PyTorch; MindSpore logs it when a loop passes
    its gradients). ``trial``: ``tuner.trial``, to report to and be pruned by.

    Building one checks every field and raises `UsageError` naming the first that is not
    what it must be, before anything is recorded.
    """

    run: Any = None
    experiment: str | None = None
    log_every: int = 1
    data_sample: bool | int = True
    fingerprint_data: bool = True
    all_ranks: bool = False
    weight_stats: bool | None = None
    grad_norm: bool = False
    trial: Trial | None = None
    #: ``data_sample`` as a row count (0: off).
    sample_rows: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        log_every = self.log_every
        if isinstance(log_every, bool) or not isinstance(log_every, int) or log_every < 1:
            raise UsageError(f"log_every must be an int >= 1, got {log_every!r}")
        _flag("grad_norm", self.grad_norm)
        _flag("fingerprint_data", self.fingerprint_data)
        _flag("all_ranks", self.all_ranks)
        _flag("weight_stats", self.weight_stats, none=True)
        run, experiment, trial = self.run, self.experiment, self.trial
        if run is not None and not all(
            callable(getattr(run, m, None)) for m in ("log_params", "log_metric", "set_tags", "end")
        ):
            _refuse("run", "a lineage run (lineage.start_run's value) or None", run)
        if experiment is not None and not (isinstance(experiment, str) and experiment):
            _refuse("experiment", "a non-empty str or None", experiment)
        if trial is not None and not all(
            callable(getattr(trial, m, None)) for m in ("report", "should_prune")
        ):
            _refuse("trial", "tuner.trial (with report and should_prune) or None", trial)
        object.__setattr__(self, "sample_rows", sample_count(self.data_sample))

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> RecorderOptions:
        """The options among a public entry's ``arguments`` (its ``locals()`` as it starts,
        or any mapping): each field found there is taken, the others keep their defaults,
        other names are ignored. So an entry keeps its documented keywords and forwards none
        of them by hand."""
        return cls(
            **{f.name: arguments[f.name] for f in fields(cls) if f.init and f.name in arguments}
        )

    @classmethod
    def given(cls, options: RecorderOptions | None, settings: Mapping[str, Any]) -> RecorderOptions:
        """``options``, or the options the keyword ``settings`` name (a recorder made with
        keywords, as before there was a value to pass); both at once is refused."""
        if options is not None and settings:
            raise UsageError(
                f"pass options or keyword settings, not both; got options and {sorted(settings)}"
            )
        if options is not None and not isinstance(options, RecorderOptions):
            _refuse("options", "a lineage.training.RecorderOptions or None", options)
        return options if options is not None else cls(**settings)

    def records_on(self, rank: int | None) -> bool:
        """Whether a process of ``rank`` (None: not distributed) records: rank 0 or a single
        process, every rank with ``all_ranks``."""
        return self.all_ranks or rank in (None, 0)


def check_params(params: Any) -> None:
    """Refuse extra ``params`` that are not a mapping of str names to values.

    Args:
        params: the extra parameters a recorder is given to log; None: none.

    Raises:
        UsageError: ``params`` is neither None nor a mapping whose keys are all str.
    """
    if params is not None and not (
        isinstance(params, Mapping) and all(isinstance(k, str) for k in params)
    ):
        _refuse("params", "a mapping of str names to values or None", params)
