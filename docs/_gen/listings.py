"""Generated listings: the environment variables the code reads, the install extras, and the
named fault points (`lineage.faults.POINTS`).

Each is built from the source of truth at docs build time and refuses to build when the
prose here and the code disagree:

- the variables: every ``LINEAGE_*`` and ``TUNER_*`` name spelled in ``lineage/`` or
  ``tuner/`` (found by reading the modules' string constants, not by importing them) must
  have a line below, and every line below must name a variable the code still spells;
  the rules a ``LINEAGE_*`` value must meet come from ``lineage.environment.rules()``.
- the extras: every extra of ``pyproject.toml`` must have a line below, and no line may
  describe an extra the project no longer has; the packages come from ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

__all__ = ["environment_reference", "extras_reference", "fault_points", "variables_in_code"]

_ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"(LINEAGE|TUNER)(_[A-Z0-9]+)+")

#: Who sets each variable ("you" or "the tuner"), its default, and what it does.
_VARIABLES: dict[str, tuple[str, str, str]] = {
    "LINEAGE_DEBUG": (
        "you",
        "unset",
        "Any value: an unexpected error in a `lineage` or `tuner` command raises with its Python traceback instead of one line.",
    ),
    "LINEAGE_CACHE_DIR": (
        "you",
        "`$XDG_CACHE_HOME/lineage`, else `~/.cache/lineage`",
        "Where `lineage` commands keep their cache of a SQLite store's run table (rebuilt whenever the database changes).",
    ),
    "LINEAGE_NO_CACHE": (
        "you",
        "unset",
        "Any value: `lineage` commands keep no run-table cache.",
    ),
    "LINEAGE_FAULT": (
        "the fault tests",
        "unset",
        "Test-only: `POINT:KIND[:MARKER]` kills the process (`kill`) or fails the call (`raise`) at one named fault point ([design](../design.md#named-fault-points)); read once at import, no cost when unset.",
    ),
    "LINEAGE_SPOOL_DIR": (
        "the tuner (its campaign folder), or you",
        "`$XDG_CACHE_HOME/lineage/spool`, else `~/.cache/lineage/spool`",
        "Where recording keeps its journals and the spool of records waiting for an unreachable tracking server.",
    ),
    "LINEAGE_FLUSH_INTERVAL": (
        "you",
        "0.5",
        "Seconds between the writer thread's flushes of a run's records to the store.",
    ),
    "LINEAGE_FLUSH_TIMEOUT": (
        "you",
        "60",
        "Seconds `Run.flush` and `Run.end` wait for the store before the records go to the spool.",
    ),
    "LINEAGE_HTTP_TIMEOUT": ("you", "60", "Read timeout of one request to a tracking server."),
    "LINEAGE_HTTP_IN_FLIGHT": (
        "you",
        "4",
        "Requests sent to a tracking server at once by one recording process.",
    ),
    "LINEAGE_SPOOL_WAIT": (
        "you",
        "0 in a training script, 30 in `tuner run`",
        "Seconds a closing process waits for the server to take its spooled records.",
    ),
    "LINEAGE_SPOOL_CREATE_WAIT": (
        "you",
        "600",
        "Seconds creating a run waits for a tracking server that is not reachable.",
    ),
    "LINEAGE_SQL_WRITER": (
        "you",
        "true",
        "Whether SQL stores are written straight into their tables (false: through MLflow's client).",
    ),
    "LINEAGE_HTTP_WRITER": (
        "you",
        "true",
        "Whether a tracking server is written through its REST API in batches (false: through MLflow's client).",
    ),
    "LINEAGE_END_ATTACHED_RUN": (
        "you",
        "false",
        "Whether a script attached to an existing run by `MLFLOW_RUN_ID` ends that run itself (the tuner ends its trials' runs).",
    ),
    "TUNER_PARAMS": ("the tuner", "", "The trial's parameters as one JSON object."),
    "TUNER_TRIAL_NUMBER": ("the tuner", "", "The trial's number in its Optuna study."),
    "TUNER_ATTEMPT": (
        "the tuner",
        "",
        "Which attempt of the trial this process is (1 for the first, higher for a retry or a continuation).",
    ),
    "TUNER_CHANNEL": (
        "the tuner",
        "",
        "The folder of the file through which `tuner.trial.report` sends reports to the controller.",
    ),
    "TUNER_CONTROL": (
        "the tuner",
        "",
        "The folder where the controller leaves its stop request for the trial.",
    ),
    "TUNER_PAUSE_STEPS": (
        "the tuner (ASHA with `mode: promote`)",
        "",
        "The steps (comma-separated) at which the scheduler may pause the trial: there `tuner.trial.checkpointed` and the framework helpers' checkpoint saves wait for the controller's verdict.",
    ),
    "TUNER_PAUSE_EVERY": (
        "the tuner (PBT with `synch: true`)",
        "",
        "N: every positive multiple of N is a step at which the scheduler may pause the trial (PBT's `interval`), waited at as those of `TUNER_PAUSE_STEPS` are.",
    ),
    "TUNER_PAUSE_WAIT": (
        "the tuner (from `trial.grace_period`)",
        "10",
        "The longest, in seconds, a trial waits at a pause step for the controller's verdict.",
    ),
    "TUNER_VERDICT": (
        "the tuner (local trials)",
        "",
        "The file in which the controller writes the highest step the trial may go on past.",
    ),
    "TUNER_CHECKPOINT_DIR": (
        "the tuner",
        "",
        "The trial's checkpoint folder, kept for its whole life across attempts.",
    ),
    "TUNER_CHECKPOINT_KEEP": (
        "the tuner (from `checkpoint.keep`)",
        "2",
        "How many committed checkpoints a trial keeps.",
    ),
    "TUNER_CHECKPOINT_EVERY": (
        "the tuner (from `checkpoint.every`)",
        "1",
        "How often, in epochs, a framework callback saves a checkpoint.",
    ),
    "TUNER_CHECKPOINT_STORE": (
        "the tuner (from `checkpoint.store`)",
        "`folder`",
        "`mlflow`: committed checkpoints are also uploaded to the trial run's artifacts.",
    ),
    "TUNER_RESUME_FROM": ("the tuner", "", "The checkpoint folder this attempt continues from."),
    "TUNER_RESUME_STEP": ("the tuner", "", "The step that checkpoint holds."),
    "TUNER_RESUME_CHANGED": (
        "the tuner",
        "",
        "A JSON list of the hyperparameters whose values differ from the checkpoint's (population-based training's explore step).",
    ),
    "TUNER_HEARTBEAT_INTERVAL": (
        "you",
        "`heartbeat.interval`",
        "Seconds between a controller's heartbeats: a whole number >= 1; wins over the config, loses to `--heartbeat`.",
    ),
    "TUNER_HEARTBEAT_GRACE": (
        "you",
        "`heartbeat.grace`",
        "Seconds without a heartbeat after which another worker takes a trial over: a whole number > the interval; wins over the config, loses to `--stale-after`.",
    ),
    "TUNER_DB_OUTAGE_TIMEOUT": (
        "you",
        "600",
        "Seconds the controller keeps retrying an unreachable study database before it stops.",
    ),
}

#: What each install extra is for.
_EXTRAS: dict[str, str] = {
    "mindspore": "Train and record with MindSpore 2.10 (its callbacks, the quickstart, the examples).",
    "pytorch": "`lineage.pytorch.watch`: record a plain PyTorch training loop.",
    "lightning": "`lineage.lightning.LineageCallback` for PyTorch Lightning.",
    "transformers": "`lineage.transformers.LineageCallback` for the Hugging Face Trainer.",
    "gp": "The Gaussian-process importance model (`lineage importance --method gp`, and `auto` from enough runs).",
    "ray": "Run trials on a Ray cluster (`executor: ray`).",
    "postgres": "PostgreSQL drivers for a shared Optuna study and an MLflow store on PostgreSQL.",
    "parquet": "`lineage export --format parquet`.",
    "auth": "The MLflow tracking server's login (`mlflow server --app-name basic-auth`).",
    "docs": "Build this documentation site.",
    "dashboard": "`optuna-dashboard` on a campaign's study.",
    "mindinsight": "A C implementation of CRC-32C for `lineage import mindinsight` (pure Python without it).",
    "dev": "The test suite and the checks `.ci/run` runs (pytest, ruff, mypy, import-linter, mkdocs).",
}


def variables_in_code() -> dict[str, list[str]]:
    """Each ``LINEAGE_*``/``TUNER_*`` name spelled as a string constant in ``lineage/`` or
    ``tuner/``, with the modules that spell it."""
    found: dict[str, set[str]] = {}
    for package in ("lineage", "tuner"):
        for path in sorted((_ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(_ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and _NAME.fullmatch(node.value)
                ):
                    found.setdefault(node.value, set()).add(module)
    return {name: sorted(modules) for name, modules in sorted(found.items())}


def _check(kind: str, in_code: set[str], described: set[str]) -> None:
    missing, stale = sorted(in_code - described), sorted(described - in_code)
    if missing or stale:
        raise SystemExit(
            f"docs/_gen/listings.py: the {kind} and their descriptions disagree: "
            f"not described: {missing or 'none'}; described but gone: {stale or 'none'}"
        )


def environment_reference() -> str:
    from lineage.environment import rules

    in_code = variables_in_code()
    _check("environment variables", set(in_code), set(_VARIABLES))
    checked = rules()
    lines = [
        "| variable | set by | default | what it does | checked |",
        "|---|---|---|---|---|",
    ]
    for name in in_code:
        who, default, what = _VARIABLES[name]
        rule = f"must be {checked[name]}" if name in checked else ""
        lines.append(f"| `{name}` | {who} | {default} | {what} | {rule} |")
    return "\n".join(lines)


def extras_reference() -> str:
    project = tomllib.loads((_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    _check("install extras", set(extras), set(_EXTRAS))
    lines = ["| extra | for | installs |", "|---|---|---|"]
    for name, requirements in extras.items():
        packages = ", ".join(f"`{req}`" for req in requirements)
        lines.append(f"| `{name}` | {_EXTRAS[name]} | {packages} |")
    return "\n".join(lines)


def fault_points() -> str:
    """The named fault points of ``lineage.faults`` and what each guarantees."""
    from lineage.faults import POINTS

    lines = ["| point | what holds after a kill or a failed call there |", "|---|---|"]
    lines += [f"| `{name}` | {what} |" for name, what in POINTS.items()]
    return "\n".join(lines)
