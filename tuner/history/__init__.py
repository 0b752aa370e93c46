"""History: what a campaign learns from the lineage store before its first trial.

- ``_sources``: the runs one ``warm_start.from`` entry selects (lineage's public store API);
- ``_warm_start``: those runs as finished Optuna trials of the new space (`load_history`),
  imported once into the study (`apply`);
- ``_derive*``: a campaign derived from recorded runs (`derive_campaign`), written as a commented
  YAML file (`render_campaign`) by ``tuner init --from``.

>>> from tuner.history import HistoryContext, apply, load_history
>>> plan = load_history(HistoryContext.of(config))  # ConfigError (exit 2): a bad source
>>> print("\\n".join(plan.lines()))       # imported / skipped, one line each
>>> apply(study, plan)                   # before the first ask; never imports twice
"""

from __future__ import annotations

from tuner.history._derive import DerivedCampaign, DerivedParameter, derive_campaign
from tuner.history._derive_yaml import PLACEHOLDER_PROGRAM, render_campaign
from tuner.history._sources import HistoryContext, SourceRuns, read_source, source_uri
from tuner.history._warm_start import (
    SKIP_REASONS,
    SourceTally,
    WarmStartPlan,
    apply,
    load_history,
)

__all__ = [
    "PLACEHOLDER_PROGRAM",
    "SKIP_REASONS",
    "DerivedCampaign",
    "DerivedParameter",
    "HistoryContext",
    "SourceRuns",
    "SourceTally",
    "WarmStartPlan",
    "apply",
    "derive_campaign",
    "load_history",
    "read_source",
    "render_campaign",
    "source_uri",
]
