"""A campaign's status as data: what ``tuner status`` prints and ``--format json`` writes.

The study is read as plain trial records (`tuner.status.read_study`); what each trial is
(counted, superseded, paused, promoted, exploited, its chain and attempt) comes from
`lineage.trials`, the rules the controller and the reports follow too.
"""

from __future__ import annotations

import time
from typing import Any

from lineage import trials as vocab
from lineage.trials import (
    EXPLOIT_ATTR,
    LAUNCH_ATTR,
    PROMOTED_FROM_ATTR,
    RESUMED_STEP_ATTR,
    TrialRecord,
)
from tuner.status._read import NoStudy, StudyData, read_study, timestamp

__all__ = ["collect", "study_exists"]


def collect(config: Any) -> dict[str, Any]:
    """The status of the campaign ``config`` describes, as a dict. A campaign that is not in
    its storage is a `tuner.ConfigError` (one line naming the config)."""
    from lineage.masking import mask_uri
    from tuner._errors import ConfigError
    from tuner.coordination import CampaignDir

    url = config.optuna_storage_url()
    try:
        data = read_study(url, config.study_name)
    except NoStudy:
        raise ConfigError(
            f"{config.source_path or config.name}: no campaign {config.name!r} in "
            f"{mask_uri(url)} yet; start it with `tuner run`"
        ) from None
    chain = vocab.chain_attempts(data.trials)
    counted = vocab.tally(data.trials, scheduled=config.scheduler is not None)
    running = _running(data.trials, chain)
    campaign_dir = CampaignDir(config.base_dir, config.name)
    alive = campaign_dir.controller_alive()
    info = campaign_dir.previous()
    if not alive:
        # Without a controller, a trial whose process is known to have ended has no elapsed
        # time that keeps growing (one that outlived its controller still runs: it has).
        from tuner.executors import known_ended

        for r in running:
            if known_ended(r.pop("launch")):
                r["elapsed_s"] = None
    for r in running:
        r.pop("launch", None)
    return {
        "campaign": config.name,
        "storage": mask_uri(url),
        "controller": {"alive": alive, "pid": info.get("pid") if alive else None},
        "budget": {
            "trials": config.trial_limit,
            "finished": counted.finished,
            "steps": config.budget.steps,
            "device_hours": config.budget.device_hours,
        },
        "trials": counted.shown,
        "finished": counted.counted,
        "warm_start": counted.imported,
        "best": _best_of(data),
        "running": running,
        "continued": _continued(data.trials, chain),
        "stale": bool(running) and not alive,
        "heartbeat_missed": data.heartbeat_missed,
    }


def study_exists(config: Any) -> bool:
    """Whether the campaign's study is in its storage. An error reading the storage (a
    database that cannot be reached, a bug) is raised, never taken for "no campaign"."""
    try:
        read_study(config.optuna_storage_url(), config.study_name)
    except NoStudy:
        return False
    return True


def _running(trials: list[TrialRecord], chain: dict[int, int]) -> list[dict[str, Any]]:
    """The running trials; each keeps its launch record under ``launch`` for the caller."""
    now = time.time()
    out = []
    for t in trials:
        if t.state != "RUNNING" or vocab.is_imported(t):
            continue
        launch = t.attrs.get(LAUNCH_ATTR) or {}
        started = launch.get("started") or timestamp(t.start) or now
        out.append(
            {
                "number": t.number,
                "launched": bool(launch),
                "attempt": chain.get(t.number, 1),
                "device": launch.get("device"),
                # Where to find the trial's process: ``ps -p PID`` on that host, or on the Ray
                # node at ``node_ip`` (``host`` is then the controller's).
                "host": launch.get("host"),
                "pid": launch.get("pid"),
                **({"node_ip": launch["node_ip"]} if launch.get("node_ip") else {}),
                "elapsed_s": round(now - float(started), 1),
                "run_id": launch.get("run_id"),
                "params": dict(t.params),
                "launch": launch,
            }
        )
    return out


def _continued(trials: list[TrialRecord], chain: dict[int, int]) -> list[dict[str, Any]]:
    """The continuations: which trial each continues, from which step, and how it came."""
    promoted = vocab.promoted_numbers(trials)
    return [
        {
            "number": t.number,
            "state": "SUPERSEDED" if vocab.kind(t, promoted) == "SUPERSEDED" else t.state,
            "continues": t.attrs[vocab.PARENT_ATTR],
            "attempt": chain.get(t.number),
            "resumed_step": t.attrs.get(RESUMED_STEP_ATTR),
            **_how(t),
        }
        for t in vocab.continued(trials)
    ]


def _how(t: TrialRecord) -> dict[str, Any]:
    """How a continuation came to be, when a scheduler made it."""
    if t.attrs.get(PROMOTED_FROM_ATTR) is not None:
        return {"promoted_from": t.attrs[PROMOTED_FROM_ATTR]}
    exploit = t.attrs.get(EXPLOIT_ATTR)
    if isinstance(exploit, dict):
        return {"exploit": exploit}
    return {}


def _best_of(data: StudyData) -> dict[str, Any] | None:
    """The best trial (``number``, ``value``, ``params``), or the Pareto front as
    ``{"trials": [...]}`` for several objectives; None before any."""
    if data.best and len(data.directions) > 1:
        return {
            "trials": [
                {"number": t.number, "values": list(t.values), "params": dict(t.params)}
                for t in data.best
            ]
        }
    if data.best:
        (t,) = data.best
        return {"number": t.number, "value": t.values[0], "params": dict(t.params)}
    return None
