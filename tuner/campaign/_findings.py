"""The checks of ``diagnosis.checks`` run on each ended attempt, over what the controller
holds of it: the values it reported and its parameters. The findings go on the attempt's
MLflow run (``tuner.diagnosis``) and, for errors, into one line of the campaign's output;
``lineage diagnose RUN`` reads the run's whole recorded curves instead."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.campaign._running import RunningTrial

__all__ = ["DIAGNOSIS_STOP", "EndCheck", "end_check", "error_line", "tag_text"]

#: How the reason of a trial the online diagnosis stopped begins.
DIAGNOSIS_STOP = "stopped early by diagnosis"

#: The most characters of findings kept on a run's tag (MLflow's SQL stores take 5,000).
TAG_LIMIT = 4000

#: ``(attempt, MLflow status) -> findings``.
EndCheck = Callable[["RunningTrial", str], list[Any]]


def end_check(check_ids: Sequence[str]) -> EndCheck | None:
    """The checks named by ``check_ids`` (all of `lineage.diagnose`'s when empty), as a
    function of an ended attempt; None when `lineage.diagnose` cannot be imported."""
    try:
        from lineage.diagnose import default_checks, diagnose_histories
    except ImportError:  # numpy missing from a stripped-down install: no findings, said in docs
        return None
    checks = default_checks(list(check_ids) or None)

    def check(rt: RunningTrial, status: str) -> list[Any]:
        histories = {
            key: list(zip(steps, values, strict=True))
            for key, (steps, values) in rt.history.items()
        }
        return diagnose_histories(histories, dict(rt.params), checks=checks, status=status)

    return check


def tag_text(findings: Sequence[Any]) -> str:
    """The findings as one tag value, cut at `TAG_LIMIT` characters."""
    text = "; ".join(f"{f.check} ({f.severity}): {f.summary}" for f in findings)
    return text if len(text) <= TAG_LIMIT else text[: TAG_LIMIT - 3] + "..."


def error_line(number: int, findings: Sequence[Any]) -> str | None:
    """One output line for the errors among ``findings``, or None when there are none."""
    errors = [f for f in findings if f.severity == "error"]
    if not errors:
        return None
    more = f" (+{len(errors) - 1} more on the run's tuner.diagnosis tag)" if len(errors) > 1 else ""
    return f"trial {number}: diagnosis: {errors[0].check}: {errors[0].summary}{more}"
