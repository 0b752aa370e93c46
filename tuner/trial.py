"""The in-trial API: what a training script calls while the tuner runs it.

Importing this module costs nothing (no mlflow, no optuna). Outside a campaign every call is
harmless: `params` returns ``{}`` (or the parameters set in the environment), `report` does
nothing, `should_prune` is False, so the same script runs by hand.

    from tuner import trial
    p = trial.params()
    for epoch in range(p.get("epochs", 10)):
        loss = train_one_epoch(lr=p["lr"])
        trial.report(epoch, loss=loss)      # per epoch: pruning value + lineage metric
        if trial.should_prune():
            break                            # the controller marks the trial PRUNED

A training that should survive an interruption checkpoints as it goes and continues from the
checkpoint the tuner hands it (a retry, `tuner resume`, a re-queued trial):

    start = 0
    resume = trial.resume_from()             # (folder, step) or None
    if resume is not None:
        load(resume[0] / "model.ckpt")
        start = resume[1] + 1
    for epoch in range(start, epochs):
        ...
        save(trial.checkpoint_dir(epoch) / "model.ckpt")
        trial.checkpointed(epoch)            # the folder now holds epoch; older ones pruned
        if trial.should_prune():
            break                            # pruned, or paused at this epoch (ASHA)

A trial sharing its device with others (``resources.per_trial: auto``) may say how much device
memory it has held, as its framework counts it; the packing uses the figure where the device's
tool cannot tell which process holds what (a container that hides other processes' ids):

    trial.report_memory(torch.cuda.max_memory_reserved())        # bytes
    trial.report_memory(mindspore.runtime.max_memory_reserved())

Reports are JSON lines appended to a channel file, and the prune flag is a file the controller
creates; both are named in the environment (the protocol is in `tuner._protocol`).
"""

from __future__ import annotations

import os
import time

from lineage import pausing
from tuner import _protocol as protocol

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing would cost the script
if TYPE_CHECKING:
    from pathlib import Path
    from typing import IO, Any, NoReturn

__all__ = [
    "checkpoint_dir",
    "checkpointed",
    "is_tuning",
    "number",
    "params",
    "report",
    "report_memory",
    "resume_from",
    "should_prune",
]

_channel: IO[str] | None = None
_channel_path: str | None = None
_params: dict[str, Any] | None = None


def is_tuning() -> bool:
    """True when this process was started by the tuner."""
    return protocol.CHANNEL in os.environ


def number() -> int | None:
    """The Optuna trial number of this process, or None outside a campaign."""
    value = os.environ.get(protocol.TRIAL_NUMBER)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        _refuse(f"{protocol.TRIAL_NUMBER} must be a whole number, got {value[:80]!r}")


def params() -> dict[str, Any]:
    """The trial's hyperparameters (the JSON object the tuner passes; ``{}`` when unset).

    A ``TUNER_PARAMS`` that is not a JSON object ends the process as a bad command-line flag
    does: one line on stderr naming the variable, exit status 2."""
    global _params
    if _params is None:
        try:
            _params = protocol.decode_params(os.environ.get(protocol.PARAMS, ""))
        except ValueError as exc:
            _refuse(str(exc))
    return dict(_params)


def _refuse(message: str) -> NoReturn:
    # As lineage ends a script whose environment it refuses: a bad command-line flag's one
    # line on stderr and exit status 2, not a traceback from inside the training script.
    import sys

    print(f"tuner: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def report(step: int, **metrics: float) -> None:
    """Report metric values at ``step`` (an epoch or a global step, increasing).

    In a trial launched over several processes (torchrun, msrun) only rank 0 reports; the
    other ranks' calls do nothing (the rank is read from ``RANK``, ``RANK_ID`` or
    ``OMPI_COMM_WORLD_RANK``), nor do those of msrun's scheduler process.

    The controller feeds the target metric to the pruner and records every metric in the
    trial's lineage run; when the script records into that run with ``lineage`` itself, the
    values go through its run instead (each metric and step stored once).

    Cost: one short line appended and flushed, and, when the script records into its trial's
    run with ``lineage``, one flush of that run to the store before the line (so a trial
    killed right after a report loses nothing): a SQLite transaction (milliseconds), or a
    round trip to a tracking server. Report per epoch or per evaluation, not per training step.

    Args:
        step: the epoch or global step the values belong to, an int, increasing from one
            report to the next.
        **metrics: the values, metric names mapped to numbers.

    Raises:
        TypeError: ``step`` is not an int (a bool is refused too); checked only where the
            report is sent (in a campaign, on rank 0).
    """
    path = os.environ.get(protocol.CHANNEL)
    if not path or not protocol.is_rank_zero(os.environ):
        return
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"report(step, ...): step must be an int, got {step!r}")
    _write(
        path, protocol.encode_report(step, metrics, time.time(), recorded=_record(step, metrics))
    )
    # A pause step is waited at only once reported: the controller judges reports.
    pausing.reported(step)


def _write(path: str, line: str) -> None:
    global _channel, _channel_path
    if _channel is None or _channel_path != path:
        _channel = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives with the process
        _channel_path = path
    _channel.write(line)
    _channel.flush()


