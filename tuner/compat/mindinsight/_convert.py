"""``tuner convert mindinsight``: a mindoptimizer config as an equivalent campaign.

The campaign is written as commented YAML: every mapping that is not one-to-one says, where
it happens, what changed and why.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from tuner.compat.mindinsight._check import MindConfig, MindParam, check_config
from tuner.compat.mindinsight._names import SUMMARY_BASE_DIR_ENV, USER_DEFINED_ENV

__all__ = ["convert_config", "convert_file"]


def _scalar(value: Any) -> str:
    """A YAML scalar that PyYAML (YAML 1.1) and the campaign loader read back unchanged."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        if "e" in text and text.split("e")[1][0] not in "+-":
            text = text.replace("e", "e+")
        return text
    return json.dumps(str(value), ensure_ascii=False)


def _comment(indent: int, text: str) -> list[str]:
    """``text`` as YAML comment lines at ``indent`` spaces, wrapped at 92 columns."""
    import textwrap

    pad = " " * indent + "# "
    return textwrap.wrap(text, width=92, initial_indent=pad, subsequent_indent=pad)


def _list(values: list[Any]) -> str:
    return "[" + ", ".join(_scalar(v) for v in values) + "]"


def _param(p: MindParam) -> list[str]:
    lines: list[str] = []
    if p.source == "system_defined":
        extra = {
            "learning_rate": "SummaryCollector records the optimizer's rate (imported as "
            "optimizer.lr)",
            "batch_size": "SummaryCollector records the dataset's batch size (batch_size)",
            "epoch": "SummaryCollector records the epoch count (imported as epochs)",
        }[p.name]
        lines += _comment(
            2,
            f"system-defined: the script gets it as config.params.{p.name} (HyperConfig), "
            f"TUNER_PARAMS[{p.name!r}] or the {{{p.name}}} placeholder; {extra}.",
        )
    else:
        lines += _comment(
            2, f"user-defined: config.params.{p.name}, and in config.custom_lineage_data."
        )
    lines.append(f"  {p.name}:")
    if p.choice is not None:
        note = " (type is ignored with choice, as in MindInsight)" if p.type else ""
        lines += _comment(
            4,
            f"choice {_list(p.choice)} -> categorical{note}: each value is an option, "
            "unordered; MindInsight's GP treated them as numbers and snapped to the nearest.",
        )
        lines.append("    type: categorical")
        lines.append(f"    choices: {_list(p.choice)}")
        return lines
    assert p.bounds is not None
    low, high = p.bounds
    if p.type == "int":
        lo, hi = math.ceil(low), math.ceil(high) - 1
        lines += _comment(
            4,
            f"bounds [{_scalar(low)}, {_scalar(high)}) type int -> low {lo}, high {hi} "
            "(both inclusive): the integers MindInsight could propose (the open end excluded).",
        )
        if lo == hi:
            lines.append("    # Only one integer fits, so it is a categorical with one choice.")
            lines.append("    type: categorical")
            lines.append(f"    choices: [{lo}]")
            return lines
        lines.append("    type: int")
        lines.append(f"    low: {lo}")
        lines.append(f"    high: {hi}")
        return lines
    lines += _comment(
        4,
        f"bounds [{_scalar(low)}, {_scalar(high)}) -> low/high: a float drawn uniformly "
        "from the range equals high with probability 0, so the open end samples the same.",
    )
    if low > 0 and high / low >= 100:
        lines += _comment(
            4,
            "Spans two or more decades: consider `log: true` (MindInsight sampled "
            "uniformly, which is kept here).",
        )
    lines.append("    type: float")
    lines.append(f"    low: {_scalar(float(low))}")
    lines.append(f"    high: {_scalar(float(high))}")
    return lines


def _target(cfg: MindConfig) -> list[str]:
    if cfg.target_group == "system_defined":
        metric = cfg.target_name
        why = (
            f"group system_defined, name {cfg.target_name} -> the training loss: the last "
            "`loss` point (per step, from the summary or LineageCallback), as MindInsight took "
            "the final loss."
        )
    else:
        metric = f"val_{cfg.target_name}"
        why = (
            f"group metric, name {cfg.target_name} -> val_{cfg.target_name}: evaluation "
            "metrics are recorded with a val_ prefix (SummaryCollector's evaluation lineage "
            "from model.eval, or LineageCallback)."
        )
    goal = f"  goal: {cfg.goal}"
    if not cfg.goal_given:
        goal += "           # not given: mindoptimizer's default"
    return ["target:", *_comment(2, why), f"  metric: {metric}", goal]


def _sampler(cfg: MindConfig) -> list[str]:
    if cfg.tuner == "random":
        return ["sampler:", "  name: random"]
    method = cfg.method or "ucb"
    return [
        "sampler:",
        *_comment(
            2,
            f"tuner gp (acquisition {method}) -> Optuna's GPSampler (needs PyTorch), which "
            "uses log expected improvement: there is no acquisition choice. It samples at "
            "random for its first n_startup_trials (MindInsight: until two runs were "
            "recorded), and it maximizes when goal is maximize (MindInsight's GP steered "
            "toward the worst values then).",
        ),
        "  name: gp",
    ]


def convert_config(
    raw: Any,
    *,
    where: str = "config",
    name: str | None = None,
    trials: int = 10,
    workdir: str = ".",
) -> str:
    """The campaign YAML (with comments) for the mindoptimizer document ``raw``.

    ``where`` names the file in errors; ``workdir`` is the trials' directory as written into
    the campaign (relative to the campaign file). Raises ``ConfigError`` for a config that
    MindInsight would have rejected.
    """
    cfg = check_config(raw, where)
    base = cfg.summary_base_dir
    campaign = name or Path(base.rstrip("/\\")).name or "mindoptimizer"
    user = [p.name for p in cfg.params if p.source == "user_defined"]
    lines = [
        f"# Converted from the MindInsight mindoptimizer config {where}",
        "# by `tuner convert mindinsight`. Check it with `tuner validate`, run it with `tuner run`.",
        "# The training script changes one line:",
        "#   from mindinsight.optimizer import HyperConfig  ->  "
        "from tuner.compat.mindinsight import HyperConfig",
        "# Past SummaryCollector runs go into the same experiment with:",
        f"#   lineage import mindinsight {base} --experiment {campaign}",
        "",
        "# mindoptimizer has no campaign name: summary_base_dir's last part is used (also the",
        "# study and the MLflow experiment).",
        f"name: {_scalar(campaign)}",
        "",
        "# Run as mindoptimizer ran it; split like a shell would, but never run through one.",
        "# It takes no placeholders: the script reads its parameters through HyperConfig.",
        *(
            ["# Braces are doubled: mindoptimizer passed them through as written."]
            if "{" in cfg.command or "}" in cfg.command
            else []
        ),
        f"command: {_scalar(cfg.command.replace('{', '{{').replace('}', '}}'))}",
        "",
        "# mindoptimizer ran the command in the directory it was started from; here the trials",
        "# run in the directory `tuner convert` was run in (relative to this file).",
        f"workdir: {_scalar(workdir)}",
        "",
        "env:",
        "  # summary_base_dir: each trial's HyperConfig.summary_dir is a new directory under it",
        "  # (train_trial<N>_<run id>), like mindoptimizer's train_<uuid> ones; a relative path",
        "  # is relative to workdir. What SummaryCollector writes there is recorded into the",
        "  # trial's MLflow run when the script exits.",
        f"  {SUMMARY_BASE_DIR_ENV}: {_scalar(base)}",
        "  # The parameters with source user_defined (HyperConfig.custom_lineage_data).",
        f"  {USER_DEFINED_ENV}: {_scalar(','.join(user))}",
        "",
        *_target(cfg),
        "",
        "parameters:",
    ]
    for p in cfg.params:
        lines.extend(_param(p))
    lines += [
        "",
        "budget:",
        f"  trials: {trials}            # mindoptimizer --iter {trials}",
        "  # mindoptimizer stopped at the first failed training; here a campaign stops after",
        "  # max_failures (default 5) and the failed trials are recorded with their reason.",
        "",
        *_sampler(cfg),
        "",
        "# The script's metrics arrive when it exits (from its summary): nothing to prune on.",
        "pruner:",
        "  name: none",
        "",
        "resources:",
        "  parallel: 1            # mindoptimizer trained one at a time; raise to run several",
        "",
        "lineage:",
        f"  experiment: {_scalar(campaign)}",
        "",
    ]
    return "\n".join(lines)


def convert_file(
    path: str | os.PathLike[str],
    *,
    output: str | os.PathLike[str] | None = None,
    name: str | None = None,
    trials: int = 10,
) -> str:
    """Read the mindoptimizer config at ``path`` and return the campaign text. ``workdir``
    points from ``output``'s directory to the current one: mindoptimizer ran the command (and
    resolved summary_base_dir) where it was started, which is where one converts."""
    import yaml

    from tuner._errors import ConfigError

    where = str(path)
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file.") from None
    except IsADirectoryError:
        raise ConfigError(f"{where}: is a directory, not a config file.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot be read ({exc}).") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: invalid YAML ({' '.join(str(exc).split())}).") from None
    out_dir = Path(output).resolve().parent if output is not None else Path.cwd()
    here = Path.cwd().resolve()
    workdir = os.path.relpath(here, out_dir)
    if workdir.startswith(".."):
        workdir = str(here)  # an absolute path reads better than a climb out of the tree
    return convert_config(raw, where=where, name=name, trials=trials, workdir=workdir)
