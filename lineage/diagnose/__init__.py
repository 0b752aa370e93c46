"""Accuracy-problem diagnosis: automatic checks over a run's recorded curves and parameters.

The checks follow MindSpore's accuracy-tuning checklist (check the hyperparameters, the model
structure, the data and the loss curve). Each is one class in its own module, deriving
:class:`Check`; each :class:`Finding` names its check id, a severity, the evidence (metric or
parameter, step, value, window) and the likely causes and next steps in plain words. All
thresholds live in :mod:`lineage.diagnose._thresholds`. Precision over recall: a healthy run
yields no finding at all.

========================  ==================================================================
check id                  reads
========================  ==================================================================
``loss_runaway``          every loss-like metric: NaN, +/-Inf, or a level 100x the curve's
                          scale worse than the best level it reached
``divergence``            training loss climbing back far above its best level
``slow_convergence``      training loss improving by < 5 % over the run
``oscillation``           training loss swinging widely with no progress (2nd half)
``zero_train_loss``       training loss at 0
``undertrained``          validation accuracy and loss (or, with fewer than 5 validation
                          points, the training loss) still improving at the last epoch
``overfitting``           train vs validation accuracy gap; validation loss rising while
                          training loss falls; validation loss many times training loss
``distribution_shift``    test accuracy (or loss) well behind validation
``hyperparameter_range``  params: learning rate, loss scale, init sigma/scheme, batch size,
                          momentum, weight decay, dropout
``too_few_epochs``        params: epochs x steps per epoch (or ``max_steps``) under 100
                          updates, unless the curve shows the run converged anyway
``near_full_batch``       params: batch size at least half the training-set size
``weights_unchanged``     metrics ``weight_delta`` and/or ``weight_norm``
``frozen_weights``        tag/param ``lineage.frozen_params``/``frozen_params`` (a count or
                          a JSON list of names) and ``lineage.trainable_params``/
                          ``trainable_params`` (a count), with the training loss
``gradient_vanishing``    metric ``grad_norm`` (global L2 norm of the gradients)
``gradient_exploding``    metric ``grad_norm``
``constant_column``       metrics ``data.<role>.<column>.{std,min,max}``: one value across
                          the first batch (tag ``lineage.data.<role>.columns`` for the kind)
``data_out_of_range``     the same metrics against the ``implied_range`` of that tag (the
                          range the pipeline's Normalize/Rescale imply)
``labels_out_of_range``   a label column's min/max against the tag's ``classes`` (the
                          network's output size)
========================  ==================================================================

Metric names are matched by tokens (see :mod:`lineage.diagnose._names`): the training loss is
``loss``/``train_loss``/``training_loss`` (``train/loss``, ``trainLoss``...), the validation
one ``val_loss``/``eval_loss``/``validation_loss``/``dev_loss``, the test one ``test_loss``;
accuracies likewise (``acc``, ``accuracy``, ``train_acc``, ``val_accuracy``,
``eval_acc``, ``test_accuracy``; values above 1.5 are read as percent). A recorder that
wants the last four checks logs ``grad_norm``, ``weight_norm``, ``weight_delta`` per step or
epoch and sets ``frozen_params`` / ``trainable_params`` (``lineage.mindspore`` records both
as counts). MLflow stores +/-Inf as +/-1.797e308; they are read back as +/-Inf.

Public functions: :func:`diagnose_histories` (plain data, no store), :func:`diagnose_run`
(a run of a lineage store) and :func:`online_check` (runaway and divergence on the
intermediate values of a running trial, for early stopping, judged in the metric's goal
direction; :func:`goal_of` says which direction a metric name implies).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lineage._errors import UsageError
from lineage.diagnose._base import SEVERITIES, Check, Finding, RunData, Series
from lineage.diagnose._constant_column import ConstantColumn
from lineage.diagnose._data_out_of_range import DataOutOfRange
from lineage.diagnose._distribution_shift import DistributionShift
from lineage.diagnose._divergence import Divergence
from lineage.diagnose._frozen_weights import FrozenWeights
from lineage.diagnose._goal import GOALS, goal_of
from lineage.diagnose._gradient_exploding import GradientExploding
from lineage.diagnose._gradient_vanishing import GradientVanishing
from lineage.diagnose._hyperparameter_range import HyperparameterRange
from lineage.diagnose._labels_out_of_range import LabelsOutOfRange
from lineage.diagnose._loss_runaway import LossRunaway
from lineage.diagnose._near_full_batch import NearFullBatch
from lineage.diagnose._oscillation import Oscillation
from lineage.diagnose._overfitting import Overfitting
from lineage.diagnose._slow_convergence import SlowConvergence
from lineage.diagnose._thresholds import DEFAULT_THRESHOLDS, Thresholds
from lineage.diagnose._too_few_epochs import TooFewEpochs
from lineage.diagnose._undertrained import Undertrained
from lineage.diagnose._weights_unchanged import WeightsUnchanged
from lineage.diagnose._zero_train_loss import ZeroTrainLoss

if TYPE_CHECKING:
    from lineage.store import RunRecord, RunStore

__all__ = [
    "CHECKS",
    "DEFAULT_THRESHOLDS",
    "GOALS",
    "Check",
    "Finding",
    "RunData",
    "Series",
    "Thresholds",
    "default_checks",
    "diagnose_histories",
    "diagnose_run",
    "goal_of",
    "online_check",
]

CHECKS: dict[str, type[Check]] = {
    cls.id: cls
    for cls in (
        LossRunaway,
        Divergence,
        SlowConvergence,
        Oscillation,
        ZeroTrainLoss,
        Undertrained,
        Overfitting,
        DistributionShift,
        HyperparameterRange,
        TooFewEpochs,
        NearFullBatch,
        WeightsUnchanged,
        FrozenWeights,
        GradientVanishing,
        GradientExploding,
        ConstantColumn,
        DataOutOfRange,
        LabelsOutOfRange,
    )
}
"""Every built-in check class by id, in reporting order."""


def default_checks(
    ids: Iterable[str] | None = None, *, thresholds: Thresholds | None = None
) -> list[Check]:
    """Instances of the built-in checks (all, or those named by ``ids``, in CHECKS order).

    Args:
        ids: check ids (``CHECKS``' keys, as ``lineage diagnose --checks`` takes them); None: all.
        thresholds: the thresholds the checks judge by; None: the defaults.

    Returns:
        The checks, in ``CHECKS`` order.

    Raises:
        UsageError: an unknown check id (exit 2).
    """
    wanted = list(CHECKS) if ids is None else list(ids)
    unknown = [i for i in wanted if i not in CHECKS]
    if unknown:
        raise UsageError(
            f"check must be one of {', '.join(CHECKS)}, got {', '.join(map(repr, unknown))}"
        )
    t = thresholds or DEFAULT_THRESHOLDS
    return [cls(thresholds=t) for cid, cls in CHECKS.items() if cid in wanted]


def _run_checks(data: RunData, checks: Sequence[Check]) -> list[Finding]:
    results: list[tuple[Check, Finding]] = []
    for check in checks:
        if not isinstance(check, Check):
            raise UsageError(f"checks must be Check instances, got {type(check).__name__}")
        results.extend((check, f) for f in check.run(data))
    fired = {f.check for _, f in results}
    kept = [f for c, f in results if not fired.intersection(c.suppressed_by)]
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(kept, key=lambda f: rank[f.severity])  # stable: check order within severity


def diagnose_histories(
    histories: Mapping[str, Iterable[Any]],
    params: Mapping[str, Any] | None = None,
    tags: Mapping[str, Any] | None = None,
    *,
    checks: Sequence[Check] | None = None,
    thresholds: Thresholds | None = None,
    status: str | None = None,
) -> list[Finding]:
    """Run the checks on plain data: ``{metric: [(step, value), ...]}`` (or ``MetricPoint``
    lists), the run's params and tags. Errors first, then warnings; a healthy run gives ``[]``.
    ``status``: the run's MLflow status when known (``undertrained`` judges only runs that
    finished, or whose status is unknown).

    Args:
        histories: each metric's points, ``(step, value)`` pairs or ``MetricPoint`` objects.
        params: the run's parameters (for the checks on unreasonable hyperparameters).
        tags: the run's tags.
        checks: the checks to run; None: :func:`default_checks`.
        thresholds: the thresholds of the default checks; None: the defaults.
        status: the run's MLflow status (``FINISHED``, ``RUNNING``...), when known.

    Returns:
        The findings, errors before warnings.
    """
    data = RunData.build(histories, params, tags, status=status)
    return _run_checks(
        data, checks if checks is not None else default_checks(thresholds=thresholds)
    )


def diagnose_run(
    run: str | RunRecord,
    *,
    store: RunStore | None = None,
    tracking_uri: str | None = None,
    checks: Sequence[Check] | None = None,
    thresholds: Thresholds | None = None,
) -> list[Finding]:
    """Diagnose one run of a lineage store, by id (or unique prefix) or :class:`RunRecord`.

    Opens ``open_store(tracking_uri)`` when no ``store`` is given. An unknown run raises
    :class:`~lineage.NotFoundError` (exit 2); an unreachable store :class:`~lineage.StoreError`.

    Args:
        run: a run id, a unique prefix of one, or a :class:`RunRecord`.
        store: an open store; None: ``open_store(tracking_uri)``.
        tracking_uri: the store to open when ``store`` is None.
        checks: the checks to run; None: :func:`default_checks`.
        thresholds: the thresholds of the default checks; None: the defaults.

    Returns:
        The findings, errors before warnings; ``[]`` for a healthy run.
    """
    from lineage.store import open_store

    owned = store is None
    st = open_store(tracking_uri) if store is None else store
    try:
        record = st.get_run(run) if isinstance(run, str) else run
        histories = st.metric_histories(record.run_id)
    finally:
        if owned:
            st.close()
    data = RunData.build(
        histories, record.params, record.tags, run_id=record.run_id, status=record.status
    )
    return _run_checks(
        data, checks if checks is not None else default_checks(thresholds=thresholds)
    )


_ONLINE: dict[Thresholds, tuple[LossRunaway, Divergence]] = {}


def online_check(
    metric: str,
    steps: Sequence[int],
    values: Sequence[float],
    *,
    goal: str | None = None,
    thresholds: Thresholds | None = None,
) -> Finding | None:
    """Runaway and divergence on the intermediate values of one metric of a running trial.

    Meant for early stopping: a finding means the trial is doomed. ``goal``
    (``"minimize"``/``"maximize"``) is the metric's direction; when None it is read from the
    name (a plain loss is minimized, a plain accuracy maximized; see
    :mod:`lineage.diagnose._goal`). Curves are judged against the best level they reached in
    that direction, never by the magnitude of their values: a loss that falls below zero is
    improving. A metric whose goal is unknown (a loss component, a score) is never stopped on:
    the result is None, whatever its values (``diagnose_run`` on the finished run still
    reports a loss component that ran away). Cost: one pass over the values (numpy); safe to
    call from several threads.

    Args:
        metric: the metric's name; its goal is read from it when ``goal`` is None.
        steps: the steps reported so far, ascending.
        values: the value at each step.
        goal: ``minimize`` or ``maximize`` when the caller knows it.
        thresholds: the runaway and divergence thresholds; None: the defaults.

    Returns:
        The finding that dooms the trial, or None.
    """
    if len(steps) != len(values):
        raise UsageError(
            f"online_check: steps and values must have the same length, got "
            f"{len(steps)} and {len(values)}"
        )
    direction = goal_of(metric, goal)
    if direction is None:
        return None
    t = thresholds or DEFAULT_THRESHOLDS
    pair = _ONLINE.get(t)
    if pair is None:
        pair = _ONLINE.setdefault(t, (LossRunaway(thresholds=t), Divergence(thresholds=t)))
    runaway, divergence = pair
    step_arr = np.asarray(steps, dtype=np.int64)
    value_arr = np.asarray(values, dtype=np.float64)
    if step_arr.size > 1 and np.any(np.diff(step_arr) < 0):
        order = np.argsort(step_arr, kind="stable")
        step_arr, value_arr = step_arr[order], value_arr[order]
    series = Series(metric, step_arr, value_arr)
    return runaway.check_series(series, direction) or divergence.check_series(series, direction)
