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
from lineage.uri import ui_link
from tuner.records import NOTE_TAG, Analysis, campaign_note, summary_tags
from tuner.records import _tags as T

if TYPE_CHECKING:
    from tuner.campaign._controller import Controller

__all__ = ["close_campaign", "link_analyses", "log_campaign_report"]

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
            tags.update(_search_notes(ctl))
        except BaseException as exc:  # the runs are closed all the same
            failures.append(exc)
            tags = {f"{T.COUNT_PREFIX}{k}": str(v) for k, v in ctl.counts.items()}
            tags[T.ERROR] = _describe(exc)
            status = "FAILED"
        if crashed:
            tags[T.ERROR] = _describe(error)
        step(lambda: recorder.close(status, tags=tags, reason=why))
        lost = getattr(recorder, "fatal", None)  # a full disk took the last records
        if lost is not None and error is None:
            failures.append(lost)
    step(lambda: ctl.campaign_dir.release(clean=clean and not failures))
    if failures and error is None:
        raise failures[0]


def link_analyses(ctl: Controller, analyses: Sequence[Analysis]) -> None:
    """The parent run's description, now with a link to each importance analysis run and
    to the campaign report that `log_campaign_report` adds to the first of them."""
    parent = ctl._recorder.parent_run_id if ctl._recorder else None
    if parent is None or not any(a.run_id for a in analyses):
        return
    note = _note(ctl, analyses)
    report = log_campaign_report(ctl, analyses)
    if report is not None:
        note += "\n\n" + _report_note(ctl, *report)
    try:
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=ctl.config.tracking_uri()).set_tag(parent, NOTE_TAG, note)
    except Exception as exc:  # the analysis exists either way; say so, do not fail
        ctl._observer.message(f"warning: could not link the analysis runs: {exc}")


def log_campaign_report(
    ctl: Controller, analyses: Sequence[Analysis]
) -> tuple[str, list[str]] | None:
    """Draw the campaign's report from its study (`lineage.report`) into the artifacts
    (``report/``) of the first importance analysis run; return that run's id and the views
    drawn, or ``None`` (no analysis run, or the report failed: a warning, never an error)."""
    run_id = next((a.run_id for a in analyses if a.run_id), None)
    if run_id is None or ctl.study is None:
        return None
    import tempfile

    try:
        from lineage.report import log_report, render_report

        order = _importance_order(ctl, analyses)
        with tempfile.TemporaryDirectory(prefix="tuner-report-") as tmp:
            report = render_report(
                ctl.study,
                tmp,
                target_names=ctl.config.metric_names,
                importances=order,
                title=f"Campaign {ctl.config.name}: report of its trials",
            )
            log_report(report, tracking_uri=ctl.config.tracking_uri(), run_id=run_id)
    except Exception as exc:  # the campaign is over and recorded; the pictures are extra
        ctl._observer.message(f"warning: the campaign report was not drawn: {_describe(exc)}")
        return None
    return run_id, [v["title"] for v in report.views]


def _importance_order(ctl: Controller, analyses: Sequence[Analysis]) -> dict[str, list[str]]:
    """Each objective's tuned parameters, most important first, from the ``importance.<p>``
    metrics of its analysis run (so the report's contour shows the pair the ranking names)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=ctl.config.tracking_uri())
    order: dict[str, list[str]] = {}
    for a in analyses:
        if not a.run_id:
            continue
        metrics = client.get_run(a.run_id).data.metrics
        scores = {
            p: metrics[f"importance.{p}"]
            for p in ctl.config.parameters
            if f"importance.{p}" in metrics
        }
        order[a.metric] = sorted(scores, key=lambda p: -scores[p])
    return order


def _report_note(ctl: Controller, run_id: str, views: Sequence[str]) -> str:
    exp = ctl._recorder.experiment_id if ctl._recorder else None
    link = (
        ui_link(experiment_id=exp, run_id=run_id, artifact="report/report.html") if exp else run_id
    )
    return (
        f"**Campaign report**: [how the search went]({link}) (`report/report.html`, "
        f"interactive; one PNG per view in `report/`): {'; '.join(views)}."
    )


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


def _search_notes(ctl: Controller) -> dict[str, str]:
    """The campaign run's tags on how the search went: the warm start's decision per source,
    and the parameters whose best trials sit at a bound and where each focus stands."""
    from tuner.search import bounds_of, decisions_of, focus_notes_of, transfer_line

    if ctl.study is None:
        return {}
    # The controller's own study: no second connection to the database at close.
    trials, directions = ctl.study.get_trials(deepcopy=False), ctl.study.directions
    tags = {}
    decision = [transfer_line(d) for d in decisions_of(ctl.config, trials, directions)]
    bounds = [*bounds_of(trials, directions), *focus_notes_of(ctl.config, trials, directions)]
    if decision:
        tags[T.WARM_START_DECISION] = "\n".join(decision)[:5000]
    if bounds:
        tags[T.AT_BOUNDS] = "\n".join(bounds)[:5000]
    return tags


def _describe(exc: BaseException | None) -> str:
    return scrub_text(f"{type(exc).__name__}: {exc}", ())[:5000]
