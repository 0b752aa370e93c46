"""The trial protocol: what a trial process receives, and how it reports back.

This module is the only place where the protocol's names are spelled; the trial side
(`tuner.trial`), the controller and every executor use the constants and helpers below.
It imports nothing heavy: a training script pays for it when it imports `tuner.trial`.

A trial process receives, in its environment:

- ``TUNER_PARAMS``: its hyperparameters, a JSON object (also substituted into argv);
- ``MLFLOW_TRACKING_URI``, ``MLFLOW_EXPERIMENT_ID``, ``MLFLOW_RUN_ID``: its lineage run, so
  that a script using plain ``mlflow`` logs into it;
- ``TUNER_CHANNEL``: a file to append reports to, one JSON line each (`encode_report`);
- ``TUNER_CONTROL``: a file whose existence means "stop now" (pruned, or the campaign stops);
- ``TUNER_PAUSE_STEPS``: where a scheduler may pause the trial, the steps (comma-separated)
  at which it judges it (ASHA's rungs, with ``mode: promote``), ``TUNER_PAUSE_EVERY``: N,
  when every positive multiple of N is such a step (synchronous PBT's boundaries), and
  ``TUNER_VERDICT``: a file
  holding the highest step the controller let the trial go on past (`write_verdict`). At
  one of these steps `tuner.trial.checkpointed` and lineage's framework helpers wait, after
  their commit and for at most ``TUNER_PAUSE_WAIT`` seconds (``trial.grace_period``), until
  either file answers, so that a pause stops the process at the step it was judged at
  rather than some steps later (`pause_env`, `attempt_env`; the wait and these names are
  `lineage.pausing`, which framework helpers use without importing the tuner);
- ``TUNER_TRIAL_NUMBER``, ``TUNER_ATTEMPT``: which trial and which attempt it is;
- its devices: ``CUDA_VISIBLE_DEVICES``, or ``ASCEND_RT_VISIBLE_DEVICES`` and ``DEVICE_ID``
  (`device_env`);
- its checkpoint folder ``TUNER_CHECKPOINT_DIR``, how many checkpoints to keep
  ``TUNER_CHECKPOINT_KEEP`` and every how many epochs framework callbacks save one
  ``TUNER_CHECKPOINT_EVERY``, ``TUNER_CHECKPOINT_STORE=mlflow`` when committed checkpoints are
  also uploaded to the trial's MLflow run, and, when it continues earlier work, ``TUNER_RESUME_FROM`` and
  ``TUNER_RESUME_STEP``, plus ``TUNER_RESUME_CHANGED`` (a JSON list) naming the parameters
  whose values differ from those of the trial that wrote the checkpoint (`checkpoint_env`;
  the folder protocol is `lineage.checkpoints`, which framework callbacks use without
  importing the tuner, so the names are spelled there).

A channel line is ``{"step": int, "t": unix seconds, "m": {metric: value}}``, plus
``"rec": true`` when the trial stored those values in its run itself; JSON has no
NaN or Inf, so those values travel as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
A trial's own figure of its peak device memory travels as ``{"mem": MiB, "t": unix
seconds}`` (`encode_memory`); a reader that predates it skips the line as malformed.
"""

from __future__ import annotations

import json
import math

from lineage.checkpoints import (
    CHECKPOINT_DIR,
    EVERY,
    KEEP,
    RESUME_CHANGED,
    RESUME_FROM,
    RESUME_STEP,
)
from lineage.checkpoints import STORE as CHECKPOINT_STORE
from lineage.pausing import (
    CONTROL,
    PAUSE_EVERY,
    PAUSE_STEPS,
    PAUSE_WAIT,
    PAUSE_WAIT_S,
    VERDICT,
    is_pause_step,
    pause_steps,
    pause_wait,
    read_verdict,
)

# Not `typing.TYPE_CHECKING`: a training script importing `tuner.trial` should not pay for
# the typing module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from tuner._report import Report

__all__ = [
    "ATTEMPT",
    "CHANNEL",
    "CHANNEL_FILE",
    "CHECKPOINT_DIR",
    "CHECKPOINT_STORE",
    "CONTROL",
    "CONTROL_FILE",
    "EVERY",
    "EXPERIMENT_ID",
    "FORWARDED_ENV",
    "KEEP",
    "MS_ROLE",
    "MS_WORKER",
    "PARAMS",
    "PAUSE_EVERY",
    "PAUSE_STEPS",
    "PAUSE_WAIT",
    "PAUSE_WAIT_S",
    "PROCESS_FILE",
    "RANK_VARS",
    "RESUME_CHANGED",
    "RESUME_FROM",
    "RESUME_STEP",
    "RUN_ID",
    "TRACKING_URI",
    "TRIAL_NUMBER",
    "VERDICT",
    "VERDICT_FILE",
    "ChannelReader",
    "attempt_env",
    "checkpoint_env",
    "decode_params",
    "device_env",
    "encode_memory",
    "encode_report",
    "is_pause_step",
    "is_rank_zero",
    "parse_memory",
    "parse_report",
    "pause_env",
    "pause_steps",
    "pause_wait",
    "pauses",
    "read_verdict",
    "run_env",
    "write_verdict",
]

