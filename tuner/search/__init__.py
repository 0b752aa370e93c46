"""The search: what Optuna sees of a campaign.

- ``_registry``: the sampler and pruner registry (names, options, optional dependencies);
- ``_space``: the search space (distributions, ``when`` conditions, sampling order);
- ``_study``: the campaign's study and its RDB storage; ``_cache``: the write-through cache
  for a study with one writer;
- ``_internals``: every use of Optuna's private attributes, and why each is needed;
- ``_attrs``: the names of what the tuner stores on trials and studies;
- ``_continuation``: the chain of trials a retry or a re-run belongs to;
- ``_ranked`` and ``_transfer``: what a warm-started sampler sees of the imported runs
  (``compare: rank``; ``compare: auto``, measured from the campaign's own trials);
- ``_bounds``: best trials at the bound of a range, and the widened range to try;
- ``_focus``: a parameter's ``focus`` (most trials sample a refined sub-range; one in five,
  and every range the evidence widens, the whole);
- ``_notes``: what the stored study says of both, for the CLI and the campaign's run.
"""

from __future__ import annotations

from tuner.search._bounds import EDGE, widened
from tuner.search._continuation import (
    chain_attrs,
    continue_history,
    counts,
    first_trial,
    parent_trial,
    superseded_numbers,
)
from tuner.search._notes import (
    bound_notes,
    bounds_of,
    decisions_of,
    focus_lines,
    focus_notes_of,
    stored_decisions,
    transfer_notes,
)
from tuner.search._space import (
    distribution,
    distributions,
    is_active,
    sample_params,
    sampling_order,
    validate_params,
)
from tuner.search._storage_errors import (
    STORAGE_SCHEMES,
    explain_storage_error,
    storage_unavailable,
)
from tuner.search._transfer import line as transfer_line

__all__ = [
    "EDGE",
    "STORAGE_SCHEMES",
    "bound_notes",
    "bounds_of",
    "chain_attrs",
    "continue_history",
    "counts",
    "decisions_of",
    "distribution",
    "distributions",
    "explain_storage_error",
    "first_trial",
    "focus_lines",
    "focus_notes_of",
    "is_active",
    "parent_trial",
    "sample_params",
    "sampling_order",
    "storage_unavailable",
    "stored_decisions",
    "superseded_numbers",
    "transfer_line",
    "transfer_notes",
    "validate_params",
    "widened",
]
