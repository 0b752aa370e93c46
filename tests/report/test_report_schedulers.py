"""A scheduled study's report: paused, resumed and copied-over trials marked apart, a PBT
population's lineage drawn (who copied whom, when) and its hyperparameter schedule as CSV.
The study is built through Optuna's API with the user attributes the tuner writes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from lineage.report import render_report

_LR = {"lr": FloatDistribution(1e-4, 1.0, log=True)}


def _trial(state: TrialState, lr: float, curve: dict[int, float], **attrs: object) -> object:
    return create_trial(
        state=state, value=list(curve.values())[-1] if state == TrialState.COMPLETE else None,
        params={"lr": lr}, distributions=_LR, intermediate_values=curve, user_attrs=attrs,
    )  # fmt: skip


def _pbt_study() -> optuna.Study:
    """Three members (trials 0-2) over 8 steps; at step 4 member 2 (worst) copies member 0
    (trial 3 continues it) and at step 6 member 1 copies member 2's new segment as it stood at
    step 4 (trial 4: the checkpoint a copy takes may be older than the step it copies at)."""
    study = optuna.create_study(direction="minimize", study_name="pbt")
    done, pruned = TrialState.COMPLETE, TrialState.PRUNED
    loss = lambda a, b, lo, hi: {s: a - b * s for s in range(lo, hi + 1)}  # noqa: E731
    study.add_trials([
        _trial(done, 0.1, loss(1.0, 0.1, 0, 8)),
        _trial(pruned, 0.01, loss(1.2, 0.05, 0, 6), **{"tuner.exploited_at": 6}),
        _trial(pruned, 0.001, loss(1.5, 0.01, 0, 4), **{"tuner.exploited_at": 4}),
        _trial(done, 0.08, loss(1.0, 0.11, 0, 8), **{
            "tuner.member": 2, "tuner.parent_trial": 0, "tuner.resumed_step": 4,
            "tuner.exploit": {"member": 2, "replaces": 2, "donor": 0, "step": 4,
                              "from_step": 4, "perturbed": {"lr": [0.1, 0.08]}},
        }),
        _trial(done, 0.064, loss(1.0, 0.115, 0, 8), **{
            "tuner.member": 1, "tuner.parent_trial": 3, "tuner.resumed_step": 4,
            "tuner.exploit": {"member": 1, "replaces": 1, "donor": 3, "step": 6,
                              "from_step": 4, "perturbed": {"lr": [0.08, 0.064]}},
        }),
    ])  # fmt: skip
    return study


def test_pbt_report_draws_the_lineage_and_the_schedule(tmp_path: Path) -> None:
    report = render_report(_pbt_study(), tmp_path)
    views = {v["name"]: v for v in report.views}
    lineage = views["pbt-lineage"]
    assert lineage["title"] == "Population lineage: 3 member(s), 2 copy(ies)"
    assert "member 2 copied #0 (member 0) at step 4" in lineage["caption"]
    assert "member 1 copied #3 (member 2) at step 6, its checkpoint of step 4" in lineage["caption"]
    png = tmp_path / "pbt-lineage.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "id='pbt-lineage'" in page and "member 1 copied #3" in page
    assert "exploited (PBT: copied over): 2" in views["intermediate"]["caption"]
    assert "segment from a donor" in views["history"]["caption"]
    with (tmp_path / "schedule.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    got = [(r["member"], r["trial"], r["from_step"], r["to_step"], r["donor_trial"], r["lr"]) for r in rows]  # fmt: skip
    assert got == [
        ("0", "0", "0", "8", "", "0.1"),
        ("1", "1", "0", "6", "", "0.01"),
        ("1", "4", "4", "8", "3", "0.064"),
        ("2", "2", "0", "4", "", "0.001"),
        ("2", "3", "4", "8", "0", "0.08"),
    ]
    assert json.loads(rows[4]["perturbed"]) == {"lr": [0.1, 0.08]}
    assert tmp_path / "schedule.csv" in report.files


def test_asha_report_marks_paused_trials_and_the_continuations_of_promoted_ones(
    tmp_path: Path,
) -> None:
    study = optuna.create_study(direction="minimize", study_name="asha")
    curve = lambda a, n: {s: a / (s + 1) for s in range(n)}  # noqa: E731
    study.add_trials([
        _trial(TrialState.COMPLETE, 0.1, curve(1.0, 9)),
        _trial(TrialState.PRUNED, 0.01, curve(2.0, 3), **{"tuner.paused_at": 2}),
        _trial(TrialState.PRUNED, 0.3, curve(3.0, 3), **{"tuner.paused_at": 2}),
        _trial(TrialState.COMPLETE, 0.01, curve(2.0, 9), **{
            "tuner.promoted_from": 1, "tuner.parent_trial": 1, "tuner.resumed_step": 2,
        }),
    ])  # fmt: skip
    report = render_report(study, tmp_path)
    views = {v["name"]: v for v in report.views}
    assert "pbt-lineage" not in views and not (tmp_path / "schedule.csv").exists()
    caption = views["intermediate"]["caption"]
    assert "paused (ASHA, checkpoint kept): 2" in caption
    assert "resumed (continues a promoted trial from its pause): 1" in caption
    assert "resumed (continues a promoted trial from its pause): 1" in views["history"]["caption"]