PARAMS = "TUNER_PARAMS"
CHANNEL = "TUNER_CHANNEL"
TRIAL_NUMBER = "TUNER_TRIAL_NUMBER"
ATTEMPT = "TUNER_ATTEMPT"
TRACKING_URI = "MLFLOW_TRACKING_URI"
EXPERIMENT_ID = "MLFLOW_EXPERIMENT_ID"
RUN_ID = "MLFLOW_RUN_ID"
CUDA_DEVICES = "CUDA_VISIBLE_DEVICES"
ASCEND_DEVICES = "ASCEND_RT_VISIBLE_DEVICES"
DEVICE_ID = "DEVICE_ID"
#: Python trials flush each line: stdout collectors see output while the trial runs.
UNBUFFERED = "PYTHONUNBUFFERED"

#: Names of the report channel and the stop flag inside an attempt's folder.
#: The rank variables of the launchers a multi-device trial runs under (torchrun, msrun,
#: mpirun), first set wins: a process whose rank is not 0 neither reports nor commits
#: checkpoints, so the trial has one voice (`is_rank_zero`).
RANK_VARS = ("RANK", "RANK_ID", "OMPI_COMM_WORLD_RANK")
#: msrun also runs the script in its scheduler process (``MS_ROLE=MS_SCHED``, with
#: ``RANK_ID=0``) until ``mindspore.communication.init``; only ``MS_WORKER`` processes train.
MS_ROLE, MS_WORKER = "MS_ROLE", "MS_WORKER"

CHANNEL_FILE = "channel.jsonl"
CONTROL_FILE = "stop"
VERDICT_FILE = "verdict"
#: A trial forked from a warm parent records itself there (`tuner.executors._procs.identity`):
#: a fork's ``/proc/PID/environ`` is its parent's, so the channel variable cannot find it.
PROCESS_FILE = "process.json"

#: Driver-side variables a trial needs to reach a shared MLflow server; a remote executor
#: (Ray) does not carry the driver's environment to other nodes, so it passes these along.
FORWARDED_ENV = (
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_TRACKING_SERVER_CERT_PATH",
    "MLFLOW_TRACKING_CLIENT_CERT_PATH",
)


# ----- controller side -------------------------------------------------------------------------


def run_env(
    params: Mapping[str, Any], *, tracking_uri: str, experiment_id: str, run_id: str
) -> dict[str, str]:
    """The variables naming a trial's parameters and its lineage run."""
    return {
        PARAMS: json.dumps(dict(params)),
        TRACKING_URI: tracking_uri,
        EXPERIMENT_ID: experiment_id,
        RUN_ID: run_id,
    }


def attempt_env(
    *, channel: str, control: str, number: int, attempt: int, verdict: str | None = None
) -> dict[str, str]:
    """The variables an executor adds for one attempt: its channel, stop flag and numbers,
    and ``verdict``, the file it writes with `write_verdict` (None: an executor that cannot
    reach the trial's files, whose trial then never waits at a pause step)."""
    env = {
        CHANNEL: channel,
        CONTROL: control,
        TRIAL_NUMBER: str(number),
        ATTEMPT: str(attempt),
    }
    if verdict is not None:
        env[VERDICT] = verdict
    return env


def pause_env(steps: Sequence[int], *, wait: float, every: int | None = None) -> dict[str, str]:
    """The variables naming the steps at which a scheduler may pause the trial (``steps``,
    and every positive multiple of ``every``) and how long it waits there for the verdict,
    in seconds (neither: no variables)."""
    env = {}
    if steps:
        env[PAUSE_STEPS] = ",".join(str(s) for s in sorted(set(steps)))
    if every is not None and every >= 1:
        env[PAUSE_EVERY] = str(every)
    if env:
        env[PAUSE_WAIT] = f"{wait:g}"
    return env


def pauses(env: Mapping[str, str]) -> bool:
    """Whether a trial launched with ``env`` waits for a verdict at some step (it was told
    where its scheduler may pause it); only then does a controller answer it."""
    return PAUSE_STEPS in env or PAUSE_EVERY in env


def write_verdict(path: str, step: int) -> None:
    """Let the trial whose verdict file is ``path`` go on past ``step`` (a rename, so the
    trial never reads half a number). Raises OSError when the file cannot be written."""
    import os

    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(str(step))
    os.replace(tmp, path)


