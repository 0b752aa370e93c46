"""What a real SummaryCollector directory becomes: LineageCallback's names and values."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineage.mindinsight import find_runs, metric_name, read_run
from lineage.store import open_store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tests.mindinsight.conftest import Summaries


def test_find_runs_gives_one_run_per_directory_as_mindinsight_does(summaries: Summaries) -> None:
    runs = find_runs(summaries.base)
    assert [r.train_id for r in runs] == sorted(
        f"./{name}" for name in summaries.runs if name in {p.name for p in summaries.base.iterdir()}
    )
    for run in runs:
        # model.train and the model.eval after it: two lineage files, one scalar file.
        assert len(run.lineage_files) == 2
        assert len(run.summary_files) == 1


def test_read_run_maps_lineage_to_the_callback_names(summaries: Summaries) -> None:
    for run in find_runs(summaries.base):
        made = summaries.runs[run.summary_dir.name]
        record = read_run(run)
        p = record.params
        assert p["optimizer.lr"] == made["lr"]  # float32 0.003 read back as 0.003
        assert p["optimizer.name"] == "Momentum"
        assert p["loss_fn.name"] == "SoftmaxCrossEntropyWithLogits"
        assert p["network.name"] == "SequentialCell"
        assert (p["epochs"], p["batch_size"], p["train_size"]) == (2, 32, 320)
        assert p["steps_per_epoch"] == 10
        assert p["device.count"] == 1 and p["parallel_mode"] == "stand_alone"
        # custom_lineage_data: params under their own names, listed in a tag.
        assert p["momentum"] == made["momentum"] and p["note"] == "fixture"
        assert record.tags["mindinsight.user_defined"] == "momentum,note"
        assert record.tags["mindinsight.train_id"] == run.train_id
        assert record.complete and "mindinsight.incomplete" not in record.tags
        assert "dataset/train_pipeline.json" in record.artifacts
        assert record.start_ms is not None and record.end_ms is not None
        assert record.start_ms <= record.end_ms


def test_read_run_metrics_loss_per_step_train_loss_per_epoch_val_at_last_epoch(
    summaries: Summaries,
) -> None:
    record = read_run(find_runs(summaries.base)[0])
    loss = [(step, v) for k, v, step, _ in record.metrics if k == "loss"]
    steps = {step for step, _ in loss}
    assert steps == set(range(1, 21))  # 2 epochs x 10 steps
    train_loss = {step: v for k, v, step, _ in record.metrics if k == "train_loss"}
    assert set(train_loss) == {1, 2}
    first_epoch = [v for step, v in loss if step <= 10]
    assert train_loss[1] == pytest.approx(sum(first_epoch) / len(first_epoch))
    val = [(step, v) for k, v, step, _ in record.metrics if k == "val_Accuracy"]
    assert len(val) == 1 and val[0][0] == 2 and 0.0 <= val[0][1] <= 1.0
    assert record.params["val_size"] > 0


def test_imported_names_are_the_ones_lineage_callback_records(summaries: Summaries) -> None:
    """The same training recorded by LineageCallback: every name an import gives (other
    than the user-defined ones) is one the callback uses too."""
    with open_store(summaries.callback_uri) as store:
        (experiment,) = store.resolve_experiments(["callback"])
        (callback_run,) = store.runs([experiment.experiment_id])
    record = read_run(find_runs(summaries.base)[0])
    user = set(record.tags["mindinsight.user_defined"].split(","))
    # val_size: the callback records it when it sees the evaluation dataset (Model.fit).
    assert set(record.params) - user - {"val_size"} <= set(callback_run.params)
    for key in set(record.params) - user - {"val_size"}:
        assert str(record.params[key]) == callback_run.params[key], key
    assert {"loss", "train_loss"} <= set(record.metric_keys()) & set(callback_run.metrics)
    assert (
        record.tags["lineage.data.train.samples"] == callback_run.tags["lineage.data.train.samples"]
    )


def test_scalar_tags_lose_their_type_suffix() -> None:
    assert metric_name("loss/auto") == "loss"
    assert metric_name("acc[:Scalar]") == "acc"
    assert metric_name("lr") == "lr"


def test_a_directory_without_train_lineage_is_an_incomplete_run(
    copy_base: Path,
) -> None:
    run = find_runs(copy_base)[0]
    for path in run.lineage_files:
        path.unlink()
    (run,) = [r for r in find_runs(copy_base) if r.summary_dir == run.summary_dir]
    record = read_run(run)
    assert not record.complete
    assert "mindinsight.incomplete" in record.tags
    assert "loss" in record.metric_keys() and not record.params


def test_an_evaluation_that_overwrote_the_train_lineage_is_named(copy_base: Path) -> None:
    """An evaluation opened in the second the training was gets the training's file names
    (MindSpore names them by the second) and overwrites its lineage file."""
    run = find_runs(copy_base)[0]
    train, evaluation = run.lineage_files
    evaluation.replace(train)
    (run,) = [r for r in find_runs(copy_base) if r.summary_dir == run.summary_dir]
    record = read_run(run)
    assert not record.complete and "val_Accuracy" in record.metric_keys()
    reason = record.tags["mindinsight.incomplete"]
    assert "the evaluation started in the second the training did" in reason
