"""What a campaign's study already holds before its first trial: the search space it was run
with, and the earlier runs ``warm_start:`` imported.

`preflight` runs before the controller makes anything (campaign folder, study, MLflow run):

- a study that exists and was run with another search space is refused, one line naming the
  difference (`ConfigError`, exit 2), unless ``allow_space_change``; then the change is kept
  in the study (``tuner.space_changes``) and recorded in the campaign's MLflow run (tag
  ``tuner.space_change``, param ``space_change.<n>``, and a paragraph of its description);
- ``warm_start`` sources are read when the study has not imported them yet (a bad source:
  one line, exit 2). A study that holds the import is never imported into again, and its
  sources are not read (`tuner resume` works when they are gone).

`Preflight.apply` then imports (under the coordination's setup lock) and records the space.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner._errors import ConfigError
from tuner.records import NOTE_TAG
from tuner.records import tags as T
from tuner.search import (
    IMPORTED_ATTR,
    SPACE_ATTR,
    SPACE_CHANGES_ATTR,
    WARM_START_ATTR,
)

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._closing import CampaignEnd
    from tuner.config import CampaignConfig
    from tuner.history import WarmStartPlan
    from tuner.records import LineageRecorder

__all__ = [
    "Preflight",
    "count_imported",
    "note_space_changes",
    "preflight",
    "read_history",
    "tally",
]

_NOTE_HEAD = "**Search space changes** (`--allow-space-change`)"


@dataclass
class Preflight:
    """What `preflight` found; applied to the study once it is created or loaded."""

    #: ``budget.trials`` (None: no trial limit): an import never enqueues more trials than
    #: the budget has left.
    budget: int | None
    #: The search space as the config wrote it (`tuner.config.space_spec`), kept in the study.
    space: dict[str, Any]
    plan: WarmStartPlan | None = None
    #: The accepted change of the space (``x.high 1.0 -> 2.0; lr added``), or None.
    change: str | None = None
    #: The warm-start lines once the plan was imported (for the campaign's MLflow run).
    imported: list[str] = field(default_factory=list)

    def apply(self, study: optuna.Study) -> list[str]:
        """Import the plan (once), record the space (and its change); lines to show."""
        from tuner.coordination import counted_trials
        from tuner.history import apply

        out: list[str] = []
        if self.plan is not None and WARM_START_ATTR not in study.user_attrs:
            # An enqueued trial is taken whatever the count: never more than the budget left.
            if self.budget is not None:
                left = self.budget - (counted_trials(study) - count_imported(study))
                self.plan.enqueue = self.plan.enqueue[: max(0, left)]
            apply(study, self.plan)
            self.imported = self.plan.lines()
            out.extend(self.imported)
        if study.user_attrs.get(SPACE_ATTR) != self.space:
            study.set_user_attr(SPACE_ATTR, self.space)
        if self.change is not None:
            changes = list(study.user_attrs.get(SPACE_CHANGES_ATTR) or [])
            changes.append({"at": _now(), "change": self.change})
            study.set_user_attr(SPACE_CHANGES_ATTR, changes)
            out.append(f"search space changed (--allow-space-change): {self.change}")
        return out

    def record(self, recorder: LineageRecorder) -> None:
        """The import (tag) and the accepted change (tag and a new param) in the campaign's
        MLflow run."""
        change, parent, imported = self.change, recorder.parent_run_id, self.imported
        if parent is None:
            return
        if imported:
            recorder.call(lambda client: client.set_tag(parent, T.WARM_START, "\n".join(imported)))
        if change is None:
            return

        def write(client: Any) -> None:
            run = client.get_run(parent)
            n = 1 + sum(1 for k in run.data.params if k.startswith(T.SPACE_CHANGE_PARAM_PREFIX))
            client.set_tag(parent, T.SPACE_CHANGE, change[:5000])
            client.log_param(parent, f"{T.SPACE_CHANGE_PARAM_PREFIX}{n}", change[:6000])

        recorder.call(write)


def read_history(
    config: CampaignConfig, plan: WarmStartPlan | None
) -> tuple[WarmStartPlan | None, ConfigError | None]:
    """The warm-start plan, read before the study's storage is opened (which makes its
    SQLite file): ``(plan, None)``, or ``(None, why it could not be read)`` for `preflight`
    to raise unless the study already holds the import. A SQLite study that does not exist
    yet cannot hold it: then the error is raised at once."""
    if plan is not None or config.warm_start is None:
        return plan, None
    from tuner.history import HistoryContext, load_history

    try:
        return load_history(HistoryContext.of(config)), None
    except ConfigError as exc:
        url = config.optuna_storage_url()
        if (
            url.startswith("sqlite:///")
            and not Path(url[len("sqlite:///") :].split("?")[0]).exists()
        ):
            raise
        return None, exc


def preflight(
    config: CampaignConfig,
    storage: optuna.storages.BaseStorage,
    *,
    allow_space_change: bool,
    plan: WarmStartPlan | None = None,
    unread: ConfigError | None = None,
) -> Preflight:
    """Check the study's space and take the warm-start plan (``unread``: the error of
    `read_history`, raised unless the study holds the import); creates nothing. It takes the
    whole ``config``: the space (`tuner.config.space_spec`), the study's name, and the
    `tuner.history.HistoryContext` a warm start reads its sources in."""
    from tuner.config import space_difference, space_spec

    out = Preflight(budget=config.trial_limit, space=space_spec(config))
    attrs: dict[str, Any] = {}
    n_trials = 0
    try:
        study_id = storage.get_study_id_from_name(config.study_name)
    except KeyError:
        study_id = None
    if study_id is not None:
        attrs = storage.get_study_user_attrs(study_id)
        trials = storage.get_all_trials(study_id, deepcopy=False)
        n_trials = sum(1 for t in trials if IMPORTED_ATTR not in t.system_attrs)
    old = attrs.get(SPACE_ATTR)
    if old is not None:
        diff = space_difference(old, out.space)
        if diff:
            out.change = "; ".join(diff)
            if not allow_space_change:
                raise config.error(
                    ("parameters",),
                    f"changed since campaign {config.name!r} last ran ({out.change}), and its "
                    f"{n_trials} trial(s) were sampled from the old space; run with "
                    "--allow-space-change to go on with the new space (the change is recorded "
                    "in the campaign's MLflow run), or give the campaign another name",
                )
    if config.warm_start is not None and WARM_START_ATTR not in attrs:
        if unread is not None:
            raise unread
        if plan is None:
            from tuner.history import HistoryContext, load_history

            plan = load_history(HistoryContext.of(config))
        out.plan = plan
    return out


def tally(study: optuna.Study) -> tuple[dict[str, int], int]:
    """What the study's earlier controllers finished: the counted trials by final state
    (``COMPLETE``, ``PRUNED``, ``FAIL``), and the failed attempts (retried ones too) the
    failure budget has spent; `lineage.trials.tally` counts them."""
    from lineage.trials import TrialRecord
    from lineage.trials import tally as count

    done = count(TrialRecord.of(t) for t in study.get_trials(deepcopy=False))
    return done.counted, done.failed_attempts


def count_imported(study: optuna.Study) -> int:
    """Trials of ``study`` imported by ``warm_start:``."""
    return sum(1 for t in study.get_trials(deepcopy=False) if IMPORTED_ATTR in t.system_attrs)


def note_space_changes(end: CampaignEnd) -> None:
    """Append the study's accepted space changes to the campaign run's description (which
    the closing rewrites); nothing when there are none."""
    study, recorder = end.study, end.recorder
    if study is None or recorder is None or recorder.parent_run_id is None:
        return
    try:
        changes = study.user_attrs.get(SPACE_CHANGES_ATTR) or []
    except Exception:  # the study's database itself may be what ended the campaign
        return
    if not changes:
        return
    lines = [f"- {c['at']}: {c['change']}" for c in changes]
    try:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=end.config.tracking_uri())
        note = client.get_run(recorder.parent_run_id).data.tags.get(NOTE_TAG, "")
        note = note.split(f"\n\n{_NOTE_HEAD}", 1)[0]
        text = "\n\n".join(p for p in (note.rstrip(), _NOTE_HEAD, "\n".join(lines)) if p)
        client.set_tag(recorder.parent_run_id, NOTE_TAG, text)
    except Exception as exc:  # the changes are in the tag and params either way
        end.message(f"warning: could not note the space changes: {exc}")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
