"""Values parsed from the trial's output lines (``metrics: NAME: {pattern: REGEX}``).

For scripts that cannot be changed, e.g. MindSpore's ``epoch: 1 step: 10, loss is 0.53``
with ``pattern: 'loss is ([0-9.eE+-]+|nan|inf)'``. The value is the named group ``value``
(else the only group); the step is the named group ``step`` when the pattern has one, else
the number of matches so far (0, 1, 2, ...). Every match is an intermediate value, so a
pattern for the target metric is enough for pruning; the last match is the final value.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Mapping

from tuner.collectors._base import Collector
from tuner.executors import Report, TrialHandle

__all__ = ["StdoutCollector"]


class StdoutCollector(Collector):
    source = "stdout"

    def __init__(self, patterns: Mapping[str, re.Pattern[str]]) -> None:
        self._patterns = dict(patterns)
        self._counts = dict.fromkeys(self._patterns, 0)

    def collect(self, handle: TrialHandle) -> list[Report]:
        lines = handle.output_lines()
        if not self._patterns or not lines:
            return []
        out: list[Report] = []
        now = time.time()
        for line in lines:
            for name, regex in self._patterns.items():
                for match in regex.finditer(line):
                    report = self._report(name, match, now)
                    if report is not None:
                        out.append(report)
        return out

    def _report(self, name: str, match: re.Match[str], now: float) -> Report | None:
        groups = match.re.groupindex
        raw = match.group("value") if "value" in groups else match.group(1)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            return None
        step = self._counts[name]
        self._counts[name] += 1
        if "step" in groups:
            with contextlib.suppress(TypeError, ValueError):
                step = int(float(match.group("step")))
        return Report(step=step, metrics={name: value}, source=self.source, timestamp=now)
