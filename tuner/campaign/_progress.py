"""The live view of `tuner run`: a progress bar over the budget and a table of running trials
(rich, on stderr). `--quiet` replaces it with nothing."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from tuner.campaign._running import Observer

if TYPE_CHECKING:
    from tuner.campaign._controller import Controller

__all__ = ["RichObserver"]


class RichObserver(Observer):
    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._console = Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self._console,
        )
        self._task: Any = None
        self._live = Live(console=self._console, refresh_per_second=4, transient=False)
        self._started = False

    def update(self, controller: Controller) -> None:
        from rich.console import Group
        from rich.table import Table

        if self._task is None:
            self._task = self._progress.add_task(
                controller.config.name, total=controller.budget, detail=""
            )
        counts = controller.counts
        detail = f"✓{counts['COMPLETE']} ✂{counts['PRUNED']} ✗{counts['FAIL']}"
        best = controller.best()
        if best is not None and "value" in best:
            detail += f"  best #{best['number']} = {best['value']:.6g}"
        self._progress.update(self._task, completed=sum(counts.values()), detail=detail)
        table = Table(box=None, show_edge=False, pad_edge=False)
        for col in ("trial", "attempt", "device", "elapsed", controller.config.target.metric):
            table.add_column(col)
        now = time.time()
        target = controller.config.target.metric
        for rt in list(controller.running.values()):
            last = rt.latest.get(target)
            table.add_row(
                str(rt.number),
                str(rt.attempt),
                rt.device,
                f"{now - rt.handle.started_at:.1f}s",
                "" if last is None else f"{last:.6g}",
            )
        self._live.update(Group(self._progress, table))
        if not self._started:
            self._live.start()
            self._started = True

    def message(self, text: str) -> None:
        self._console.print(text, markup=False, highlight=False)

    def close(self) -> None:
        if self._started:
            self._live.stop()
            self._started = False
