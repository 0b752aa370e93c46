"""What `tuner run` shows while it runs.

In a terminal (stdout and stderr both ttys): a live view on stderr, a progress bar over the
budget and a table of running trials (rich). Anywhere else (``| tee log``, CI logs, ``2>&1``
into a file): one plain line on stdout per finished trial, flushed at once, without control
characters, so a log grows as the campaign does and the closing summary starts its own line.
``--quiet`` replaces both with nothing.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from tuner.campaign._running import Observer
from tuner.coordination import running_seconds

if TYPE_CHECKING:
    from tuner.campaign._running import CampaignView

__all__ = ["PlainObserver", "RichObserver", "interactive"]


def interactive() -> bool:
    """Whether the live view can be drawn: stdout and stderr are terminals that understand
    cursor movement (``TERM=dumb`` does not)."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stdout.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class RichObserver(Observer):
    """The live view in a terminal; outside one it behaves as `PlainObserver`."""

    def __init__(self) -> None:
        self._plain: PlainObserver | None = None
        if not interactive():
            self._plain = PlainObserver()
            return
        from rich.console import Console
        from rich.live import Live

        self._console = Console(stderr=True)
        self._progress = progress_bar(self._console)
        self._task: Any = None
        self._live = Live(console=self._console, refresh_per_second=4, transient=False)
        self._started = False

    def update(self, controller: CampaignView) -> None:
        if self._plain is not None:
            self._plain.update(controller)
            return
        from rich.console import Group

        done, total, _unit = measure(controller)
        if self._task is None:
            self._task = self._progress.add_task(controller.config.name, total=total, detail="")
        counts = controller.study_counts()
        detail = f"✓{counts['COMPLETE']} ✂{counts['PRUNED']} ✗{counts['FAIL']}"
        best = controller.best()
        if best is not None and "value" in best:
            detail += f"  best #{best['number']} = {best['value']:.6g}"
        self._progress.update(self._task, completed=done, detail=detail)
        table = running_table(controller, time.time(), self._console.width)
        self._live.update(Group(self._progress, table))
        if not self._started:
            self._live.start()
            self._started = True

    def message(self, text: str) -> None:
        if self._plain is not None:
            self._plain.message(text)
            return
        self._console.print(text, markup=False, highlight=False)

    def close(self) -> None:
        if self._plain is not None:
            self._plain.close()
            return
        if self._started:
            self._live.stop()
            self._started = False


