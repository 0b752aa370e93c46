"""What a trial's MLflow run holds once the attempt ended: its closing tags and output tail."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tuner.executors import Placed
from tuner.records import _tags as T

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

    from tuner.executors import TrialOutcome

__all__ = [
    "clip_value",
    "finished_trial_tags",
    "interrupted_tags",
    "output_tail",
    "placed_trials",
    "placement_attr",
    "placement_tags",
    "trial_end_tags",
    "trial_run_name",
    "trial_start_tags",
]


def clip_value(v: Any) -> str:
    """``v`` as MLflow takes a param or tag value: text, cut to 5000 characters."""
    text = str(v)
    return text if len(text) <= 5000 else text[:4997] + "..."


def trial_start_tags(
    campaign: str,
    *,
    number: int,
    attempt: int,
    sampler: str,
    device: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The tags a trial run gets as its process starts: its type, name, number, attempt,
    sampler, device, command line and environment (secrets masked), then ``extra``."""
    from lineage.masking import mask_argv, mask_value
    from tuner.search import RETRY_OF_USER_ATTR

    masked = " ".join(mask_argv(list(argv)))
    tags = {
        T.RUN_TYPE: T.RUN_TYPE_TRIAL,
        # Only a retry of a failed attempt says so in its name; a re-run, a promotion or an
        # exploit is a later attempt too, but not a retry.
        T.MLFLOW_RUN_NAME: trial_run_name(
            campaign, number, attempt if RETRY_OF_USER_ATTR in (extra or {}) else 1
        ),
        T.TRIAL_NUMBER: str(number),
        T.ATTEMPT: str(attempt),
        T.SAMPLER: sampler,
        T.DEVICE: device,
        T.TRIAL_COMMAND: clip_value(masked),
        T.COMMAND: clip_value(masked),
        T.STATE: "RUNNING",
    }
    for name, value in env.items():
        tags[f"{T.ENV_PREFIX}{name}"] = clip_value(mask_value(name, value))
    tags.update(extra or {})
    return tags


def trial_run_name(campaign: str, number: int, attempt: int = 1) -> str:
    """A trial run's name: ``<campaign>-<trial number>``, and ``-retry<k>`` on the k-th
    retry of a failed attempt (``quickstart-7``, ``quickstart-9-retry1``)."""
    name = f"{campaign}-{number}"
    return name if attempt <= 1 else f"{name}-retry{attempt - 1}"


def trial_end_tags(
    state: str,
    outcome: TrialOutcome,
    *,
    reason: str | None,
    metric_names: Sequence[str],
    values: Sequence[float] | None,
    retried_as: int | None = None,
) -> dict[str, str]:
    """``tuner.state`` (COMPLETE, PRUNED, FAIL), how the process ended, why it failed or was
    pruned, the trial it was retried as, and its objective values."""
    tags = {T.STATE: state, T.DURATION: f"{outcome.duration:.3f}"}
    if outcome.exit_code is not None:
        tags[T.EXIT_CODE] = str(outcome.exit_code)
    if outcome.signal_name is not None:
        tags[T.SIGNAL] = outcome.signal_name
    tags.update(placement_tags(outcome))
    if state == "PRUNED":
        tags[T.PRUNE_REASON] = reason or "pruned"
    elif state == "FAIL":
        tags[T.FAIL_REASON] = reason or "failed"
        if retried_as is not None:
            tags[T.RETRIED_AS] = str(retried_as)
    if values is not None:
        for name, value in zip(metric_names, values, strict=True):
            tags[f"{T.VALUE_PREFIX}{name}"] = repr(value)
    return tags


def placement_tags(outcome: TrialOutcome) -> dict[str, str]:
    """How many trials shared the attempt's device and its peak device memory, as known."""
    tags = {}
    if outcome.neighbours is not None:
        tags[T.DEVICE_NEIGHBOURS] = str(outcome.neighbours)
    if outcome.peak_memory_mib is not None:
        tags[T.DEVICE_PEAK_MEMORY] = f"{outcome.peak_memory_mib:.0f}"
    return tags


def placement_attr(device: str, started: float | None, outcome: TrialOutcome) -> dict[str, Any]:
    """The Optuna trial's ``PLACEMENT_ATTR``: where it ran, beside how many, its peak device
    memory, whether it ran out of device memory beside other trials, and when (what the
    campaign's device-hours are summed from)."""
    return {
        "device": device,
        "neighbours": outcome.neighbours,
        "peak_memory_mib": outcome.peak_memory_mib,
        "packed_oom": outcome.packed_oom,
        "started": started,
        "duration": outcome.duration,
    }


def placed_trials(trials: Iterable[FrozenTrial]) -> list[Placed]:
    """What the ``PLACEMENT_ATTR`` of ``trials`` say, for an executor to recall
    (`tuner.executors.Executor.recall`): a resumed campaign packs as cautiously as the one
    that ran before it."""
    out = []
    for trial in trials:
        attr = trial.user_attrs.get(T.PLACEMENT_ATTR)
        if isinstance(attr, dict):
            peak = attr.get("peak_memory_mib")
            out.append(
                Placed(
                    number=trial.number,
                    params=dict(trial.params),
                    peak_memory_mib=float(peak) if isinstance(peak, int | float) else None,
                    packed_oom=attr.get("packed_oom") is True,
                )
            )
    return out


def finished_trial_tags(trial: FrozenTrial, metric_names: Sequence[str]) -> dict[str, str]:
    """The closing tags that can be rebuilt from a finished trial of the study alone (its
    state and objective values), for a run whose own end was never written."""
    tags = {T.STATE: trial.state.name}
    if trial.state.name == "PRUNED":
        tags[T.PRUNE_REASON] = "pruned (its run was ended on resume)"
    if trial.values is not None and trial.state.name == "COMPLETE":
        for name, value in zip(metric_names, trial.values, strict=False):
            tags[f"{T.VALUE_PREFIX}{name}"] = repr(value)
    return tags


def interrupted_tags(reason: str) -> dict[str, str]:
    """The closing tags of a run whose attempt was interrupted (it is re-run as a copy)."""
    return {T.STATE: "FAIL", T.FAIL_REASON: reason}


def output_tail(outcome: TrialOutcome) -> str:
    """The artifact ``tuner/output_tail.txt``: the last lines of stdout and stderr."""
    return (
        "----- stdout (tail) -----\n"
        + (outcome.stdout_tail or "(no output)")
        + "\n----- stderr (tail) -----\n"
        + (outcome.stderr_tail or "(no output)")
        + "\n"
    )
