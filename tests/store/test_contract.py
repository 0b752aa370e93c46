"""The RunStore contract, once, for every backend: plain SQL on SQLite and PostgreSQL, the
REST reader on an ``mlflow server`` (over PostgreSQL), and the MlflowClient reader on the
same stores."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from _store_sample import Logged

from lineage import NotFoundError, UsageError
from lineage.query import search_runs
from lineage.store import RunStore, open_store
from lineage.store._client import ClientRunStore
from lineage.store._http import HttpRunStore
from lineage.store._sql import SqlRunStore

pytestmark = pytest.mark.slow


@pytest.fixture
def logged(sample: Logged) -> Logged:
    return sample


@pytest.fixture(params=["sql", "client"])
def store(request: pytest.FixtureRequest, sample: Logged) -> Iterator[RunStore]:
    uri = sample.uri
    st: RunStore = open_store(uri) if request.param == "sql" else ClientRunStore(uri)
    if request.param == "sql":
        assert isinstance(st, SqlRunStore | HttpRunStore)
    yield st
    st.close()


def test_experiments_are_the_active_ones(store: RunStore, logged: Logged) -> None:
    names = {e.name: e.experiment_id for e in store.experiments()}
    assert names == {"Default": "0", "alpha": logged.exp_a, "beta": logged.exp_b}


def test_experiment_tags_of_active_experiments(store: RunStore, logged: Logged) -> None:
    assert store.experiment_tags(logged.exp_a)["lineage.target"] == "accuracy:maximize"
    assert "lineage.target" not in store.experiment_tags(logged.exp_b)
    gone = next(i for i in map(str, range(1, 10)) if i not in (logged.exp_a, logged.exp_b, "0"))
    assert store.experiment_tags(gone) == {}  # deleted: invisible, as its runs are
    assert store.experiment_tags("999999") == {}


def test_runs_hold_params_latest_metrics_tags_newest_first(store: RunStore, logged: Logged) -> None:
    runs = store.runs()
    assert [r.name for r in runs] == ["beta1", "adam2", "adam", "sgd"]
    by = {r.name: r for r in runs}
    sgd = by["sgd"]
    assert sgd.run_id == logged.runs["sgd"]
    assert sgd.params == {"lr": "0.1", "optimizer": "sgd", "epochs": "10"}
    assert sgd.metrics == {"loss": 0.3, "accuracy": 0.8}
    assert sgd.tags["team"] == "vision" and sgd.tags["mlflow.runName"] == "sgd"
    assert (sgd.experiment, sgd.experiment_id, sgd.status) == ("alpha", logged.exp_a, "FINISHED")
    assert sgd.start_time == 1_700_000_000_000 and sgd.duration == 0.5
    assert by["adam2"].status == "FAILED"
    assert math.isnan(by["beta1"].metrics["val_loss"])
    assert by["beta1"].params["odd key/x"] == "1"


def test_runs_of_chosen_experiments(store: RunStore, logged: Logged) -> None:
    assert {r.name for r in store.runs([logged.exp_b])} == {"beta1"}
    assert store.runs([logged.deleted_exp]) == []
    assert store.runs(["999999"]) == []


def test_resolve_experiments_by_name_or_id(store: RunStore, logged: Logged) -> None:
    got = store.resolve_experiments(["beta", logged.exp_a, "beta"])
    assert [e.name for e in got] == ["beta", "alpha"]
    assert len(store.resolve_experiments(None)) == 3
    with pytest.raises(NotFoundError, match=r"experiment 'gone' not found.*known: Default"):
        store.resolve_experiments(["gone"])


def test_get_run_by_id_and_prefix(store: RunStore, logged: Logged) -> None:
    rid = logged.runs["adam"]
    assert store.get_run(rid).name == "adam"
    assert store.get_run(rid[:8]).run_id == rid
    assert store.get_run(f"  {rid[:6]} ").run_id == rid


@pytest.mark.parametrize("ref", ["0123456789abcdef0123456789abcdef", "zzzz", "ab"])
def test_get_run_unknown(store: RunStore, ref: str) -> None:
    with pytest.raises(NotFoundError, match="not found"):
        store.get_run(ref)


def test_deleted_runs_and_experiments_are_invisible(store: RunStore, logged: Logged) -> None:
    ids = {r.run_id for r in store.runs()}
    assert logged.deleted_run not in ids and logged.deleted_exp_run not in ids
    for rid in (logged.deleted_run, logged.deleted_exp_run):
        with pytest.raises(NotFoundError):
            store.get_run(rid)


def test_metric_histories_in_step_order(store: RunStore, logged: Logged) -> None:
    hist = store.metric_histories(logged.runs["sgd"])
    assert [(p.step, p.value) for p in hist["loss"]] == [(0, 1.0), (1, 0.5), (2, 0.3)]
    assert [p.value for p in store.metric_history(logged.runs["sgd"], "accuracy")] == [0.8]
    with pytest.raises(NotFoundError, match=r"metric 'nope' not found.*known: accuracy, loss"):
        store.metric_history(logged.runs["sgd"], "nope")
    with pytest.raises(NotFoundError):
        store.metric_histories("0123456789abcdef0123456789abcdef")


def test_artifacts_listed(store: RunStore, logged: Logged) -> None:
    assert store.artifacts(logged.runs["sgd"]) == ["model/model.txt"]
    assert store.artifacts(logged.runs["adam"]) == []


def test_search_runs_same_answer_on_every_backend(store: RunStore) -> None:
    got = search_runs(
        store,
        experiments=["alpha"],
        where="params.optimizer = 'adam' or params.lr >= 0.1",
        sort=["-metrics.accuracy"],
    )
    assert [r.name for r in got] == ["adam", "adam2", "sgd"]


@pytest.mark.parametrize("kind", ["sql", "sql-cached", "client"])
def test_other_writers_are_visible_at_once(
    store_uri: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("LINEAGE_CACHE_DIR", str(tmp_path / "cache"))

    client = MlflowClient(tracking_uri=store_uri)
    exp = client.create_experiment("live")
    first = client.create_run(exp, run_name="first", start_time=1_700_000_000_000).info.run_id
    reader = {
        "sql": lambda: open_store(store_uri),
        "sql-cached": lambda: open_store(store_uri, cache=True),
        "client": lambda: ClientRunStore(store_uri),
    }[kind]
    with reader() as store:
        assert [r.name for r in store.runs()] == ["first"]
        new = client.create_run(exp, run_name="late", start_time=1_800_000_000_000)
        rid = new.info.run_id
        client.log_param(rid, "lr", "0.5")
        client.log_metric(rid, "loss", 0.25, step=3)
        assert [r.name for r in store.runs()] == ["late", "first"]
        assert store.get_run(rid).metrics == {"loss": 0.25}
        client.log_metric(rid, "loss", 0.125, step=4)
        client.set_tag(rid, "team", "speech")
        client.set_terminated(rid, status="KILLED")
        late = store.get_run(rid)
        assert (late.metrics["loss"], late.tags["team"], late.status) == (0.125, "speech", "KILLED")
        assert search_runs(store, where="metrics.loss < 0.2")[0].run_id == rid
        client.delete_run(first)
        assert [r.name for r in store.runs()] == ["late"]
        with pytest.raises(NotFoundError):
            store.get_run(first)
        client.restore_run(first)
        assert len(store.runs()) == 2
        client.delete_experiment(exp)
        assert store.runs() == [] and "live" not in {e.name for e in store.experiments()}


def test_ambiguous_prefix_is_a_usage_error(sqlite_uri: str) -> None:
    import sqlite3

    from mlflow.tracking import MlflowClient

    from lineage.uri import sqlite_path

    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = int(client.create_experiment("twins"))
    with sqlite3.connect(sqlite_path(sqlite_uri)) as db:
        for rid in ("abcd" + "1" * 28, "abcd" + "2" * 28):
            db.execute(
                "INSERT INTO runs (run_uuid, name, status, start_time, lifecycle_stage, "
                "artifact_uri, experiment_id, source_type, user_id, source_name, "
                "entry_point_name, source_version) "
                "VALUES (?, 'twin', 'FINISHED', 0, 'active', '', ?, 'LOCAL', 'u', '', '', '')",
                (rid, exp),
            )
    for store in (open_store(sqlite_uri), ClientRunStore(sqlite_uri)):
        with pytest.raises(UsageError, match="'abcd' is ambiguous"):
            store.get_run("abcd")
        assert store.get_run("abcd2").run_id == "abcd" + "2" * 28
        store.close()


def test_cached_table_is_reused_until_a_write(
    sqlite_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("LINEAGE_CACHE_DIR", str(tmp_path / "cache"))
    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.create_experiment("c")
    rid = client.create_run(exp, run_name="r").info.run_id
    with open_store(sqlite_uri, cache=True) as store:
        assert [r.run_id for r in store.runs()] == [rid]
        files = list((tmp_path / "cache").iterdir())
        assert len(files) == 1
        stamp = files[0].stat().st_mtime_ns
        assert [r.run_id for r in store.runs([exp])] == [rid]  # served from the cache
        assert files[0].stat().st_mtime_ns == stamp
        client.log_metric(rid, "loss", 0.5)
        assert store.runs()[0].metrics == {"loss": 0.5}
        assert files[0].stat().st_mtime_ns != stamp


PUSHDOWN_CASES = [
    "params.optimizer = 'adam'",
    "params.optimizer in ('adam', 'momentum') and metrics.loss < 0.45",
    "params.lr = 0.1",  # numeric literal: "0.1" and "1e-1" must both match
    "params.lr < 0.005 or metrics.accuracy >= 0.9",
    "params.lr < 0.005 or not metrics.accuracy >= 0.9",  # untranslatable branch
    "metrics.loss > 0.25 and status = 'finished'",
    "status in ('FAILED', 'killed')",
    "tags.team = 'vision' and params.epochs != '10'",
    "metrics.val_loss is not null",
    "metrics.val_loss > 0",  # NaN never matches
    "params.optimizer like 'adam%' and start_time >= 1700000001000",
    "end_time < '2100-01-01' and params.`odd key/x` = '1'",
    "params.optimizer like 'ad%' or tags.team ilike 'NL_'",
    "params.optimizer ilike 'ADAM' and not params.lr = '0.001'",
    "metrics.accuracy in (0.8, 0.85) or metrics.loss <= 0.2",
    "(status = 'FAILED' or metrics.accuracy > 0.75) and tags.team != 'nlp'",
    "params.optimizer not in ('sgd', 'adam') and metrics.val_loss is null",
    "start_time > 1700000000500 and end_time <= 1700000002500 and status in ('FINISHED')",
    "params.epochs = '10' and (metrics.loss < 0.25 or params.lr = '0.1')",
]


@pytest.mark.parametrize("where", PUSHDOWN_CASES)
def test_pushed_down_filters_match_the_exact_filter(store: RunStore, where: str) -> None:
    from lineage.query import parse_where

    predicate = parse_where(where).compile()
    expected = [r.run_id for r in store.runs() if predicate(r)]
    assert [r.run_id for r in search_runs(store, where=where)] == expected


def test_metric_values_read_exactly_including_extremes(sqlite_uri: str) -> None:
    """Floats keep all 17 digits; NaN and a true Inf that a foreign writer put in the SQLite
    file read as MlflowClient reads them, and MLflow's clamped infinities as infinities."""
    import sqlite3

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    rid = client.create_run(client.create_experiment("x")).info.run_id
    values = {
        "tiny": 4.081455840411847e-05,
        "sum": 0.1 + 0.2,
        "one": 1.0,
        "huge": 1.4628471007768097e200,  # SQLite's printf gets this one wrong
        "neg": -2.5e300,
    }
    for key, value in values.items():
        client.log_metric(rid, key, value)
    client.log_metric(rid, "up", math.inf)  # MLflow stores +-1.7976931348623157e308
    client.log_metric(rid, "nan", math.nan)
    client.log_metric(rid, "raw_inf", 0.0)
    with sqlite3.connect(sqlite_uri.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE latest_metrics SET value = 9e999 WHERE key = 'raw_inf'")
    with open_store(sqlite_uri) as store:
        got = store.runs()[0].metrics
        assert {k: got[k] for k in values} == values
        # MlflowClient reads the largest float back; the store, the infinity that was logged.
        assert MlflowClient(tracking_uri=sqlite_uri).get_run(rid).data.metrics["up"] > 1e308
        assert got["up"] == math.inf
        assert math.isnan(got["nan"]) and got["raw_inf"] == math.inf
        single = store.get_run(rid).metrics  # read row by row, no JSON
        assert math.isnan(single.pop("nan")) and got.pop("nan") != 0
        assert got == single


def _as_cli_json(runs: list) -> list:  # type: ignore[type-arg]
    """What `lineage runs --format json` prints for ``runs`` on the general path, parsed."""
    import io
    import json

    from lineage.cli._cmd_runs import write_json_list
    from lineage.query import run_to_dict

    buf = io.StringIO()
    write_json_list((run_to_dict(r) for r in runs), buf)
    return list(json.loads(buf.getvalue()))


def test_runs_rendered_by_the_database_equal_the_general_path(sample: Logged) -> None:
    import json

    with open_store(sample.uri) as store:
        rendered = store.runs_json(None, None)  # SQLite and PostgreSQL render them alike
        if isinstance(store, HttpRunStore):
            assert rendered is None and not store.renders_json  # MLflow's JSON is its own
            return
        assert rendered is not None
        assert [json.loads(t) for t in rendered] == _as_cli_json(store.runs())
        only_b = store.runs_json([sample.exp_b], 5) or []
        assert [json.loads(t) for t in only_b] == _as_cli_json(store.runs([sample.exp_b]))
        assert len(store.runs_json(None, 2) or []) == 2


RENDERED_QUERIES = [
    ("params.optimizer = 'adam'", [], None, None),
    ("metrics.loss < 0.35", ["-metrics.accuracy"], None, None),
    ("metrics.accuracy >= 0.85 or params.optimizer = 'sgd'", ["metrics.loss"], None, None),
    ("tags.team = 'vision' and status = 'failed'", [], None, None),
    ("status in ('finished', 'FAILED')", ["-duration", "metrics.loss"], None, 3),
    ("metrics.val_loss is not null", [], None, None),
    ("metrics.val_loss < 1", [], None, None),  # NaN compares false
    ("start_time > 1700000001000", ["end_time"], None, None),
    ("params.optimizer in ('adam', 'momentum') and metrics.loss > 0.1", [], None, None),
    ("metrics.accuracy = 0.9", [], ["alpha"], None),
    (None, ["metrics.val_loss"], None, None),  # NaN and missing last, ties by default order
    (None, ["-metrics.val_loss", "-start_time"], None, None),
    (None, ["-metrics.accuracy"], ["alpha", "beta"], 2),
]


@pytest.mark.parametrize(("where", "sort", "experiments", "limit"), RENDERED_QUERIES)
def test_queries_rendered_by_the_database_equal_the_general_path(
    sample: Logged,
    where: str | None,
    sort: list[str],
    experiments: list[str] | None,
    limit: int | None,
) -> None:
    import json

    from lineage.query import search_runs_json

    query = {"experiments": experiments, "where": where, "sort": sort, "limit": limit}
    with open_store(sample.uri) as store:
        rendered = search_runs_json(store, **query)  # type: ignore[arg-type]
        expected = _as_cli_json(search_runs(store, **query))  # type: ignore[arg-type]
    if sample.uri.startswith("http"):
        assert rendered is None
        return
    assert rendered is not None
    assert [json.loads(t) for t in rendered] == expected
    assert expected or where == "metrics.val_loss < 1"  # each query selects something


@pytest.mark.parametrize("where", sorted({q[0] for q in RENDERED_QUERIES if q[0]}))
def test_prefiltered_queries_equal_the_filter_over_every_run(sample: Logged, where: str) -> None:
    """The SQL prefilter (IN lists, per-run EXISTS probes) loses no run the filter keeps."""
    from lineage.query import parse_where

    with open_store(sample.uri) as store:
        found = [r.run_id for r in search_runs(store, where=where)]
        keep = parse_where(where).compile()
        assert found == [r.run_id for r in store.runs() if keep(r)]


@pytest.mark.parametrize(
    ("where", "sort"),
    [
        ("params.lr > 0.005", []),  # numeric-looking params compare as numbers
        ("params.optimizer like 'ad%'", []),
        ("not status = 'FAILED'", []),
        ("metrics.loss != 0.3", []),
        ("metrics.loss < 1 and run_name = 'sgd'", []),
        ("tags.team = ''", []),  # a NULL tag value reads back as ""
        (None, ["params.lr"]),  # mixes numbers and words
        (None, ["run_name"]),
        ("metrics.nope > 1", []),  # the general path names the unknown metric
        (None, ["-metrics.nope"]),
    ],
)
def test_queries_sqlite_cannot_answer_exactly_take_the_general_path(
    sample: Logged, where: str | None, sort: list[str]
) -> None:
    from lineage.query import search_runs_json

    with open_store(sample.uri) as store:
        assert search_runs_json(store, where=where, sort=sort) is None


def test_rendered_runs_cover_odd_rows_and_defer_huge_values(sqlite_uri: str) -> None:
    import json
    import sqlite3

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.create_experiment("odd")
    running = client.create_run(exp).info.run_id  # no end time, generated name
    client.log_param(running, "näme", 'ünïcode "quoted"\n')
    client.log_metric(running, "m", 0.1 + 0.2)
    client.log_metric(running, "n", math.nan)
    unnamed = client.create_run(exp, run_name="x").info.run_id
    client.set_terminated(unnamed)
    with sqlite3.connect(sqlite_uri.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE runs SET name = '' WHERE run_uuid = ?", (unnamed,))
        db.execute("INSERT INTO tags (key, value, run_uuid) VALUES ('nul', NULL, ?)", (unnamed,))
    with open_store(sqlite_uri) as store:
        rendered = store.runs_json(None, None)
        assert rendered is not None
        assert [json.loads(t) for t in rendered] == _as_cli_json(store.runs())
    client.log_metric(unnamed, "huge", 1.4628471007768097e200)
    with open_store(sqlite_uri) as store:
        assert store.runs_json(None, None) is None  # SQLite's printf is inexact up there


#: --where queries MLflow's search also states, with MLflow's spelling of each.
SAME_AS_MLFLOW = [
    ("params.optimizer = 'adam'", "params.optimizer = 'adam'"),
    ("metrics.loss < 0.35 and tags.team = 'vision'", "metrics.loss < 0.35 AND tags.team = 'vision'"),
    ("params.optimizer like 'ad%'", "params.optimizer LIKE 'ad%'"),
    ("tags.team ilike 'NL_'", "tags.team ILIKE 'NL_'"),
    ("status = 'failed'", "attributes.status = 'FAILED'"),
    ("start_time >= 1700000001000", "attributes.start_time >= 1700000001000"),
    ("metrics.accuracy >= 0.8 and params.epochs = '10'",
     "metrics.accuracy >= 0.8 AND params.epochs = '10'"),
    ("params.`odd key/x` = '1'", "params.`odd key/x` = '1'"),
]  # fmt: skip


@pytest.mark.parametrize(("where", "mlflow_filter"), SAME_AS_MLFLOW)
def test_where_selects_what_mlflow_search_selects(
    sample: Logged, where: str, mlflow_filter: str
) -> None:
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    exps = [sample.exp_a, sample.exp_b]
    theirs = MlflowClient(tracking_uri=sample.uri).search_runs(
        exps, mlflow_filter, run_view_type=ViewType.ACTIVE_ONLY
    )
    with open_store(sample.uri) as store:
        ours = search_runs(store, experiments=exps, where=where)
    assert ours, where
    assert sorted(r.run_id for r in ours) == sorted(r.info.run_id for r in theirs)


@pytest.mark.parametrize(
    "sample", [pytest.param("http", marks=pytest.mark.postgres)], indirect=True
)
def test_http_store_reads_the_table_once_per_pushed_search(
    sample: Logged, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One filtered query: one search per branch of its or, keys checked on the candidates
    (no second read), and a search larger than a page split by run id and merged."""
    import lineage.store._http as http

    with open_store(sample.uri) as store:
        assert isinstance(store, HttpRunStore)
        sent: list[str] = []
        real = store._search

        def spy(ids, where, max_results, token=None):  # type: ignore[no-untyped-def]
            sent.append(where)
            return real(ids, where, max_results, token)

        monkeypatch.setattr(store, "_search", spy)
        where = "params.optimizer = 'adam' or metrics.loss < 0.35"
        got = search_runs(store, where=where, sort=["-metrics.accuracy"])
        assert [r.name for r in got] == ["adam", "adam2", "sgd"]
        assert sorted(sent) == ["metrics.`loss` < 0.35", "params.`optimizer` = 'adam'"]
        sent.clear()
        monkeypatch.setattr(http, "FIRST_PAGE", 1)
        assert [r.name for r in store.runs()] == ["beta1", "adam2", "adam", "sgd"]
        assert len(sent) == 17 and all("run_id ILIKE" in w for w in sent[1:])


@pytest.mark.parametrize(
    "sample", [pytest.param("http", marks=pytest.mark.postgres)], indirect=True
)
def test_cli_over_http_prints_what_the_library_finds(sample: Logged) -> None:
    """`lineage runs` against the server, as a user runs it: the same runs, no traceback."""
    import json
    import subprocess
    import sys

    where = "params.optimizer like 'ad%' or status = 'failed'"
    cli = [sys.executable, "-m", "lineage.cli", "runs", "--tracking-uri", sample.uri]
    out = subprocess.run(
        [*cli, "--where", where, "--sort=-metrics.accuracy", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    with open_store(sample.uri) as store:
        expected = _as_cli_json(search_runs(store, where=where, sort=["-metrics.accuracy"]))
    assert json.loads(out.stdout) == expected and [r["run_name"] for r in expected] == [
        "adam",
        "adam2",
    ]
    bad = subprocess.run([*cli, "--where", "metrics.nope > 1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown metric 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr
