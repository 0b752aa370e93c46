"""The rule: whatever exception ends a campaign, none of its MLflow runs is left
RUNNING: not the parent, not a trial's, not a reserved one.

The exception is injected at each layer the controller goes through (setting up, launching,
judging, telling Optuna, recording a trial's end, the closing summary) into a controller with
in-process trials and the real recorder on a real MLflow SQLite store.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.tuner.conftest import mlflow_runs


class Injected(RuntimeError):
    pass


def _fail_on(call: int, real: Any) -> Any:
    """``real``, raising `Injected` on its ``call``-th call."""
    seen = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seen["n"] += 1
        if seen["n"] == call:
            raise Injected(f"injected into {getattr(real, '__name__', real)} call {call}")
        return real(*args, **kwargs)

    return wrapper


def _echo_loss(spec: Any) -> Any:
    """An in-process trial that reports its ``x`` as its loss at step 0."""
    return [(0, {"loss": spec.params["x"]})], 0


def _controller(config: Any, slots: int) -> Any:
    """A controller over ``slots`` in-process trials, polling without pause."""
    from tuner.campaign import Controller
    from tuner.executors._inprocess import InProcessExecutor

    return Controller(
        config,
        executor=InProcessExecutor(_echo_loss, slots=slots),
        importance=False,
        handle_signals=False,
        poll_interval=0.0,
    )


def _patch(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    import tuner.campaign._closing as closing
    import tuner.campaign._launch as launch
    import tuner.campaign._outcome as outcome
    import tuner.campaign._run_end as run_end
    from tuner.executors._inprocess import InProcessExecutor

    if where == "summary":
        monkeypatch.setattr(closing, "summary_tags", _fail_on(1, closing.summary_tags))
    elif where == "tell":  # the trial has left `running`, its run is not finished yet
        monkeypatch.setattr(outcome, "tell", _fail_on(3, outcome.tell))
    elif where == "judge":
        monkeypatch.setattr(outcome, "judge", _fail_on(2, outcome.judge))
    elif where == "trial_end_tags":
        monkeypatch.setattr(run_end, "trial_end_tags", _fail_on(3, run_end.trial_end_tags))
    elif where == "submit":  # a run was reserved for the trial, the process never started
        monkeypatch.setattr(InProcessExecutor, "submit", _fail_on(4, InProcessExecutor.submit))
    elif where == "launch_record":  # the process started, its launch was not recorded
        monkeypatch.setattr(launch, "secret_values", _fail_on(3, launch.secret_values))
    elif where == "storage_dead":  # judging fails, then every read of the study fails too
        import tuner.campaign._ahead as ahead
        import tuner.campaign._controller as controller

        def dead(*_args: Any, **_kwargs: Any) -> Any:
            raise RuntimeError("the study's storage is gone")

        monkeypatch.setattr(outcome, "judge", _fail_on(2, outcome.judge))
        monkeypatch.setattr(controller, "best_of", dead)
        monkeypatch.setattr(ahead.AskAhead, "drop", dead)
    elif where == "recover":
        from tuner.coordination import Standalone

        monkeypatch.setattr(Standalone, "recover", _fail_on(1, Standalone.recover))
    else:  # pragma: no cover
        raise AssertionError(where)


@pytest.mark.parametrize(
    "where",
    [
        "summary",
        "tell",
        "judge",
        "storage_dead",
        "trial_end_tags",
        "submit",
        "launch_record",
        "recover",
    ],
)
def test_no_mlflow_run_is_left_running_whatever_ends_the_campaign(
    where: str, campaign: Any, sqlite_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    config = campaign(budget={"trials": 6}, resources={"parallel": 2})
    _patch(monkeypatch, where)
    controller = _controller(config, slots=2)
    with pytest.raises(Injected):
        controller.run()

    client = MlflowClient(tracking_uri=sqlite_uri)
    runs = mlflow_runs(sqlite_uri)
    exp_id = runs[0].info.experiment_id
    deleted = client.search_runs([exp_id], run_view_type=2, max_results=1000)  # DELETED_ONLY
    everything = runs + list(deleted)
    left = [
        (r.info.run_name, r.data.tags.get("lineage.run_type"), r.info.lifecycle_stage)
        for r in everything
        if r.info.status == "RUNNING"
    ]
    assert not left, left
    (parent,) = [r for r in runs if r.data.tags.get("lineage.run_type") == "campaign"]
    assert parent.info.status == "FAILED"
    assert parent.data.tags["tuner.error"].startswith("Injected: injected into")
    # Reserved runs nobody used are deleted, never left active.
    assert not [r for r in runs if r.data.tags.get("lineage.run_type") == "reserved"]
    trial_runs = [r for r in runs if r.data.tags.get("lineage.run_type") == "trial"]
    for run in trial_runs:
        assert run.info.end_time and run.info.end_time >= run.info.start_time
        if run.info.status == "KILLED":
            assert run.data.tags["tuner.state"] == "FAIL"
            assert run.data.tags["tuner.fail_reason"]
    # The campaign directory says the controller did not exit cleanly (resume reconciles).
    assert controller.campaign_dir.previous()["clean_exit"] is False
    assert not controller.campaign_dir.controller_alive()


def test_a_trial_told_before_its_run_was_ended_is_ended_as_it_finished_on_resume(
    campaign: Any, sqlite_uri: str, run_campaign: Any
) -> None:
    """A controller that told the study a trial's result and stopped (a full disk, kill -9)
    before the run's own end was written: resuming ends that run as its trial finished
    (FINISHED, ``tuner.state=COMPLETE``, its value), not as interrupted."""
    from mlflow.tracking import MlflowClient

    from tuner.campaign import Controller
    from tuner.executors._inprocess import InProcessExecutor

    def executor() -> InProcessExecutor:
        return InProcessExecutor(_echo_loss, slots=1)

    config = campaign(budget={"trials": 3}, resources={"parallel": 1})
    first = Controller(config, executor=executor(), importance=False, handle_signals=False)
    first.run()
    client = MlflowClient(tracking_uri=sqlite_uri)
    trial_runs = [
        r for r in mlflow_runs(sqlite_uri) if r.data.tags.get("lineage.run_type") == "trial"
    ]
    assert len(trial_runs) == 3
    victim = trial_runs[0]
    value = victim.data.tags["tuner.value.loss"]
    # As the dead controller left it: the run open, without its closing tags.
    client.update_run(victim.info.run_id, status="RUNNING")
    client.delete_tag(victim.info.run_id, "tuner.state")
    client.delete_tag(victim.info.run_id, "tuner.value.loss")
    first.campaign_dir.acquire()
    first.campaign_dir.release(clean=False)

    run_campaign(config, executor=executor())
    run = client.get_run(victim.info.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["tuner.state"] == "COMPLETE"
    assert run.data.tags["tuner.value.loss"] == value
    others = [r for r in mlflow_runs(sqlite_uri) if r.data.tags.get("lineage.run_type") == "trial"]
    assert sorted(r.info.status for r in others) == ["FINISHED"] * 3


def test_a_trial_re_queued_by_another_controller_while_it_ran_is_not_told(
    campaign: Any, sqlite_uri: str
) -> None:
    """Another controller re-queued a trial of this one (its heartbeats had stopped for the
    grace period: this controller was cut off from the database): when the attempt ends its
    result is not told (Optuna refuses a finished trial; before, the controller crashed with
    ``ValueError: Cannot tell a FAIL trial``); the copy runs and counts, the attempt's run is
    FAILED with the reason, and the budget stays exact."""
    import optuna

    from tuner.campaign import Controller
    from tuner.coordination import supersede
    from tuner.executors._inprocess import InProcessExecutor

    config = campaign(budget={"trials": 3}, resources={"parallel": 1})
    storage = optuna.storages.RDBStorage(config.optuna_storage_url())

    def supersede_one() -> None:  # what another worker's requeue_stale does meanwhile
        study = optuna.load_study(study_name=config.study_name, storage=storage)
        frozen = study.trials[1]
        reason = "no heartbeat for more than 30s (injected)"
        supersede(study, 1, frozen._trial_id, reason, frozen.params, frozen)

    class Superseding(InProcessExecutor):
        def submit(self, spec: Any) -> Any:
            handle = super().submit(spec)
            if spec.number == 1:  # re-queued by the other while its process runs
                ended = handle.poll

                def poll() -> Any:
                    supersede_one()
                    handle.poll = ended
                    return ended()

                handle.poll = poll
            return handle

    controller = Controller(
        config,
        executor=Superseding(_echo_loss, slots=1),
        storage=storage,
        importance=False,
        handle_signals=False,
    )
    controller.run()
    trials = optuna.load_study(study_name=config.study_name, storage=storage).trials
    stale = [t for t in trials if "tuner:stale" in t.system_attrs]
    assert [t.number for t in stale] == [1] and stale[0].state.name == "FAIL"
    counted = [t for t in trials if t not in stale]
    assert len(counted) == 3 and {t.state.name for t in counted} == {"COMPLETE"}
    assert [t.params for t in counted if t.user_attrs.get("tuner.rerun_of") == 1] == [
        stale[0].params
    ]
    runs = {r.data.tags.get("tuner.trial_number"): r for r in mlflow_runs(sqlite_uri)}
    run = runs["1"]
    assert run.info.status == "FAILED"
    assert run.data.tags["tuner.fail_reason"].startswith("superseded while it ran: no heartbeat")
    assert not [r for r in runs.values() if r.info.status == "RUNNING"]


def test_a_process_started_for_a_trial_whose_launch_fails_is_stopped_at_once(
    campaign: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's process started but recording its launch failed: the controller stops
    that process before anything else (it will not follow it), not at the executor's
    shutdown, and the trial goes back to WAITING."""
    import optuna

    import tuner.campaign._launch as launch
    from tuner.executors._inprocess import InProcessExecutor, _Handle

    events: list[str] = []
    monkeypatch.setattr(launch, "secret_values", _fail_on(1, launch.secret_values))
    monkeypatch.setattr(_Handle, "terminate", lambda self: events.append("terminate"))
    monkeypatch.setattr(InProcessExecutor, "shutdown", lambda self: events.append("shutdown"))
    config = campaign(budget={"trials": 2}, resources={"parallel": 1})
    controller = _controller(config, slots=1)
    with pytest.raises(Injected):
        controller.run()
    assert events[:2] == ["terminate", "shutdown"]
    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    assert [t.state.name for t in study.trials] == ["WAITING"]


def test_one_ended_trial_failing_its_bookkeeping_leaves_the_others_settled(
    campaign: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two attempts end in the same poll and telling the first one's result fails: the
    second is still told and counted (COMPLETE), not re-queued to train again."""
    import optuna

    import tuner.campaign._outcome as outcome

    monkeypatch.setattr(outcome, "tell", _fail_on(1, outcome.tell))
    config = campaign(budget={"trials": 4}, resources={"parallel": 2})
    controller = _controller(config, slots=2)
    with pytest.raises(Injected):
        controller.run()
    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    states = {t.number: t.state.name for t in study.trials}
    assert states[1] == "COMPLETE", states
    assert not [t for t in study.trials if t.user_attrs.get("tuner.rerun_of") == 1]
