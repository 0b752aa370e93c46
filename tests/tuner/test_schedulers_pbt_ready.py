"""PBT's ready rule on real subprocess trials: a member takes part in a decision only on
values it trained itself, once it trained ``interval`` steps of its own since it started or
last copied. On a loss that rises every step, a continuation's copied values used to rank it
as a top member before it trained a step, and the two members replaced each other without end.
Real MLflow SQLite store, Optuna on SQLite."""

from __future__ import annotations

import itertools
import sys
from typing import Any

import pytest

from tests.tuner.conftest import mlflow_runs, trials_of

pytestmark = pytest.mark.slow

STEPS = 6

#: ``loss = 1 + step + lr``: later steps always look worse, so a member ranked on another's
#: copied values would always look better than one that trained on.
SCRIPT = f"""
import argparse, json, os, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--lr", type=float); lr = ap.parse_args().lr
with open("attempts", "a") as fh:
    fh.write(f"{{trial.number()}} {{os.environ['TUNER_ATTEMPT']}}\\n")
resume = trial.resume_from()
start = 0 if resume is None else resume[1] + 1
for step in range(start, {STEPS}):
    if trial.should_prune():
        break
    time.sleep(0.3)
    trial.report(step, loss=1 + step + lr)
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({{"lr": lr}}))
    trial.checkpointed(step)
"""


def _copied_at(trial: Any) -> int:
    exploit = trial.user_attrs.get("tuner.exploit")
    return int(exploit["from_step"]) if exploit else 0


def test_a_rising_loss_ends_in_at_most_population_times_steps_exploits(
    campaign: Any, run_campaign: Any, sqlite_uri: str, tmp_path: Any
) -> None:
    config = campaign(
        SCRIPT,
        command=[sys.executable, "trial.py", "--lr", "{lr}"],
        budget={"trials": 2},
        parameters={"lr": {"type": "float", "low": 0.01, "high": 0.1}},
        resources={"kind": "cpu", "parallel": 2},
        sampler={"name": "random", "seed": 3},
        scheduler={
            "name": "pbt",
            "population": 2,
            "interval": 1,
            "quantile": 0.5,
            "perturb": {"lr": {"factor": [0.8, 1.2]}},
        },
    )
    import io

    from tuner.campaign._progress import PlainObserver

    printed = io.StringIO()
    result = run_campaign(config, observer=PlainObserver(printed))
    trials = trials_of(config)
    by_number = {t.number: t for t in trials}
    exploits = [t for t in trials if "tuner.exploit" in t.user_attrs]
    _one_attempt_number_everywhere(config, tmp_path, sqlite_uri, printed.getvalue(), exploits)
    assert len(exploits) <= 2 * STEPS // 1, [t.user_attrs["tuner.exploit"] for t in exploits]
    for cont in exploits:
        info = cont.user_attrs["tuner.exploit"]
        replaced, donor = by_number[info["replaces"]], by_number[info["donor"]]
        # The replaced segment was judged on a step of its own, an interval past its copy.
        own = [s for s in replaced.intermediate_values if s > _copied_at(replaced)]
        assert own and info["step"] in own and info["step"] - _copied_at(replaced) >= 1
        # The donor's checkpoint is one it trained itself, not the one it copied.
        assert info["from_step"] > _copied_at(donor) or "tuner.exploit" not in donor.user_attrs
    # At most one exploit per member per interval: a member's exploit steps strictly rise,
    # each at least one step past the checkpoint the previous one copied.
    by_member: dict[int, list[Any]] = {}
    for cont in sorted(exploits, key=lambda t: t.number):
        by_member.setdefault(cont.user_attrs["tuner.member"], []).append(cont)
    for conts in by_member.values():
        for earlier, later in itertools.pairwise(conts):
            assert later.user_attrs["tuner.exploit"]["step"] > _copied_at(earlier)
    # Each member ended its six steps once; one MLflow run per segment.
    assert result.counts["COMPLETE"] == 2
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert sorted(max(t.intermediate_values) for t in complete) == [STEPS - 1, STEPS - 1]
    runs = [r for r in mlflow_runs(sqlite_uri) if "tuner.trial_number" in r.data.tags]
    assert len(runs) == len(trials) == 2 + len(exploits)


