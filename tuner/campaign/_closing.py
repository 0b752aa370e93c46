"""The end of a campaign, however it came: every MLflow run closed, the summary written.

`close_campaign` runs in the controller's ``finally``: whatever exception ends a campaign
(from any layer, or from the summary itself), no run of it is left RUNNING (the recorder
ends the runs trials were given and deletes unused reserved ones) and the campaign directory
records whether the exit was clean. `link_analyses` then points the parent run's description
at the importance analysis runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lineage.masking import scrub_text
from tuner.records import NOTE_TAG, Analysis, campaign_note, summary_tags
from tuner.records import _tags as T

if TYPE_CHECKING:
    from tuner.campaign._controller import Controller

__all__ = ["close_campaign", "link_analyses"]

_STOPPED = "interrupted: the controller stopped while the trial ran"


def close_campaign(
    ctl: Controller, status: str, *, clean: bool, error: BaseException | None
) -> None:
    """Executor, coordination, the MLflow runs (the parent with its summary, and any run a
    trial left open), the campaign directory: each step whatever the others did. A failure
    here is raised only when no other exception (``error``) is on its way out."""
    failures: list[BaseException] = []

    def step(fn: Callable[[], Any]) -> None:
        try:
            fn()
        except BaseException as exc:  # the other steps must still run
            failures.append(exc)

    if ctl._executor is not None:
        step(ctl._executor.shutdown)
    step(ctl._coordination.close)
    recorder = ctl._recorder
    if recorder is not None:
        crashed = error is not None and not isinstance(error, KeyboardInterrupt)
        why = f"controller error: {_describe(error)}" if crashed else _STOPPED
        try:
            tags = summary_tags(ctl.counts, ctl.best(), _stop(ctl), ctl.config.metric_names)
            tags[NOTE_TAG] = _note(ctl)
        except BaseException as exc:  # the runs are closed all the same
            failures.append(exc)
            tags = {f"{T.COUNT_PREFIX}{k}": str(v) for k, v in ctl.counts.items()}
            tags[T.ERROR] = _describe(exc)
            status = "FAILED"
        if crashed:
            tags[T.ERROR] = _describe(error)
        step(lambda: recorder.close(status, tags=tags, reason=why))
    step(lambda: ctl.campaign_dir.release(clean=clean and not failures))
    if failures and error is None:
        raise failures[0]


def link_analyses(ctl: Controller, analyses: Sequence[Analysis]) -> None:
    """The parent run's description, now with a link to each importance analysis run."""
    parent = ctl._recorder.parent_run_id if ctl._recorder else None
    if parent is None or not any(a.run_id for a in analyses):
        return
    note = _note(ctl, analyses)
    try:
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=ctl.config.tracking_uri()).set_tag(parent, NOTE_TAG, note)
    except Exception as exc:  # the analysis exists either way; say so, do not fail
        ctl._observer.message(f"warning: could not link the analysis runs: {exc}")


def _stop(ctl: Controller) -> str | None:
    return ctl._stop_reason or ctl._launch_closed


def _note(ctl: Controller, analyses: Sequence[Analysis] = ()) -> str:
    return campaign_note(
        ctl.config,
        experiment_id=ctl._recorder.experiment_id if ctl._recorder else None,
        counts=ctl.counts,
        best=ctl.best(),
        stop_reason=_stop(ctl),
        analyses=analyses,
    )


def _describe(exc: BaseException | None) -> str:
    return scrub_text(f"{type(exc).__name__}: {exc}", ())[:5000]
