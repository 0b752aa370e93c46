"""What a trial is, decided once over plain records (`lineage.trials`): a PBT chain, an ASHA
pause then promotion, a retry, a superseded attempt. `tuner status`, the controller's
tally, `tuner resume` and the reports all read a study through these rules."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from lineage import trials as V
from lineage.trials import TrialRecord

# ----- four stories, each a study's trials as plain records ----------------------------------

#: PBT: members 0 and 1; at step 4 member 1 copies member 0 (trial 2 continues member 1 from
#: trial 0's checkpoint, trial 1 is exploited and stale).
PBT = [
    TrialRecord(0, "COMPLETE", {}, values=(0.2,)),
    TrialRecord(1, "PRUNED", {V.EXPLOITED_ATTR: 4, V.STALE_ATTR: "exploited by pbt at step 4"}),
    TrialRecord(
        2,
        "COMPLETE",
        {
            V.MEMBER_ATTR: 1,
            V.PARENT_ATTR: 0,
            V.FIRST_TRIAL_ATTR: 0,
            V.RESUMED_STEP_ATTR: 4,
            V.ATTEMPT_ATTR: 1,
            V.EXPLOIT_ATTR: dict(
                member=1, replaces=1, donor=0, step=4, from_step=3, perturbed={"lr": [0.1, 0.08]}
            ),
        },
        values=(0.1,),
    ),
]
#: ASHA: trials 0 and 1 paused at rung step 2; trial 1 promoted (trial 2 resumes it and
#: supersedes it in the count), trial 0 stays paused.
ASHA = [
    TrialRecord(0, "PRUNED", {V.PAUSED_ATTR: 2}),
    TrialRecord(1, "PRUNED", {V.PAUSED_ATTR: 2}),
    TrialRecord(
        2,
        "COMPLETE",
        {
            V.PROMOTED_FROM_ATTR: 1,
            V.PARENT_ATTR: 1,
            V.FIRST_TRIAL_ATTR: 1,
            V.RESUMED_STEP_ATTR: 2,
            V.SUPERSEDES_ATTR: 1,
        },
        values=(0.3,),
    ),
]
#: A retry: trial 0 failed (a failed attempt, retried: stale), trial 1 retries it and fails
#: again (not retried), trial 2 is a fresh trial still running.
RETRY = [
    TrialRecord(0, "FAIL", {V.FAILED_ATTEMPT: True, V.STALE_ATTR: "failed attempt 1, retried"}),
    TrialRecord(
        1,
        "FAIL",
        {V.FAILED_ATTEMPT: True, V.PARENT_ATTR: 0, V.FIRST_TRIAL_ATTR: 0, V.ATTEMPT_ATTR: 2},
    ),
    TrialRecord(2, "RUNNING", {V.LAUNCH_ATTR: {"attempt": 1, "pid": 7}}),
]
#: An interrupted trial superseded by its re-run, which `tuner resume` started (its own
#: record says attempt 1), beside an earlier run a warm start imported.
SUPERSEDED = [
    TrialRecord(0, "COMPLETE", {V.IMPORTED_ATTR: "run-a"}, values=(0.5,)),
    TrialRecord(1, "FAIL", {V.STALE_ATTR: "interrupted: controller died"}),
    TrialRecord(2, "COMPLETE", {V.PARENT_ATTR: 1, V.ATTEMPT_ATTR: 1}, values=(0.4,)),
]


@pytest.mark.parametrize(
    ("records", "shown", "counted", "failed", "imported"),
    [
        (PBT, {"COMPLETE": 2, "EXPLOITED": 1}, {"COMPLETE": 2, "PRUNED": 0, "FAIL": 0}, 0, 0),
        (ASHA, {"PAUSED": 1, "PROMOTED": 1, "COMPLETE": 1}, {"COMPLETE": 1, "PRUNED": 1, "FAIL": 0}, 0, 0),
        (RETRY, {"SUPERSEDED": 1, "FAIL": 1, "RUNNING": 1}, {"COMPLETE": 0, "PRUNED": 0, "FAIL": 1}, 2, 0),
        (SUPERSEDED, {"SUPERSEDED": 1, "COMPLETE": 1}, {"COMPLETE": 1, "PRUNED": 0, "FAIL": 0}, 0, 1),
    ],
    ids=["pbt", "asha", "retry", "superseded"],
)  # fmt: skip
def test_the_tally_says_what_each_trial_is_and_what_the_budget_spent(
    records: list[TrialRecord],
    shown: dict[str, int],
    counted: dict[str, int],
    failed: int,
    imported: int,
) -> None:
    got = V.tally(records, scheduled=True)
    assert {k: v for k, v in got.shown.items() if v} == shown
    assert got.counted == counted
    assert got.finished == sum(counted.values())
    assert (got.failed_attempts, got.imported) == (failed, imported)


def test_without_a_scheduler_the_tally_shows_no_scheduler_words_at_zero() -> None:
    assert set(V.tally(RETRY).shown) == {
        "COMPLETE", "PRUNED", "FAIL", "SUPERSEDED", "RUNNING", "WAITING",
    }  # fmt: skip
    assert {"PAUSED", "PROMOTED", "EXPLOITED"} <= set(V.tally([], scheduled=True).shown)


@pytest.mark.parametrize(
    ("records", "kinds", "marks"),
    [
        (PBT, ["COMPLETE", "EXPLOITED", "COMPLETE"], [None, "exploited", "copied"]),
        (ASHA, ["PAUSED", "PROMOTED", "COMPLETE"], ["paused", "paused", "resumed"]),
        (RETRY, ["SUPERSEDED", "FAIL", "RUNNING"], [None, None, None]),
        (SUPERSEDED, ["IMPORTED", "SUPERSEDED", "COMPLETE"], [None, None, None]),
    ],
    ids=["pbt", "asha", "retry", "superseded"],
)
def test_one_word_per_trial_and_one_mark_per_scheduler_act(
    records: list[TrialRecord], kinds: list[str], marks: list[str | None]
) -> None:
    promoted = V.promoted_numbers(records)
    assert [V.kind(r, promoted) for r in records] == kinds
    assert [V.mark(r) for r in records] == marks


def test_promoted_is_the_paused_trial_a_continuation_resumes() -> None:
    assert V.promoted_numbers(ASHA) == {1}
    assert V.superseded_numbers(ASHA) == {1}
    assert V.continued(ASHA) == [ASHA[2]]
    # The continuation resumes at the step the promoted trial was paused at.
    assert V.mark_step(ASHA[1], "paused") == V.mark_step(ASHA[2], "resumed") == 2


@pytest.mark.parametrize(
    ("records", "attempts", "parents", "firsts"),
    [
        (PBT, {0: 1, 1: 1, 2: 2}, [None, None, 0], [0, 1, 0]),
        (ASHA, {0: 1, 1: 1, 2: 2}, [None, None, 1], [0, 1, 1]),
        (RETRY, {0: 1, 1: 2, 2: 1}, [None, 0, None], [0, 0, 2]),
        (SUPERSEDED, {0: 1, 1: 1, 2: 2}, [None, None, 1], [0, 1, 2]),
    ],
    ids=["pbt", "asha", "retry", "superseded"],
)
def test_chains_link_each_continuation_to_the_trial_it_continues(
    records: list[TrialRecord],
    attempts: dict[int, int],
    parents: list[int | None],
    firsts: list[int],
) -> None:
    assert V.chain_attempts(records) == attempts
    assert [V.parent_trial(r) for r in records] == parents
    assert [V.first_trial(r) for r in records] == firsts


def test_a_pbt_segment_belongs_to_its_member_and_its_copy_stays_that_member() -> None:
    assert [V.member_of(r) for r in PBT] == [0, 1, 1]
    assert V.mark_step(PBT[1], "exploited") == 4
    assert V.mark_step(PBT[2], "copied") == 3  # the donor's checkpoint, older than the copy
    assert V.chain_attrs(PBT[2].attrs, 2) == {
        V.PARENT_ATTR: 2, V.FIRST_TRIAL_ATTR: 0, V.MEMBER_ATTR: 1,
    }  # fmt: skip
    assert set(PBT[2].attrs[V.EXPLOIT_ATTR]) == set(V.EXPLOIT_KEYS)


def test_a_record_of_an_optuna_trial_reads_its_user_and_system_attributes() -> None:
    """The controller's tally goes through `TrialRecord.of`: the same rules over Optuna's
    trials as over the rows `tuner status` reads."""
    study = optuna.create_study(direction="minimize")
    dist = {"lr": FloatDistribution(1e-4, 1.0, log=True)}
    for r in ASHA:
        user = {k: v for k, v in r.attrs.items() if not k.startswith(V.SYSTEM_PREFIX)}
        system = {k: v for k, v in r.attrs.items() if k.startswith(V.SYSTEM_PREFIX)}
        study.add_trial(
            create_trial(
                state=TrialState[r.state], values=list(r.values) or None, params={"lr": 0.1},
                distributions=dist, user_attrs=user, system_attrs=system,
                intermediate_values={0: 1.0},
            )
        )  # fmt: skip
    records = [TrialRecord.of(t) for t in study.get_trials(deepcopy=False)]
    assert [(r.number, r.state, dict(r.attrs), r.values) for r in records] == [
        (r.number, r.state, dict(r.attrs), r.values) for r in ASHA
    ]
    assert records[0].params == {"lr": 0.1}
    assert V.tally(records, scheduled=True) == V.tally(ASHA, scheduled=True)