def report_memory(peak_bytes: float) -> None:
    """Say that this trial's processes have held at most ``peak_bytes`` of device memory so
    far, as its framework counts it (``torch.cuda.max_memory_reserved()``, MindSpore's
    ``mindspore.runtime.max_memory_reserved()``; the ``allocated`` figures leave out what the
    allocator keeps cached, which neighbours cannot use either).

    Under ``resources.per_trial: auto`` the tuner places trials by what the device's tool
    (``nvidia-smi``, ``npu-smi``) says each trial's processes hold; where the tool cannot
    attribute memory to processes (in a container it lists none), this figure stands in. Call
    it after the first steps and again as memory grows (per epoch is enough); the largest
    figure counts. Outside a campaign, and in ranks other than 0, it does nothing.

    Args:
        peak_bytes: the peak device memory held so far, in bytes (an int or a float; a
            negative figure counts as 0).

    Raises:
        TypeError: ``peak_bytes`` is not a number (a bool is refused too); checked only where
            the figure is sent (in a campaign, on rank 0).
    """
    path = os.environ.get(protocol.CHANNEL)
    if not path or not protocol.is_rank_zero(os.environ):
        return
    if isinstance(peak_bytes, bool) or not isinstance(peak_bytes, int | float):
        raise TypeError(f"report_memory(peak_bytes): must be a number, got {peak_bytes!r}")
    _write(path, protocol.encode_memory(max(0.0, float(peak_bytes)) / 2**20, time.time()))


def _record(step: int, metrics: dict[str, float]) -> bool:
    """Store the reported values through the script's own lineage run when it records into
    the trial's run (a framework callback that also logs them, e.g. ``val_accuracy`` per
    epoch): that run writes each (metric, step) once, and the controller then writes none."""
    import sys

    resumed = os.environ.get(protocol.RESUME_STEP)
    if resumed and resumed.lstrip("-").isdigit() and step <= int(resumed):
        return False  # the run holds the earlier attempt's reports up to its checkpoint
    lineage = sys.modules.get("lineage")  # never imported: no lineage run is recording
    if lineage is None:
        return False
    run = lineage.active_run()
    if run is None or run.run_id != os.environ.get(protocol.RUN_ID):
        return False
    try:
        run.log_reported(step, metrics)
        # In the store before the controller hears of it: a process killed after the report
        # line must not leave a point that neither writer stored. A store slower than this
        # (an outage the run spools through) leaves the point to the controller as well.
        run.flush(timeout=_RECORDED_FLUSH_S)
    except Exception:  # an ended run, an invalid name, a slow store: the controller records them
        return False
    return True


#: How long `report` waits for the script's own run to store a reported point.
_RECORDED_FLUSH_S = 2.0


def should_prune() -> bool:
    """True once the controller decided to stop this trial (pruned, or the campaign stops).

    The script should then return promptly; a SIGTERM follows, then SIGKILL after
    ``trial.grace_period``.
    """
    return pausing.stopped()


def checkpoint_dir(step: int | None = None) -> Path:
    """The trial's checkpoint folder (kept across its attempts), or with ``step`` the folder
    to write that step's checkpoint into (created). Outside a campaign: ``./checkpoints``.

    Args:
        step: the step (epoch) to be saved; its folder is named by the step, zero-padded,
            and a manifest left there by an earlier save of the same step is removed (the
            step is uncommitted until `checkpointed`). None: the trial's folder itself.

    Returns:
        The folder, created if needed.

    Raises:
        OSError: the folder could not be created.
    """
    from pathlib import Path

    from lineage import checkpoints

    root = Path(os.environ.get(protocol.CHECKPOINT_DIR) or "checkpoints")
    if step is None:
        root.mkdir(parents=True, exist_ok=True)
        return root
    return checkpoints.step_dir(root, step)


def checkpointed(step: int) -> None:
    """Say that ``checkpoint_dir(step)`` now holds a complete checkpoint of ``step``: it is
    committed (an interrupted write is never resumed from) and older ones are pruned to the
    campaign's ``checkpoint.keep``. In a multi-process trial only rank 0's call counts.

    Where the campaign's scheduler may pause the trial at ``step`` (ASHA's rungs with
    ``mode: promote``, synchronous PBT's boundaries) and the step was reported, the call
    then waits until the controller judged that report: it returns at once when the trial
    goes on, or, when it is paused, with `should_prune` True, so a script that checks
    `should_prune` after this call stops at the step it was paused at instead of computing
    further ones. The wait is bounded (``trial.grace_period``; then the trial goes on and a
    pause stops it later, as without the wait), and happens nowhere else: not under other
    schedulers, not in ranks other than 0, not on Ray with ``trial.preload: false`` (a plain
    task hears no verdict).

    Args:
        step: the step (epoch) whose folder, ``checkpoint_dir(step)``, holds every file of
            the checkpoint.

    Raises:
        OSError: the manifest could not be written (the checkpoint stays uncommitted, so a
            resume ignores it).
    """
    from lineage import checkpoints

    if not protocol.is_rank_zero(os.environ):
        return
    checkpoints.commit(checkpoint_dir(step), step)
    pausing.await_verdict(step)


def resume_from() -> tuple[Path, int] | None:
    """``(folder, step)`` of the checkpoint to continue from, or None for a fresh start. A
    ``TUNER_RESUME_STEP`` that is not a whole number ends the process with one line on stderr
    and exit status 2."""
    from lineage import EnvironmentValueError, checkpoints

    try:
        return checkpoints.resume_point()
    except EnvironmentValueError as exc:
        _refuse(str(exc))