def progress_bar(console: Any) -> Any:
    """The live view's bar: name, bar, count, states and best, elapsed time; each on one
    line whatever the width (a text too long ends in an ellipsis, never breaks)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    def text(template: str) -> TextColumn:
        return TextColumn(template, table_column=Column(no_wrap=True, overflow="ellipsis"))

    return Progress(
        text("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        text("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=console,
    )


def running_table(controller: CampaignView, now: float, width: int) -> Any:
    """The running trials, one line each, in ``width`` columns: a cell too long ends in an
    ellipsis, a column that does not fit is left out (the rightmost first), never folded."""
    from rich.table import Table
    from rich.text import Text

    from lineage.console import fit_widths

    target = controller.config.target.metric
    headers = ["trial", "attempt", "device", "elapsed", target]
    rows = []
    for rt in list(controller.running.values()):
        last = rt.latest.get(target)
        rows.append(
            [
                str(rt.number),
                str(rt.attempt),
                rt.device,
                f"{now - rt.handle.started_at:.1f}s",
                "" if last is None else f"{last:.6g}",
            ]
        )
    widths = fit_widths(headers, rows, width)
    shown = [i for i, w in enumerate(widths) if w is not None]
    table = Table(box=None, show_edge=False, pad_edge=False)
    for i in shown:
        table.add_column(Text(headers[i]), width=widths[i], no_wrap=True, overflow="ellipsis")
    for row in rows:
        table.add_row(*(Text(row[i]) for i in shown))
    return table


def measure(controller: CampaignView) -> tuple[float, float | None, str]:
    """How much of the budget is spent, of how much, in which unit: steps with
    ``budget.steps``, else device-hours with ``budget.device_hours``, else counted trials
    (no total with ``budget.timeout`` alone). Never more than the total."""
    budget = controller.config.budget
    if budget.steps is not None:
        return min(controller.spent().steps, budget.steps), budget.steps, "steps"
    if budget.device_hours is not None:
        hours = min(controller.spent().device_hours, budget.device_hours)
        return hours, budget.device_hours, "device-hours"
    done = sum(controller.study_counts().values())
    if controller.budget is None:
        return done, None, "trials"
    return min(done, controller.budget), controller.budget, "trials"


def _figure(value: float, unit: str) -> str:
    return f"{value:.3g}" if unit == "device-hours" else str(int(value))


class PlainObserver(Observer):
    """One line per finished trial on ``stream`` (default stdout), e.g.
    ``[3/16] trial 2 COMPLETE val_accuracy=0.9361 12.4s lr=0.0123 optimizer=adam``.

    The bracket holds the budget spent and the budget, in its unit (`measure`): trials,
    steps (``[120/2000 steps]``) or device-hours; it never passes the budget and never
    repeats a number: a line that spent nothing new (a paused trial a scheduler promotes no
    longer counts, its continuation does) shows a blank bracket. The seconds are the
    trial's running time, from its process's start to its end (not the time it waited for a
    slot after it was asked).

    Finished trials are read from the study (the controller's storage) when its counts change
    (every controller's, on a study shared with workers), so a trial shorter than the view's refresh interval is not missed; trials
    finished before this controller started (a resumed campaign) and superseded attempts are
    not listed."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._printed: set[int] | None = None
        self._last: tuple[int, int] = (-1, -1)
        self._shown = -1.0  # the last figure a bracket showed

    def _write(self, line: str) -> None:
        stream = self._stream or sys.stdout
        # Control characters in a trial's own text (a reason, a param value) would still
        # move a terminal's cursor when the log is shown: printable text only.
        stream.write("".join(c if c.isprintable() else " " for c in line) + "\n")
        stream.flush()

    def update(self, controller: CampaignView) -> None:
        config = controller.config
        if self._printed is None:
            self._printed = {t.number for t in _finished(controller)}
            _, total, unit = measure(controller)
            budget = "no limit but time" if total is None else f"{_figure(total, unit)} {unit}"
            self._write(
                f"campaign {config.name!r}: budget {budget}, "
                f"{config.resources.parallel} at a time; one line per finished trial"
            )
        done = sum(controller.study_counts().values())
        mark = (done, controller.failures)
        if mark == self._last:
            return
        self._last = mark
        finished = _finished(controller)
        spent, total, unit = measure(controller)
        new = [t for t in sorted(finished, key=lambda t: t.number) if t.number not in self._printed]
        for i, frozen in enumerate(new):
            self._printed.add(frozen.number)
            # Trials: the lines of one batch count up to the total, one each.
            figure = spent - (len(new) - 1 - i) if unit == "trials" else spent
            self._write(self._line(controller, frozen, self._bracket(figure, total, unit)))

    def _bracket(self, spent: float, total: float | None, unit: str) -> str:
        """``[spent/total]`` (``[spent/total unit]`` beyond trials) when ``spent`` passed
        the last figure shown; else as many blanks (the lines stay aligned)."""
        figure = _figure(spent, unit)
        text = f"[{figure}]" if total is None else f"[{figure}/{_figure(total, unit)}"
        if total is not None:
            text += "]" if unit == "trials" else f" {unit}]"
        if float(figure) <= self._shown:
            return " " * len(text)
        self._shown = float(figure)
        return text

    def _line(self, controller: CampaignView, frozen: Any, bracket: str) -> str:
        from lineage.masking import mask_mapping
        from tuner.search import (
            ATTEMPT_ATTR,
            FAIL_ATTR,
            PARENT_ATTR,
            PRUNE_ATTR,
            RESUMED_STEP_ATTR,
        )

        state = frozen.state.name
        values = frozen.values if state == "COMPLETE" else None
        names = controller.config.metric_names
        parts = [bracket, f"trial {frozen.number}", state]
        attempt = int(frozen.user_attrs.get(ATTEMPT_ATTR, 1) or 1)
        resumed = frozen.user_attrs.get(RESUMED_STEP_ATTR)
        parent = frozen.user_attrs.get(PARENT_ATTR)
        # A continuation (a retry, a re-run, a promotion, an exploit) is one attempt after the
        # trial it continues, and names it.
        notes = [f"attempt {attempt}"] if attempt > 1 else []
        notes += [f"continues trial {parent}"] if parent is not None else []
        notes += [f"resumed from step {resumed}"] if resumed is not None else []
        if notes:
            parts.append(f"({', '.join(notes)})")
        if values:
            parts.append(" ".join(f"{n}={v:.6g}" for n, v in zip(names, values, strict=False)))
        secs = running_seconds(frozen, time.time())
        if secs > 0:  # under a second: two digits that say something (0.04s, not 0.0s)
            parts.append(f"{secs:.1f}s" if secs >= 1 else f"{secs:.2g}s")
        # A value under a secret-looking name (``api_token``) is masked, as in every record.
        params = mask_mapping(frozen.params)
        parts += [f"{k}={_short(v)}" for k, v in params.items()]
        reason = frozen.user_attrs.get(FAIL_ATTR if state == "FAIL" else PRUNE_ATTR)
        if reason and state in ("FAIL", "PRUNED"):
            from lineage.masking import mask_uri

            parts.append(f"({mask_uri(str(reason))[:200]})")
        return " ".join(parts)

    def message(self, text: str) -> None:
        self._write(text)

    def close(self) -> None:
        (self._stream or sys.stdout).flush()


def _finished(controller: CampaignView) -> list[Any]:
    """The study's finished trials, superseded attempts left out ([] before the study)."""
    if controller.study is None:
        return []
    import optuna

    from tuner.search import IMPORTED_ATTR, STALE_ATTR

    states = (
        optuna.trial.TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED,
        optuna.trial.TrialState.FAIL,
    )
    trials = controller.study.get_trials(deepcopy=False, states=states)
    return [
        t
        for t in trials
        if STALE_ATTR not in t.system_attrs and IMPORTED_ATTR not in t.system_attrs
    ]


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