def checkpoint_env(
    folder: str,
    keep: int,
    resume: tuple[str, int] | None,
    *,
    every: int = 1,
    changed: Sequence[str] = (),
) -> dict[str, str]:
    """The variables naming a trial's checkpoint folder, how many checkpoints it keeps and
    every how many epochs a framework callback saves one, and, when ``resume`` is given, the
    checkpoint ``(path, step)`` this attempt continues from and the parameters it ``changed``
    from the values of the trial that wrote it."""
    env = {CHECKPOINT_DIR: folder, KEEP: str(keep), EVERY: str(every)}
    if resume is not None:
        env.update({RESUME_FROM: resume[0], RESUME_STEP: str(resume[1])})
        if changed:
            env[RESUME_CHANGED] = json.dumps(list(changed))
    return env


def device_env(kind: str, devices: Sequence[str]) -> dict[str, str]:
    """The variables that confine a trial to ``devices`` of ``kind`` (cpu | gpu | npu).

    npu: with the visible list restricted, the first device the process sees is logical
    device 0, which is what ``mindspore.set_context(device_id=int(os.environ["DEVICE_ID"]))``
    expects. cpu: no GPU is visible, so a CPU campaign never lands on one by accident.
    """
    ids = ",".join(devices)
    if kind == "gpu":
        return {CUDA_DEVICES: ids}
    if kind == "npu":
        return {ASCEND_DEVICES: ids, DEVICE_ID: "0"}
    return {CUDA_DEVICES: ""}


# ----- the channel -----------------------------------------------------------------------------


def is_rank_zero(environ: Mapping[str, str]) -> bool:
    """Whether a process with ``environ`` speaks for its trial: rank 0 of a multi-process
    launch, or a process no launcher ranked; never msrun's scheduler."""
    if environ.get(MS_ROLE, MS_WORKER) != MS_WORKER:
        return False
    for name in RANK_VARS:
        value = environ.get(name)
        if value not in (None, ""):
            return value.strip() == "0"
    return True


def encode_report(
    step: int, metrics: Mapping[str, float], t: float, *, recorded: bool = False
) -> str:
    """One channel line (with its newline) for ``metrics`` at ``step``, reported at ``t``;
    ``recorded``: the trial stored these values in its run itself (`Report.recorded`)."""
    values: dict[str, float | str] = {}
    for name, value in metrics.items():
        number = float(value)
        values[name] = number if math.isfinite(number) else repr(number)
    obj: dict[str, object] = {"step": step, "t": t, "m": values}
    if recorded:
        obj["rec"] = True
    return json.dumps(obj) + "\n"


def encode_memory(mib: float, t: float) -> str:
    """One channel line (with its newline) saying the trial's processes have held at most
    ``mib`` MiB of device memory so far, as its framework counts it, at ``t``."""
    return json.dumps({"mem": float(mib), "t": t}) + "\n"


def parse_memory(line: bytes | str) -> float | None:
    """The MiB of a memory line (`encode_memory`); None for any other line."""
    try:
        obj = json.loads(line)
        mib = float(obj["mem"])
    except (ValueError, KeyError, TypeError):
        return None
    return mib if math.isfinite(mib) and mib >= 0 else None


def parse_report(line: bytes | str) -> Report | None:
    """The `Report` in one channel line; None for a malformed line (a trial cannot crash
    the controller with what it writes)."""
    from tuner._report import Report

    try:
        obj = json.loads(line)
        step = int(obj["step"])
        metrics = {str(k): float(v) for k, v in obj["m"].items()}
        return Report(
            step=step,
            metrics=metrics,
            source="api",
            timestamp=float(obj.get("t", 0)),
            recorded=obj.get("rec") is True,
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class ChannelReader:
    """Turns the channel's bytes, read in arbitrary chunks, into reports: a line is parsed
    only once its newline has arrived. ``memory``: the largest device memory (MiB) the trial
    reported of itself so far (`encode_memory`), None while it reported none."""

    def __init__(self) -> None:
        self._partial = b""
        self.memory: float | None = None

    def feed(self, data: bytes) -> list[Report]:
        if not data:
            return []
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        reports: list[Report] = []
        for line in lines:
            report = parse_report(line)
            if report is not None:
                reports.append(report)
                continue
            mib = parse_memory(line)
            if mib is not None:
                self.memory = max(self.memory or 0.0, mib)
        return reports


def decode_params(raw: str) -> dict[str, Any]:
    """The parameters in a ``TUNER_PARAMS`` value (``{}`` when empty); ValueError otherwise."""
    try:
        loaded = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise ValueError(f"{PARAMS} must hold a JSON object, got {raw[:80]!r}") from exc
    if not isinstance(loaded, dict):
        raise ValueError(f"{PARAMS} must hold a JSON object, got {raw[:80]!r}")
    return loaded
