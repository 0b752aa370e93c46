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
- ``_best``: which finished trials are the best (one objective) or the Pareto front;
- ``_bounds``: best trials at the bound of a range, and the widened range to try;
- ``_focus``: a parameter's ``focus`` (most trials sample a refined sub-range; one in five,
  and every range the evidence widens, the whole);
- ``_notes``: what the stored study says of both, for the CLI and the campaign's run.
"""

from __future__ import annotations

from lineage.lazy import lazy_names
from tuner.search._attrs import (
    ATTEMPT_ATTR,
    ENQUEUED_FROM_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    EXPLORING_ATTR,
    FAIL_ATTR,
    FAILED_ATTEMPT,
    FIRST_TRIAL_ATTR,
    IMPORTED_ATTR,
    IMPORTED_FROM_ATTR,
    LAUNCH_ATTR,
    MEMBER_ATTR,
    OWNER_ATTR,
    PARENT_ATTR,
    PARENT_RUN_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    PRUNE_ATTR,
    RERUN_OF_ATTR,
    RESUMED_STEP_ATTR,
    RETRY_HISTORY_ATTR,
    RETRY_OF_ATTR,
    RETRY_OF_USER_ATTR,
    SAMPLER_STARTS_ATTR,
    SPACE_ATTR,
    SPACE_CHANGES_ATTR,
    STALE_ATTR,
    STEERED_ATTR,
    SUPERSEDES_ATTR,
    SYSTEM_PREFIX,
    WARM_START_ATTR,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tuner.search import _internals as internals
    from tuner.search._best import best_numbers
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
    from tuner.search._registry import (
        ALTERNATIVES,
        GRID_SAMPLERS,
        MULTI_OBJECTIVE_SAMPLERS,
        NAMED_OPTIONS,
        NO_PRUNING,
        NUMERIC_ONLY,
        PRUNERS,
        SAMPLERS,
        SamplerPlan,
        make_pruner,
        make_sampler,
        missing_dependency,
    )
    from tuner.search._resilient import (
        DiskFull,
        exception_chain,
        is_disconnect,
        is_disk_full,
        outage_for,
        retrying,
    )
    from tuner.search._rungs import RungModel, rung_points, rung_values
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
    from tuner.search._study import (
        StudyPlan,
        check_storage,
        create_rdb,
        create_study,
        open_storage,
        sqlite_pragmas,
    )
    from tuner.search._transfer import line as transfer_line

# Everything but the attribute names loads on first use: every `tuner` command imports this
# package at start-up for those names (`tuner status` reads them), and should not pay for the
# rest (the study and its storage import Optuna and SQLAlchemy, about a second).
_LAZY = {
    "best_numbers": "tuner.search._best",
    "EDGE": "tuner.search._bounds",
    "widened": "tuner.search._bounds",
    "chain_attrs": "tuner.search._continuation",
    "continue_history": "tuner.search._continuation",
    "counts": "tuner.search._continuation",
    "first_trial": "tuner.search._continuation",
    "parent_trial": "tuner.search._continuation",
    "superseded_numbers": "tuner.search._continuation",
    "bound_notes": "tuner.search._notes",
    "bounds_of": "tuner.search._notes",
    "decisions_of": "tuner.search._notes",
    "focus_lines": "tuner.search._notes",
    "focus_notes_of": "tuner.search._notes",
    "stored_decisions": "tuner.search._notes",
    "transfer_notes": "tuner.search._notes",
    "ALTERNATIVES": "tuner.search._registry",
    "GRID_SAMPLERS": "tuner.search._registry",
    "MULTI_OBJECTIVE_SAMPLERS": "tuner.search._registry",
    "NAMED_OPTIONS": "tuner.search._registry",
    "NO_PRUNING": "tuner.search._registry",
    "NUMERIC_ONLY": "tuner.search._registry",
    "PRUNERS": "tuner.search._registry",
    "SAMPLERS": "tuner.search._registry",
    "SamplerPlan": "tuner.search._registry",
    "make_pruner": "tuner.search._registry",
    "make_sampler": "tuner.search._registry",
    "missing_dependency": "tuner.search._registry",
    "DiskFull": "tuner.search._resilient",
    "exception_chain": "tuner.search._resilient",
    "is_disconnect": "tuner.search._resilient",
    "is_disk_full": "tuner.search._resilient",
    "outage_for": "tuner.search._resilient",
    "retrying": "tuner.search._resilient",
    "distribution": "tuner.search._space",
    "distributions": "tuner.search._space",
    "is_active": "tuner.search._space",
    "sample_params": "tuner.search._space",
    "sampling_order": "tuner.search._space",
    "validate_params": "tuner.search._space",
    "STORAGE_SCHEMES": "tuner.search._storage_errors",
    "explain_storage_error": "tuner.search._storage_errors",
    "storage_unavailable": "tuner.search._storage_errors",
    "StudyPlan": "tuner.search._study",
    "check_storage": "tuner.search._study",
    "create_rdb": "tuner.search._study",
    "create_study": "tuner.search._study",
    "open_storage": "tuner.search._study",
    "sqlite_pragmas": "tuner.search._study",
    "transfer_line": "tuner.search._transfer:line",
    "RungModel": "tuner.search._rungs",
    "rung_points": "tuner.search._rungs",
    "rung_values": "tuner.search._rungs",
}
__getattr__ = lazy_names(globals(), _LAZY, modules={"internals": "tuner.search._internals"})


__all__ = [
    "ALTERNATIVES",
    "ATTEMPT_ATTR",
    "EDGE",
    "ENQUEUED_FROM_ATTR",
    "EXPLOITED_ATTR",
    "EXPLOIT_ATTR",
    "EXPLORING_ATTR",
    "FAILED_ATTEMPT",
    "FAIL_ATTR",
    "FIRST_TRIAL_ATTR",
    "GRID_SAMPLERS",
    "IMPORTED_ATTR",
    "IMPORTED_FROM_ATTR",
    "LAUNCH_ATTR",
    "MEMBER_ATTR",
    "MULTI_OBJECTIVE_SAMPLERS",
    "NAMED_OPTIONS",
    "NO_PRUNING",
    "NUMERIC_ONLY",
    "OWNER_ATTR",
    "PARENT_ATTR",
    "PARENT_RUN_ATTR",
    "PAUSED_ATTR",
    "PROMOTED_FROM_ATTR",
    "PRUNERS",
    "PRUNE_ATTR",
    "RERUN_OF_ATTR",
    "RESUMED_STEP_ATTR",
    "RETRY_HISTORY_ATTR",
    "RETRY_OF_ATTR",
    "RETRY_OF_USER_ATTR",
    "SAMPLERS",
    "SAMPLER_STARTS_ATTR",
    "SPACE_ATTR",
    "SPACE_CHANGES_ATTR",
    "STALE_ATTR",
    "STEERED_ATTR",
    "STORAGE_SCHEMES",
    "SUPERSEDES_ATTR",
    "SYSTEM_PREFIX",
    "WARM_START_ATTR",
    "DiskFull",
    "RungModel",
    "SamplerPlan",
    "StudyPlan",
    "best_numbers",
    "bound_notes",
    "bounds_of",
    "chain_attrs",
    "check_storage",
    "continue_history",
    "counts",
    "create_rdb",
    "create_study",
    "decisions_of",
    "distribution",
    "distributions",
    "exception_chain",
    "explain_storage_error",
    "first_trial",
    "focus_lines",
    "focus_notes_of",
    "internals",
    "is_active",
    "is_disconnect",
    "is_disk_full",
    "make_pruner",
    "make_sampler",
    "missing_dependency",
    "open_storage",
    "outage_for",
    "parent_trial",
    "retrying",
    "rung_points",
    "rung_values",
    "sample_params",
    "sampling_order",
    "sqlite_pragmas",
    "storage_unavailable",
    "stored_decisions",
    "superseded_numbers",
    "transfer_line",
    "transfer_notes",
    "validate_params",
    "widened",
]
