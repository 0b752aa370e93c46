"""The framework-neutral core of the training recorders, on a real MLflow SQLite store (no
framework imported)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lineage
from lineage import UsageError, checkpoints, tags
from lineage.diagnose import diagnose_histories
from lineage.store import open_store
from lineage.training import (
    ArtifactFolder,
    ParamLog,
    RecorderOptions,
    WeightStats,
    acquire_run,
    checkpoint_root,
    exit_status,
    metric_key,
    noting_errors,
    weight_stats_wanted,
)


def test_a_param_the_script_logged_differently_is_kept_and_the_clash_tagged_once(
    sqlite_uri: str,
) -> None:
    run = lineage.start_run(experiment="core", tracking_uri=sqlite_uri)
    run.log_params({"lr": 0.1})
    log = ParamLog()
    log.log(run, {"lr": 0.5, "epochs": 3, "skipped": None})
    log.log(run, {"momentum": 0.9, "epochs": 4})
    run.end()
    record = open_store(sqlite_uri).get_run(run.run_id)
    assert record.params["lr"] == "0.1"
    assert record.params["epochs"] == "3"
    assert record.params["momentum"] == "0.9"
    assert "skipped" not in record.params
    assert json.loads(record.tags[tags.CONFLICTS]) == {"lr": "0.5", "epochs": "4"}
    assert tags.read_tag(record.tags, tags.CONFLICTS) == record.tags[tags.CONFLICTS]


def test_a_recorder_writes_into_the_active_run_and_starts_one_only_when_none_is(
    sqlite_uri: str,
) -> None:
    with lineage.start_run(experiment="core", tracking_uri=sqlite_uri) as active:
        assert acquire_run(None, "other") == (active, False)
    given = object()
    assert acquire_run(given, None) == (given, False)
    run, owned = acquire_run(None, "core")
    assert owned and run is lineage.active_run()
    run.end(exit_status(None))
    assert open_store(sqlite_uri).get_run(run.run_id).status == "FINISHED"
    assert (exit_status(KeyboardInterrupt), exit_status(ValueError)) == ("KILLED", "FAILED")


def test_a_failed_picture_is_a_tag_not_a_failed_training(sqlite_uri: str) -> None:
    run = lineage.start_run(experiment="core", tracking_uri=sqlite_uri)
    with noting_errors(run, "train", "graph_error"):
        raise ValueError("no layout for 0 boxes\nsecond line")
    with noting_errors(run, "val", "sample_error"):
        pass
    run.end()
    tagged = open_store(sqlite_uri).get_run(run.run_id).tags
    assert tagged[tags.data_tag("train", "graph_error")] == "ValueError: no layout for 0 boxes"
    assert tags.data_tag("val", "sample_error") not in tagged


def test_old_runs_read_through_the_alias_table() -> None:
    assert tags.read_tag({"lineage.pytorch.conflicts": "{}"}, tags.CONFLICTS) == "{}"
    assert tags.read_tag({"lineage.mindspore.lr_error": "x"}, tags.LR_ERROR) == "x"
    old = {"lineage.mindspore.frozen_params": "3", "lineage.param_count.trainable": "0"}
    assert tags.read_tag(old, tags.FROZEN_PARAMS) == "3"
    assert tags.read_tag(old, tags.TRAINABLE_PARAMS) == "0"
    # The name itself wins over an alias, and each alias names one concept only.
    assert tags.read_tag({"frozen_params": "1", "lineage.frozen_params": "2"}, "frozen_params")
    aliases = [a for names in tags.TAG_ALIASES.values() for a in names]
    assert len(aliases) == len(set(aliases)) and not set(aliases) & set(tags.TAG_ALIASES)
    # The frozen-weights check finds an old run's spelling as it finds today's.
    for frozen, trainable in (
        ("frozen_params", "trainable_params"),
        ("lineage.mindspore.frozen_params", "lineage.param_count.trainable"),
    ):
        found = diagnose_histories({}, {trainable: "0"}, {frozen: "4"})
        assert [f.check for f in found] == ["frozen_weights"], (frozen, trainable)


def test_options_are_checked_once_with_the_rule_and_the_value() -> None:
    options = RecorderOptions(data_sample=8, all_ranks=False)
    assert options.sample_rows == 8
    assert (
        RecorderOptions().sample_rows == 16 and RecorderOptions(data_sample=False).sample_rows == 0
    )
    assert options.records_on(None) and options.records_on(0) and not options.records_on(1)
    assert RecorderOptions(all_ranks=True).records_on(3)
    with pytest.raises(Exception, match="cannot assign"):
        options.log_every = 2  # type: ignore[misc]
    refused = [
        ({"log_every": 0}, "log_every must be an int >= 1, got 0"),
        ({"data_sample": 257}, "data_sample must be True, False or an int in [1, 256]"),
        ({"all_ranks": "no"}, "all_ranks must be True or False, got 'no'"),
        ({"weight_stats": 1}, "weight_stats must be True, False or None, got 1"),
        ({"experiment": ""}, "experiment must be a non-empty str or None, got str ''"),
        ({"trial": 3}, "trial must be tuner.trial (with report and should_prune) or None"),
    ]
    for kwargs, message in refused:
        with pytest.raises(UsageError) as info:
            RecorderOptions(**kwargs)  # type: ignore[arg-type]
        assert str(info.value).startswith(message), kwargs
    assert RecorderOptions.given(None, {"log_every": 5}).log_every == 5
    assert RecorderOptions.given(options, {}) is options
    with pytest.raises(UsageError, match="not both"):
        RecorderOptions.given(options, {"log_every": 5})


def test_weight_stats_measure_the_norm_and_the_change_since_the_last_epoch() -> None:
    weights = [np.array([3.0, 0.0], dtype=np.float32), np.array([[4.0]], dtype=np.float32)]
    stats = WeightStats(lambda: [w.copy() for w in weights])
    assert stats.measure() == {"weight_norm": 5.0, "weight_delta": 0.0}
    weights[0][1] = 12.0
    assert stats.measure() == {"weight_norm": 13.0, "weight_delta": 12.0}
    weights[1][0, 0] = 0.0
    stats.reset()
    assert stats.measure()["weight_delta"] == 0.0
    assert weight_stats_wanted(None, 10) and not weight_stats_wanted(None, 60_000_000)
    assert weight_stats_wanted(True, 60_000_000) and not weight_stats_wanted(False, 10)
    assert not weight_stats_wanted(None, 0) and not weight_stats_wanted(True, 0)


def test_only_rank_zero_of_a_tuned_trial_saves_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(checkpoints.CHECKPOINT_DIR, raising=False)
    assert checkpoint_root(None) is None
    monkeypatch.setenv(checkpoints.CHECKPOINT_DIR, str(tmp_path))
    assert checkpoint_root(None) == checkpoint_root(0) == str(tmp_path)
    assert checkpoint_root(1) is None


def test_sample_metric_names_are_safe_for_mlflow_and_artifacts_go_through_one_folder(
    sqlite_uri: str,
) -> None:
    assert metric_key("train", "pixel values/0", "mean") == "data.train.pixel_values_0.mean"
    assert metric_key("val", "???", "std") == "data.val.column.std"
    run = lineage.start_run(experiment="core", tracking_uri=sqlite_uri)
    folder = ArtifactFolder()
    folder.log(run, "frozen_params.json", [{"name": "w"}])
    folder.log(run, "model/network.txt", "Linear()")
    folder.close()
    run.end()
    listed = open_store(sqlite_uri).artifacts(run.run_id)
    assert {"frozen_params.json", "model/network.txt"} <= set(listed)