def _one_attempt_number_everywhere(
    config: Any, folder: Any, uri: str, printed: str, exploits: list[Any]
) -> None:
    """A continuation's attempt, one after the trial it continues, reads the same in its
    process's ``TUNER_ATTEMPT``, the Optuna attribute, the MLflow tag, `tuner status` and
    the `tuner run` line (as a retry's line shows it)."""
    from tuner.status import collect

    seen = dict(line.split() for line in (folder / "attempts").read_text().splitlines())
    tags = {r.data.tags["tuner.trial_number"]: r.data.tags for r in mlflow_runs(uri)
            if "tuner.trial_number" in r.data.tags}  # fmt: skip
    status = {c["number"]: c["attempt"] for c in collect(config)["continued"]}
    assert exploits and set(status) == {t.number for t in exploits}
    for cont in exploits:
        donor = cont.user_attrs["tuner.exploit"]["donor"]
        attempt = cont.user_attrs["tuner.attempt"]
        parent = next(t for t in trials_of(config) if t.number == donor)
        assert attempt == parent.user_attrs.get("tuner.attempt", 1) + 1
        assert seen[str(cont.number)] == tags[str(cont.number)]["tuner.attempt"] == str(attempt)
        assert status[cont.number] == attempt
        if cont.state.name == "COMPLETE":  # the run prints a line per counted trial
            line = f"trial {cont.number} COMPLETE (attempt {attempt}, continues trial {donor},"
            assert line in printed


#: Deterministic values (``loss = 1 - lr + 0.01 * step``), random speeds: a decision that
#: depended on which member reported first would differ between two runs. Steps are short
#: (under 0.05 s), shorter than the controller's reading of reports on a busy machine: a
#: member pauses at each boundary because it waits there for the verdict (`checkpointed`),
#: not because its reports were read in time.
SYNCH_SCRIPT = """
import argparse, json, random, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--lr", type=float); lr = ap.parse_args().lr
resume = trial.resume_from()
start = 0 if resume is None else resume[1] + 1
for step in range(start, 6):
    if trial.should_prune():
        break
    time.sleep(random.uniform(0.0, 0.05))
    trial.report(step, loss=1 - lr + 0.01 * step)
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"lr": lr}))
    trial.checkpointed(step)
"""


def _decisions(config: Any) -> list[tuple[Any, ...]]:
    trials = trials_of(config)
    member = {t.number: t.user_attrs.get("tuner.member", t.number) for t in trials}
    out = []
    for t in sorted(trials, key=lambda t: t.number):
        info = t.user_attrs.get("tuner.exploit")
        if info:
            out.append(
                (info["member"], member[info["donor"]], info["step"], info["from_step"], t.params)
            )
    return out


def test_synch_decisions_repeat_with_the_same_seed(campaign: Any, run_campaign: Any) -> None:
    runs = []
    for name in ("t", "u"):
        config = campaign(
            SYNCH_SCRIPT,
            name=name,
            command=[sys.executable, "trial.py", "--lr", "{lr}"],
            budget={"trials": 3},
            parameters={"lr": {"type": "float", "low": 0.1, "high": 0.9}},
            resources={"kind": "cpu", "parallel": 3},
            sampler={"name": "random", "seed": 5},
            scheduler={
                "name": "pbt",
                "population": 3,
                "interval": 2,
                "quantile": 0.34,
                "synch": True,
                "perturb": {"lr": {"factor": [0.8, 1.2]}},
            },
        )
        result = run_campaign(config)
        assert result.counts["COMPLETE"] == 3
        runs.append(_decisions(config))
        # Every member paused at each boundary (2 and 4) and went on from there.
        paused = sorted(
            t.user_attrs["tuner.paused_at"]
            for t in trials_of(config)
            if t.state.name == "PRUNED" and "tuner.paused_at" in t.user_attrs
        )
        assert paused == [2, 2, 2, 4, 4, 4]
    assert runs[0], "the worst member exploits at each boundary"
    assert runs[0] == runs[1]
