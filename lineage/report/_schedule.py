"""What a scheduler did to a study's trials, as `lineage.trials` reads their attributes
(`lineage.trials.mark`): the marks that set paused, resumed, exploited and copied trials
apart in the report's figures, a PBT population's lineage (one row per member over steps,
an arrow where a member copied another) and each member's hyperparameter schedule as a table
(``schedule.csv``)."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import trials as V
from lineage.report._figures import BEST, PRUNED, Figure

if TYPE_CHECKING:
    from optuna import Study
    from optuna.trial import FrozenTrial

__all__ = ["KINDS", "Segment", "lineage_figure", "segments", "write_schedule"]

#: Each mark (`lineage.trials.Mark`): (label, matplotlib marker, plotly symbol, colour).
KINDS = {
    "paused": ("paused (ASHA, checkpoint kept)", "s", "square", "#ff7f0e"),
    "resumed": (
        "resumed (continues a promoted trial from its pause)",
        "^",
        "triangle-up",
        "#2ca02c",
    ),
    "exploited": ("exploited (PBT: copied over)", "v", "triangle-down", "#9467bd"),
    "copied": ("PBT segment from a donor's checkpoint", "h", "hexagon", "#17becf"),
}


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def marks(trials: Sequence[FrozenTrial]) -> dict[str, list[tuple[int, int, float]]]:
    """``{kind: [(trial number, step, value there)]}`` on the trials' reported curves."""
    out: dict[str, list[tuple[int, int, float]]] = {}
    for t in trials:
        record = V.TrialRecord.of(t)
        kind = V.mark(record)
        if kind is None or not t.intermediate_values:
            continue
        step = V.mark_step(record, kind)
        values = t.intermediate_values
        if step is None or step not in values:  # the nearest reported step
            step = min(values, key=lambda s: abs(s - (step if step is not None else -1)))
        out.setdefault(kind, []).append((t.number, step, float(values[step])))
    return out


def add_marks(fig: Any, ax: Any, points: Mapping[str, Sequence[tuple[float, float]]]) -> str:
    """Draw ``{kind: [(x, y)]}`` on both drawings with a legend entry per kind; return the
    caption sentence naming them ("" when none)."""
    said, handles = [], []
    for kind, xy in points.items():
        if not xy:
            continue
        label, mpl, symbol, colour = KINDS[kind]
        label = f"{label}: {len(xy)}"
        xs, ys = [p[0] for p in xy], [p[1] for p in xy]
        fig.add_scatter(
            x=xs, y=ys, mode="markers", name=label,
            marker={"symbol": symbol, "size": 11, "color": colour, "line": {"width": 1}},
        )  # fmt: skip
        handles.append(
            ax.scatter(xs, ys, marker=mpl, s=60, color=colour, edgecolors="black", zorder=6, label=label)
        )  # fmt: skip
        said.append(label)
    if not said:
        return ""
    fig.update_layout(showlegend=True)
    legend = ax.get_legend()  # keep what the figure's legend already says
    before = list(getattr(legend, "legend_handles", None) or []) if legend else []
    ax.legend(handles=before + handles, loc="best", fontsize="small")
    return " Scheduler marks: " + "; ".join(said) + "."


@dataclass
class Segment:
    """One trial of a PBT member: the steps it trained, and whose checkpoint it started from."""

    member: int
    trial: int
    state: str
    start: int
    end: int
    params: dict[str, Any]
    donor: int | None = None
    step: int | None = None  # the step at which the member copied the donor
    donor_member: int | None = None
    perturbed: Any = None
    exploited: bool = False


def segments(study: Study) -> list[Segment]:
    """A PBT study's segments by member then start step; ``[]`` when no trial carries a
    member or an exploit (not a PBT study)."""
    records, curves = [], {}  # earlier runs imported by a warm start are no member here
    for t in study.get_trials(deepcopy=False):
        record = V.TrialRecord.of(t)
        if not V.is_imported(record):
            records.append(record)
            curves[t.number] = t.intermediate_values
    if not any(V.EXPLOIT_ATTR in r.attrs or V.MEMBER_ATTR in r.attrs for r in records):
        return []
    by_number = {r.number: r for r in records}
    out = []
    for r in records:
        copy = r.attrs.get(V.EXPLOIT_ATTR)
        copy = copy if isinstance(copy, dict) else {}
        steps = sorted(curves[r.number])
        start = _int(copy.get("from_step"))
        if start is None:
            start = _int(r.attrs.get(V.RESUMED_STEP_ATTR))
        if start is None:
            start = steps[0] if steps else 0
        end = _int(r.attrs.get(V.EXPLOITED_ATTR))
        if end is None:
            end = steps[-1] if steps else start
        donor = _int(copy.get("donor"))
        out.append(
            Segment(
                member=V.member_of(r), trial=r.number, state=r.state, start=start,
                end=max(end, start), params=dict(r.params), donor=donor,
                donor_member=V.member_of(by_number[donor]) if donor in by_number else None,
                perturbed=copy.get("perturbed"), step=_int(copy.get("step")),
                exploited=V.EXPLOITED_ATTR in r.attrs,
            )
        )  # fmt: skip
    return sorted(out, key=lambda s: (s.member, s.start, s.trial))


