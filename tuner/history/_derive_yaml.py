"""A `DerivedCampaign` as a commented campaign YAML (what ``tuner init --from`` writes)."""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

from tuner.history._derive import enqueue_count
from tuner.history._derive_params import FIX_BELOW, FIX_RUNS, MARGIN

if TYPE_CHECKING:
    from tuner.history._derive import DerivedCampaign, DerivedParameter

__all__ = ["PLACEHOLDER_PROGRAM", "default_name", "render_campaign"]

#: The program of the command written when lineage recorded none: not a program anyone has,
#: and ``tuner validate`` (like ``tuner run``) refuses the campaign until the user replaces it.
PLACEHOLDER_PROGRAM = "CHANGE-ME-no-command-was-recorded"

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "none", "y", "n", "~"}


def default_name(experiment: str) -> str:
    """``<experiment>-refined``, made a valid campaign name."""
    base = re.sub(r"[^A-Za-z0-9_.\-]+", "-", experiment).strip("-") or "campaign"
    if not base[0].isalpha():
        base = f"c-{base}"
    return f"{base}-refined"


def _y(value: Any) -> str:
    """One scalar as YAML that reads back as the same value and type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return json.dumps(str(value))
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        if exponent and "." not in mantissa:
            text = f"{mantissa}.0e{exponent}"  # YAML 1.1 reads 1e-05 as a string
        return text
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text)


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else _y(value)


def _flow(mapping: dict[str, Any]) -> str:
    parts = []
    for key, value in mapping.items():
        if isinstance(value, dict):
            parts.append(f"{key}: {_flow(value)}")
        elif isinstance(value, list):
            parts.append(f"{key}: [{', '.join(_y(v) for v in value)}]")
        else:
            parts.append(f"{key}: {_y(value)}")
    return "{" + ", ".join(parts) + "}"


def _wrap(text: str, indent: str = "", width: int = 96) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(indent) + 2 + len(line) + 1 + len(word) > width:
            lines.append(f"{indent}# {line}")
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(f"{indent}# {line}")
    return lines


def _param_lines(p: DerivedParameter) -> list[str]:
    recorded = (
        f"recorded range [{_short(p.recorded[0])}, {_short(p.recorded[1])}]"
        if p.is_range
        else f"recorded choices {', '.join(_y(v) for v in p.recorded)}"
    )
    if p.tuned:
        out = _wrap(f"{p.reason}; best run: {_short(p.best)}; {recorded}.", "  ")
        if "focus" not in p.spec:
            return [*out, f"  {p.name}: {_flow(p.spec)}"]
        # The focus is offered, not set (the header says why): the line with it, commented.
        plain = {k: v for k, v in p.spec.items() if k != "focus"}
        return [*out, f"  # {p.name}: {_flow(p.spec)}", f"  {p.name}: {_flow(plain)}"]
    if not p.in_best:
        reason = p.reason.replace("at the best run's value", "as in the best run")
        text = f"{p.name}: {reason}: "
        text += f"the best run did not have it (inactive there), so it is not set; {recorded}."
        return _wrap(text, "  ")
    where = (
        f"passed as {p.flag} {_y(p.best)} in the command"
        if p.flag
        else "NOT PASSED: no recorded command line passes it, so the script's own default applies"
    )
    return _wrap(f"{p.name} = {_y(p.best)}: {p.reason}; {where}; {recorded}.", "  ")


def render_campaign(
    derived: DerivedCampaign,
    *,
    name: str | None = None,
    trials: int = 20,
    invocation: str | None = None,
    tracking_uri: str | None = None,
) -> str:
    """The campaign YAML, every decision explained in a comment.

    ``tracking_uri``: what to write as the lineage store (and the warm-start source's);
    default the store the runs were read from (a URI holding a password is written as
    ``${MLFLOW_TRACKING_URI}`` instead: a campaign file must not hold a secret).
    """
    from lineage.masking import mask_uri

    d = derived
    uri = tracking_uri or d.tracking_uri
    if mask_uri(uri) != uri:
        uri = "${MLFLOW_TRACKING_URI}"
    lines: list[str] = []
    for text in _header(d, invocation):
        lines += _wrap(text)
    lines += ["", f"name: {_y(name or default_name(d.experiment))}"]
    lines += _command_lines(d)
    if d.workdir:
        lines += ["# Where the runs ran (lineage.cwd).", f"workdir: {_y(d.workdir)}"]
    lines += [f"target: {{metric: {_y(d.target)}, goal: {d.goal}}}", "parameters:"]
    for p in d.tuned:
        lines += _param_lines(p)
    for p in d.fixed:
        lines += _param_lines(p)
    lines += _warm_start_lines(d, trials, uri)
    lines += ["lineage:", f"  tracking_uri: {_y(uri)}"]
    if d.method != "auto":
        lines += ["analysis:", f"  method: {d.method}"]
    return "\n".join(lines) + "\n"


def _header(d: DerivedCampaign, invocation: str | None) -> list[str]:
    """The opening comment's paragraphs: where the campaign comes from and how each
    parameter was decided."""
    head = [
        f"Derived from history by: {invocation}" if invocation else "Derived from history.",
        f"Source: {d.n_runs} finished runs of experiment {d.experiment!r} with "
        f"{d.target}" + (f", where {d.where}" if d.where else "") + ".",
        f"Best run: {d.best_run_id} ({d.best_run_name}), {d.target} = {d.best_value:.6g}.",
        f"Analysis: {d.analysis}.",
    ]
    if d.ranked:
        head.append(
            "Tuned: every parameter not fixed (below), over its recorded range or choices, "
            "widened beyond a bound where most of the 5 best runs sit at it. Where the runs point to a region, it is written beside the parameter "
            "as a focus, commented out: for a parameter the analysis finds significant (the "
            "lower end of the 95% interval of its importance is above 0), the span the best "
            "quarter of the runs (k of them, at least 3) used, widened on each side by "
            f"{MARGIN:g}/sqrt(k) of the recorded span and kept within it (on the log scale "
            "where the values spread over decades), or the choices they used; for one found "
            "negligible on too few runs to fix it, the best run's value. Set, a focus makes "
            "four trials in five (after the campaign's first 10) sample it and one in five "
            "the whole range, and it widens to the range's bound once the campaign's best "
            "trial lies beyond it. It is not set: the warm start below already steers the "
            "campaign by these runs once its own trials earn them trust, and on "
            "benchmarks/bench_outcome.py's tasks a focus on top of it bought nothing overall "
            "and, where the earlier optimum had moved, left more seeds short of cold TPE's "
            "result. Set it where the "
            "earlier optimum is known to hold (the same data, model and code). Fixed, at the "
            "best run's value in the command: only the parameters the analysis is confident "
            f"do not matter (the upper end of their interval is below {FIX_BELOW:g}, over all "
            "the runs and over their best half, where what decides the last percent shows), "
            f"on at least {FIX_RUNS} runs."
        )
    else:
        head.append("Tuned: every varying parameter, over its recorded range or choices.")
    if d.left_out:
        listed = "; ".join(f"{k} ({v})" for k, v in d.left_out.items())
        head.append(f"Left out (not hyperparameters of this campaign): {listed}.")
    return head


def _command_lines(d: DerivedCampaign) -> list[str]:
    """``command:``, with where it comes from, or a placeholder saying what to write."""
    lines: list[str] = []
    if d.command is None:
        lines += _wrap(
            f"PLACEHOLDER: {d.command_source}; replace it with the command that trains one "
            "run, passing each parameter as a {name} placeholder."
        )
        lines.append(f"command: [{_y(PLACEHOLDER_PROGRAM)}]")
    else:
        lines += _wrap(f"From {d.command_source}.")
        lines.append(f"command: [{', '.join(json.dumps(a) for a in d.command)}]")
        missing = [p.name for p in d.tuned if p.flag is None]
        if missing:
            lines += _wrap(
                f"NOT PASSED: the recorded command line has no flag for {', '.join(missing)}; "
                "add one with a {name} placeholder, or set reads_tuner_params: true if the "
                "script reads TUNER_PARAMS (tuner validate warns until then)."
            )
    return lines


def _warm_start_lines(d: DerivedCampaign, trials: int, uri: str) -> list[str]:
    """``budget:`` and ``warm_start:``: the earlier runs imported, the best re-run first."""
    lines: list[str] = []
    source: dict[str, Any] = {"experiment": d.experiment}
    if d.where:
        source["where"] = d.where
    source["tracking_uri"] = uri
    lines += [
        f"budget: {{trials: {trials}}}",
        "# Earlier runs enter the study as finished trials before the first new one (those",
        "# outside the tuned ranges are skipped, whatever they set the fixed parameters to:",
        "# those do not matter); they do not count against budget.trials.",
        "warm_start:",
        "  from:",
        f"    - {_flow(source)}",
    ]
    enqueue = enqueue_count(trials)
    if enqueue:
        fixed = " (with the fixed parameters at the best run's value)" if d.fixed else ""
        lines += _wrap(
            f"Not re-run first: the {enqueue} best earlier configurations{fixed}. Re-run as the "
            "first trials they take the place of the sampler's first survey of the whole "
            "space and center it on the earlier optimum, which cost trials and left seeds "
            "short wherever that optimum had moved (docs/benchmarks.md, warm start). "
            "Uncomment to re-run them first, as new trials counted in budget.trials, when "
            "the earlier optimum is likely to hold (the same data, model and code).",
            "  ",
        )
        lines.append(f"  # enqueue_best: {enqueue}")
    return lines
