"""The end of a campaign, however it came: every MLflow run closed, the summary written.

`close_campaign` runs in the controller's ``finally``: whatever exception ends a campaign
(from any layer, or from the summary itself), no run of it is left RUNNING (the recorder
ends the runs trials were given and deletes unused reserved ones) and the campaign directory
records whether the exit was clean. `link_analyses` then points the parent run's description
at the importance analysis runs. `stop_and_mark` stops the attempts still running when a
campaign is interrupted or spends its failure budget; `stop_lost` those another worker
re-queued while they ran.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lineage.masking import scrub_text
from lineage.uri import ui_link
from tuner.coordination import supersede
from tuner.records import (
    NOTE_TAG,
    Analysis,
    campaign_note,
    device_usage_tags,
    disk_full,
    interrupted_tags,
    output_tail,
    summary_tags,
)
from tuner.records import tags as T
from tuner.search import internals

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._running import RunningTrial
    from tuner.config import CampaignConfig
    from tuner.coordination import CampaignDir, Coordination
    from tuner.executors import Executor, TrialOutcome
    from tuner.records import LineageRecorder

__all__ = [
    "CampaignEnd",
    "close_campaign",
    "ended_at",
    "link_analyses",
    "log_campaign_report",
    "stop_and_mark",
    "stop_lost",
]

_STOPPED = "interrupted: the controller stopped while the trial ran"

#: Seconds the lineage records still queued may take when the controller was stopped
#: (SIGTERM, Ctrl-C): a locked or absent store does not hold the exit up longer.
STOP_WAIT_S = 4.0


@dataclass(frozen=True)
class CampaignEnd:
    """What the end of a campaign reads, as the controller hands it over: the config, the
    study and the recorder (``None`` where the campaign ended before they existed), the counts
    and best trial, why it stopped early (``None`` when it did not), and where one-line
    warnings go. The whole config: the campaign run's description and its notes on the
    search tell all of it (`tuner.records.campaign_note`)."""

    config: CampaignConfig
    study: optuna.Study | None
    recorder: LineageRecorder | None
    counts: Mapping[str, int]
    best: dict[str, Any] | None
    stop_reason: str | None
    message: Callable[[str], Any]


def close_campaign(
    end: CampaignEnd,
    status: str,
    *,
    executor: Executor | None,
    coordination: Coordination,
    campaign_dir: CampaignDir,
    clean: bool,
    error: BaseException | None,
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

    if executor is not None:
        step(executor.shutdown)
    step(coordination.close)
    recorder = end.recorder
    if recorder is not None:
        crashed = error is not None and not isinstance(error, KeyboardInterrupt)
        why = f"controller error: {_describe(error)}" if crashed else _STOPPED
        try:
            tags = summary_tags(
                dict(end.counts), end.best, end.stop_reason, end.config.metric_names
            )
            tags[NOTE_TAG] = _note(end)
            tags.update(_search_notes(end))
            if end.study is not None:
                trials = end.study.get_trials(deepcopy=False)
                tags.update(
                    device_usage_tags(t.user_attrs.get(T.PLACEMENT_ATTR) or {} for t in trials)
                )
        except BaseException as exc:  # the runs are closed all the same
            failures.append(exc)
            tags = {f"{T.COUNT_PREFIX}{k}": str(v) for k, v in end.counts.items()}
            tags[T.ERROR] = _describe(exc)
            status = "FAILED"
        if crashed:
            tags[T.ERROR] = _describe(error)
        # A stopped controller gives its last records a bounded time (see `STOP_WAIT_S`).
        wait = STOP_WAIT_S if status == "KILLED" else None
        step(lambda: recorder.close(status, tags=tags, reason=why, wait=wait))
        lost = getattr(recorder, "fatal", None)  # a full disk took the last records
        if lost is not None and error is None:
            failures.append(lost)
    step(lambda: campaign_dir.release(clean=clean and not failures))
    if failures and error is None:
        raise failures[0]


def link_analyses(end: CampaignEnd, analyses: Sequence[Analysis]) -> None:
    """The parent run's description, now with a link to each importance analysis run and
    to the campaign report that `log_campaign_report` adds to the first of them."""
    parent = end.recorder.parent_run_id if end.recorder else None
    if parent is None or not any(a.run_id for a in analyses):
        return
    note = _note(end, analyses)
    report = log_campaign_report(end, analyses)
    if report is not None:
        note += "\n\n" + _report_note(end, *report)
    try:
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=end.config.tracking_uri()).set_tag(parent, NOTE_TAG, note)
    except Exception as exc:  # the analysis exists either way; say so, do not fail
        end.message(f"warning: could not link the analysis runs: {exc}")


def log_campaign_report(
    end: CampaignEnd, analyses: Sequence[Analysis]
) -> tuple[str, list[tuple[str, str]]] | None:
    """Draw the campaign's report from its study (`lineage.report`) into the artifacts
    (``report/``) of the first importance analysis run; return that run's id and the views
    drawn as (title, PNG file), or ``None`` (no analysis run, or the report failed: a warning,
    never an error)."""
    run_id = next((a.run_id for a in analyses if a.run_id), None)
    if run_id is None or end.study is None:
        return None
    import tempfile

    try:
        from lineage.report import log_report, render_report

        order = _importance_order(end.config.tracking_uri(), end.config.parameters, analyses)
        with tempfile.TemporaryDirectory(prefix="tuner-report-") as tmp:
            report = render_report(
                end.study,
                tmp,
                target_names=end.config.metric_names,
                importances=order,
                title=f"Campaign {end.config.name}: report of its trials",
                search=[line for lines in _search_lines(end) for line in lines],
            )
            log_report(report, tracking_uri=end.config.tracking_uri(), run_id=run_id)
    except Exception as exc:  # the campaign is over and recorded; the pictures are extra
        end.message(f"warning: the campaign report was not drawn: {_describe(exc)}")
        return None
    return run_id, [(v["title"], v["png"]) for v in report.views]


def _importance_order(
    tracking_uri: str, tuned: Iterable[str], analyses: Sequence[Analysis]
) -> dict[str, list[str]]:
    """Each objective's tuned parameters, most important first, from the ``importance.<p>``
    metrics of its analysis run (so the report's contour shows the pair the ranking names)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    names = list(tuned)
    order: dict[str, list[str]] = {}
    for a in analyses:
        if not a.run_id:
            continue
        metrics = client.get_run(a.run_id).data.metrics
        scores = {p: metrics[f"importance.{p}"] for p in names if f"importance.{p}" in metrics}
        order[a.metric] = sorted(scores, key=lambda p: -scores[p])
    return order


def _report_note(end: CampaignEnd, run_id: str, views: Sequence[tuple[str, str]]) -> str:
    # The links open the PNGs, which MLflow's artifact viewer always draws; the interactive
    # page (a few MB of plotly) is named as a download.
    exp = end.recorder.experiment_id if end.recorder else None

    def link(png: str) -> str:
        return (
            ui_link(experiment_id=exp, run_id=run_id, artifact=f"report/{png}") if exp else run_id
        )

    shown = "; ".join(f"[{title}]({link(png)})" for title, png in views)
    return (
        f"**Campaign report** (one picture per view): {shown}. `report/report.html` holds "
        "every view interactive (zoom, hover): download it to open it in a browser tab."
    )


def _note(end: CampaignEnd, analyses: Sequence[Analysis] = ()) -> str:
    return campaign_note(
        end.config,
        experiment_id=end.recorder.experiment_id if end.recorder else None,
        counts=dict(end.counts),
        best=end.best,
        stop_reason=end.stop_reason,
        analyses=analyses,
    )


def _search_notes(end: CampaignEnd) -> dict[str, str]:
    """The campaign run's tags on how the search went (`_search_lines`)."""
    decision, bounds = _search_lines(end)
    tags = {}
    if decision:
        tags[T.WARM_START_DECISION] = "\n".join(decision)[:5000]
    if bounds:
        tags[T.AT_BOUNDS] = "\n".join(bounds)[:5000]
    return tags


def _search_lines(end: CampaignEnd) -> tuple[list[str], list[str]]:
    """How the search went: the warm start's decision per source, and the parameters whose
    best trials sit at a bound and where each focus stands."""
    from tuner.search import bounds_of, decisions_of, focus_notes_of, transfer_line

    if end.study is None:
        return [], []
    # The controller's own study: no second connection to the database at close.
    trials, directions = end.study.get_trials(deepcopy=False), end.study.directions
    config = end.config
    decision = [transfer_line(d) for d in decisions_of(config.warm_start, trials, directions)]
    bounds = [
        *bounds_of(trials, directions),
        *focus_notes_of(config.parameters, trials, directions),
    ]
    return decision, bounds


def _describe(exc: BaseException | None) -> str:
    return scrub_text(f"{type(exc).__name__}: {exc}", ())[:5000]


def stop_and_mark(
    study: optuna.Study,
    running: dict[int, RunningTrial],
    reason: str,
    *,
    executor: Executor | None,
    recorder: LineageRecorder | None,
    message: Callable[[str], Any],
) -> None:
    """Stop the ``running`` attempts (each is taken out of it) and shut the executor down;
    mark each trial superseded with ``reason`` (a copy with its parameters is queued) and
    end its run KILLED. A storage that fails while marking is said per trial, a full disk
    not (it is said once, as the campaign ends)."""
    if not running:
        return
    for rt in running.values():
        rt.handle.terminate()
    if executor is not None:
        executor.shutdown()
    for rt in list(running.values()):
        running.pop(rt.number, None)
        outcome = rt.handle.poll()
        try:
            trial_id = internals.trial_id(rt.trial)
            frozen = internals.storage_of(study).get_trial(trial_id)
            supersede(study, rt.number, trial_id, reason, rt.params, frozen)
        except Exception as exc:  # the storage itself may be what failed
            if disk_full(exc) is None:
                message(f"trial {rt.number}: could not be marked: {exc}")
        if rt.run_id and recorder is not None:
            recorder.trial_finished(
                rt.run_id,
                status="KILLED",
                tags=interrupted_tags(reason),
                output_tail=scrub_text(output_tail(outcome), rt.secrets) if outcome else "",
                ended_at=ended_at(rt, outcome) if outcome else None,
            )


def stop_lost(
    running: Mapping[int, RunningTrial], lost: Collection[int], message: Callable[[str], Any]
) -> None:
    """Stop, at once, the processes of the ``running`` attempts whose trial (by id) is in
    ``lost``: another worker re-queued it and its copy runs there. Each is marked
    superseded; the controller records it so once it ended."""
    if not lost:
        return
    for rt in running.values():
        if internals.trial_id(rt.trial) in lost and not rt.superseded:
            rt.superseded = True
            rt.handle.terminate()
            message(
                f"trial {rt.number}: another worker re-queued it (its heartbeat went stale); "
                "its process is stopped"
            )


def ended_at(rt: RunningTrial, outcome: TrialOutcome) -> float | None:
    """When the attempt's process ended (``time.time()``), from its start and duration."""
    started = getattr(rt.handle, "started_at", None)
    if started is None or outcome.duration <= 0:
        return None
    return float(started) + outcome.duration