def write_schedule(segs: Sequence[Segment], path: Path) -> Path:
    """Each member's hyperparameter schedule as CSV: one row per segment (member, trial,
    state, from and to step, donor trial and member, what was perturbed, one column per
    parameter)."""
    names = sorted({p for s in segs for p in s.params})
    head = ["member", "trial", "state", "from_step", "to_step", "donor_trial", "donor_member"]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([*head, "perturbed", *names])
        for s in segs:
            perturbed = "" if not s.perturbed else json.dumps(s.perturbed, default=str)
            w.writerow(
                [s.member, s.trial, s.state, s.start, s.end, s.donor, s.donor_member, perturbed]
                + [s.params.get(p, "") for p in names]
            )
    return path


def _short(value: Any) -> str:
    """``value`` as JSON with numbers to 4 significant digits (a caption, not a record)."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return json.dumps(value, default=str)


def _drawn_ends(segs: Sequence[Segment]) -> list[int]:
    """Where each segment's bar ends: its last step, or where the member's next segment
    starts when earlier (a copy may take a donor's older checkpoint: the member went back)."""
    ends = []
    for i, s in enumerate(segs):
        after = segs[i + 1] if i + 1 < len(segs) else None
        nxt = after.start if after is not None and after.member == s.member else s.end
        ends.append(max(s.start, min(s.end, nxt)))
    return ends


def lineage_figure(segs: Sequence[Segment]) -> Figure:
    """One row per member over steps (a bar per segment, labelled with its trial number) and
    an arrow from the donor's row to the member's row at each step a member copied another."""
    import matplotlib.pyplot as plt
    import plotly.graph_objects as go

    members = sorted({s.member for s in segs})
    row = {m: i for i, m in enumerate(members)}
    fig = go.Figure()
    _, ax = plt.subplots()
    copies = [s for s in segs if s.donor_member in row]
    for s, end in zip(segs, _drawn_ends(segs), strict=True):
        y, colour = row[s.member], (PRUNED if s.exploited else "#348abd")
        fig.add_scatter(
            x=[s.start, end], y=[y, y], mode="lines+markers", showlegend=False,
            line={"color": colour, "width": 6}, hovertext=f"trial {s.trial} {s.params}",
            hoverinfo="text",
        )  # fmt: skip
        ax.plot([s.start, end], [y, y], color=colour, lw=6, solid_capstyle="butt")
        ax.plot([s.start], [y], marker="|", ms=12, mew=2, color="white")  # where it begins
        ax.text((s.start + end) / 2, y + 0.18, f"#{s.trial}", ha="center", fontsize=8)
    for s in copies:
        text = f"#{s.trial} ← #{s.donor} (member {s.donor_member}) at {s.start}"
        y0, y1 = row[s.donor_member], row[s.member]  # type: ignore[index]
        ax.annotate(
            "", xy=(s.start, y1), xytext=(s.start, y0),
            arrowprops={"arrowstyle": "->", "color": BEST, "lw": 1.5},
        )  # fmt: skip
        fig.add_annotation(
            x=s.start, y=y1, ax=s.start, ay=y0, xref="x", yref="y", axref="x", ayref="y",
            showarrow=True, arrowhead=2, arrowcolor=BEST, hovertext=text, text="",
        )  # fmt: skip
    from matplotlib.lines import Line2D

    ax.legend(
        handles=[
            Line2D([0], [0], color="#348abd", lw=6, label="segment"),
            Line2D([0], [0], color=PRUNED, lw=6, label="segment copied over (exploited)"),
            Line2D([0], [0], color=BEST, marker=">", lw=1.5, label="copy: donor → member"),
        ],
        loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
    )  # fmt: skip
    labels = [f"member {m}" for m in members]
    ax.set_yticks(range(len(members)), labels)
    ax.set_ylim(-0.6, len(members) - 0.4)
    ax.set_xlabel("step")
    fig.update_yaxes(tickvals=list(range(len(members))), ticktext=labels)
    fig.update_xaxes(title="step")
    told = "; ".join(
        f"member {s.member} copied #{s.donor} (member {s.donor_member}) at step "
        + (
            f"{s.start}"
            if s.step in (None, s.start)
            else f"{s.step}, its checkpoint of step {s.start}"
        )
        + (f", perturbed {_short(s.perturbed)}" if s.perturbed else "")
        + f" (trial #{s.trial})"
        for s in copies
    )
    return Figure(
        "pbt-lineage",
        f"Population lineage: {len(members)} member(s), {len(copies)} copy(ies)",
        "One row per PBT member over steps, a bar per segment (its trial number above it, "
        "grey where another member's checkpoint replaced it); an arrow from the donor's row "
        "to the member's row at each copy. "
        + (told + "." if told else "No member copied another.")
        + " Each member's hyperparameter schedule: schedule.csv.",
        fig,
        ax,
    )
