"""How an ended trial attempt is judged, and small helpers shared with `tuner status`."""

from __future__ import annotations

import math
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tuner._state import TrialState
from tuner.executors._base import TrialHandle, TrialOutcome

if TYPE_CHECKING:
    import optuna

    from tuner._running import RunningTrial
    from tuner.config import CampaignConfig

__all__ = ["best_of", "judge"]


def judge(
    config: CampaignConfig, rt: RunningTrial, outcome: TrialOutcome
) -> tuple[TrialState, list[float] | None, str | None]:
    """The final state of an attempt, its objective values, and the reason (fail/prune)."""
    if rt.prune_reason is not None:
        return TrialState.PRUNED, None, rt.prune_reason
    if outcome.launch_error:
        return TrialState.FAIL, None, outcome.launch_error
    if outcome.timed_out:
        return (
            TrialState.FAIL,
            None,
            f"timeout: ran longer than trial.timeout={config.trial.timeout:g}s",
        )
    if outcome.stopped:
        return TrialState.FAIL, None, "stopped by the controller"
    if outcome.signal is not None:
        # The executor may say why (e.g. ray: the node or worker running it was lost).
        last = _last_line(outcome.stderr_tail)
        return (
            TrialState.FAIL,
            None,
            f"killed by signal {_signal_name(outcome.signal)}" + (f": {last}" if last else ""),
        )
    if outcome.exit_code != 0:
        last = _last_line(outcome.stderr_tail) or _last_line(outcome.stdout_tail)
        return (
            TrialState.FAIL,
            None,
            f"exit code {outcome.exit_code}" + (f": {last}" if last else ""),
        )
    missing = [m for m in config.metric_names if m not in rt.latest]
    if missing:
        for collector in rt.collectors:
            for key, value in collector.final(rt.handle, outcome).items():
                rt.latest.setdefault(key, value)
            if all(m in rt.latest for m in config.metric_names):
                break
    values: list[float] = []
    for metric in config.metric_names:
        if metric not in rt.latest:
            return (
                TrialState.FAIL,
                None,
                f"target metric {metric!r} was never reported (tuner.trial.report, "
                "mlflow.log_metric into MLFLOW_RUN_ID, or a metrics: pattern)",
            )
        value = rt.latest[metric]
        if not math.isfinite(value):
            return TrialState.FAIL, None, f"target metric {metric!r} is {value}"
        values.append(value)
    return TrialState.COMPLETE, values, None


def best_of(study: optuna.Study) -> dict[str, Any] | None:
    """``{"number", "value", "params"}`` of the best trial (single objective), or for a
    multi-objective study the Pareto front as ``{"trials": [...]}``; None before any."""
    try:
        if len(study.directions) > 1:
            front = study.best_trials
            if not front:
                return None
            return {
                "trials": [
                    {"number": t.number, "values": t.values, "params": t.params} for t in front
                ]
            }
        trial = study.best_trial
    except ValueError:
        return None
    return {"number": trial.number, "value": trial.value, "params": trial.params}


def _load_online_check() -> Callable[..., Any]:
    try:
        from lineage.diagnose import online_check

        return online_check
    except ImportError:
        return _fallback_online_check


class _FallbackFinding:
    def __init__(self, summary: str) -> None:
        self.summary = summary


def _fallback_online_check(metric: str, steps: Any, values: Any) -> Any:
    # Used only when lineage.diagnose is missing: the one check that needs no thresholds.
    for step, value in zip(steps, values, strict=False):
        if not math.isfinite(value):
            return _FallbackFinding(f"{metric} became {value} at step {step}")
    return None


def _finding_text(finding: Any) -> str:
    check = getattr(finding, "check", None)
    summary = getattr(finding, "summary", str(finding))
    return f"{check}: {summary}" if check else str(summary)


def _device_label(handle: TrialHandle) -> str:
    slot = getattr(handle, "slot", None)
    if slot is not None and hasattr(slot, "label"):
        return str(slot.label)
    return ",".join(handle.devices) if handle.devices else "cpu"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:300]
    return ""


def _tail_text(outcome: TrialOutcome) -> str:
    return (
        "----- stdout (tail) -----\n"
        + (outcome.stdout_tail or "(no output)")
        + "\n----- stderr (tail) -----\n"
        + (outcome.stderr_tail or "(no output)")
        + "\n"
    )
