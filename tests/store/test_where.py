"""The --where language, sorting and key checks, on in-memory runs (no store needed)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from lineage import NotFoundError, QuerySyntaxError, UsageError
from lineage.query import check_known, parse_field, parse_sort, parse_where, sort_runs
from lineage.store import RunRecord


def rec(
    name: str,
    params: dict[str, str] | None = None,
    metrics: dict[str, float] | None = None,
    tags: dict[str, str] | None = None,
    status: str = "FINISHED",
    start: int = 1_700_000_000_000,
    end: int | None = 1_700_000_060_000,
) -> RunRecord:
    return RunRecord(
        run_id=f"{abs(hash(name)):032x}"[:32],
        experiment_id="1",
        experiment="exp",
        name=name,
        status=status,
        start_time=start,
        end_time=end,
        params=params or {},
        metrics=metrics or {},
        tags=tags or {},
    )


RUNS = [
    rec("a", {"lr": "0.1", "opt": "sgd", "layers": "4"}, {"loss": 0.5, "acc": 0.8}, {"t": "x"}),
    rec("b", {"lr": "0.01", "opt": "adam", "layers": "12"}, {"loss": 0.2, "acc": 0.9}),
    rec("c", {"lr": "1e-3", "opt": "adamw"}, {"loss": math.nan}, status="FAILED", end=None),
    rec("d", {"lr": "auto", "opt": "Adam", "odd key": "v"}, {"val/acc": 0.7}, start=0, end=10),
]


def names(expr: str, runs: Sequence[RunRecord] = RUNS) -> list[str]:
    pred = parse_where(expr).compile()
    return [r.name for r in runs if pred(r)]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("params.lr > 0.005", ["a", "b"]),  # numeric: "0.01" > 0.005 although "0.01" < "0.005"
        ("params.lr = 0.10", ["a"]),
        ("params.lr = '0.1'", ["a"]),
        ("params.layers < 5", ["a"]),  # numeric, not text ("12" < "5")
        ("params.lr = 'auto'", ["d"]),
        ("params.opt = 'adam' or params.opt = 'sgd'", ["a", "b"]),
        ("params.opt in ('adam', 'adamw')", ["b", "c"]),
        ("params.opt not in ('adam', 'adamw')", ["a", "d"]),
        ("params.opt like 'adam%'", ["b", "c"]),
        ("params.opt like 'ada_'", ["b"]),
        ("params.opt ilike 'adam'", ["b", "d"]),
        ("params.opt not like 'a%'", ["a", "d"]),
        ("metrics.loss < 0.3", ["b"]),
        ("metrics.loss >= 0.2 and metrics.acc > 0.85", ["b"]),
        ("not metrics.loss < 0.3", ["a", "c", "d"]),  # missing and NaN fail the test
        ("metrics.loss != 0.5", ["b", "c", "d"]),
        ("metrics.`val/acc` > 0.5", ["d"]),
        ("metrics.val/acc > 0.5", ["d"]),
        ("params.`odd key` = 'v'", ["d"]),
        ("tags.t = 'x'", ["a"]),
        ("tags.t != 'x'", ["b", "c", "d"]),  # runs without the tag pass a negative test
        ("tags.t is null", ["b", "c", "d"]),
        ("tags.t is not null", ["a"]),
        ("status = 'failed'", ["c"]),
        ("status != 'FINISHED'", ["c"]),
        ("run_name in ('a', 'd')", ["a", "d"]),
        ("duration > 30", ["a", "b"]),
        ("duration is null", ["c"]),
        ("start_time < '2000-01-01'", ["d"]),
        ("start_time >= 1700000000000", ["a", "b", "c"]),
        ("experiment = 'exp' AND NOT (params.opt = 'sgd' OR params.opt = 'adam')", ["c", "d"]),
        ("(params.lr < 0.05 or metrics.acc > 0.85) and params.opt != 'adamw'", ["b"]),
        ("params.lr > 0.05 or params.lr < 0.005 and params.opt = 'x'", ["a"]),  # and binds tighter
        ("metrics.acc >= 8e-1", ["a", "b"]),
        ("metrics.loss > -1", ["a", "b"]),
    ],
)
def test_where_selects(expr: str, expected: list[str]) -> None:
    assert names(expr) == expected


@pytest.mark.parametrize(
    ("expr", "column", "fragment"),
    [
        ("params.lr >", 12, "expected a number or a quoted string"),
        ("params.lr 0.1", 11, "expected an operator"),
        ("metrics.loss < 0.1 and", 23, "expected a key"),
        ("(metrics.loss < 0.1", 20, "expected ')' to close the '(' at column 1"),
        ("metrics.loss < 0.1)", 19, "expected 'and', 'or'"),
        ("params.opt = 'sgd", 14, "unterminated ' quote"),
        ("params.opt in 'sgd'", 15, "expected '(' after 'in'"),
        ("params.opt in ('a' 'b')", 20, "expected ',' or ')'"),
        ("params.opt like 3", 17, "expected a quoted pattern"),
        ("colour = 'red'", 1, "unknown run attribute 'colour'"),
        ("metrics.loss < 'low'", 1, "metrics.loss compares to numbers"),
        ("start_time > 'yesterday'", 1, "ISO date"),
        ("params. = 1", 8, "expected a key name"),
        ("params.x = 1 $", 14, "unexpected character '$'"),
        ("params.x is 1", 13, "expected 'null'"),
        ("", 1, "expected a condition"),
    ],
)
def test_malformed_where_points_at_the_column(expr: str, column: int, fragment: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_where(expr)
    message = str(info.value)
    first, shown, caret = message.split("\n")
    assert first.startswith(f"malformed --where at column {column}: ")
    assert fragment in first
    assert shown == f"  {expr}"
    assert caret == "  " + " " * (column - 1) + "^"
    assert info.value.exit_code == 2


def test_fields_parse_and_print_back() -> None:
    assert str(parse_field("metrics.`val acc`")) == "metrics.`val acc`"
    assert str(parse_field("params.optimizer.lr")) == "params.optimizer.lr"
    assert parse_field("name").key == "run_name"
    with pytest.raises(UsageError, match="unknown run attribute"):
        parse_field("bogus")


def test_sort_several_keys_missing_last_both_ways() -> None:
    runs = [*RUNS, rec("e", {"lr": "0.01", "opt": "sgd"}, {"acc": 0.95})]
    by = [parse_sort("params.lr"), parse_sort("-metrics.acc")]
    assert [r.name for r in sort_runs(runs, by)] == [
        "c",
        "e",
        "b",
        "a",
        "d",
    ]  # "auto" after numbers
    desc = [r.name for r in sort_runs(runs, [parse_sort("-metrics.loss")])]
    assert desc[:2] == ["a", "b"] and set(desc[2:]) == {"c", "d", "e"}  # NaN and missing last
    asc = [r.name for r in sort_runs(runs, [parse_sort("metrics.loss asc")])]
    assert asc[:2] == ["b", "a"]
    assert sort_runs(runs, [parse_sort("metrics.acc desc")])[0].name == "e"


def test_sort_key_errors() -> None:
    with pytest.raises(UsageError, match="--sort needs a key"):
        parse_sort("-")
    with pytest.raises(UsageError, match="unknown run attribute"):
        parse_sort("-speed")


def test_unknown_metric_or_param_is_named() -> None:
    node = parse_where("metrics.accuracy > 0.5")
    with pytest.raises(NotFoundError, match=r"unknown metric 'accuracy' in --where.*acc, loss"):
        check_known(node.fields(), RUNS, "--where")
    with pytest.raises(NotFoundError, match="unknown param 'optimizer'"):
        check_known([parse_field("params.optimizer")], RUNS, "--sort")
    check_known([parse_field("tags.never_set")], RUNS, "--where")  # tags may be absent
    check_known([parse_field("metrics.nope")], [], "--where")  # nothing to check against


def test_prefilter_only_states_necessary_conditions() -> None:
    from lineage.query._pushdown import to_prefilter
    from lineage.store import AllOf, AnyOf, AttrCondition, KeyCondition

    def pf(expr: str) -> object:
        return to_prefilter(parse_where(expr))

    assert pf("metrics.loss < 0.5") == KeyCondition("metrics", "loss", "<", (0.5,))
    assert pf("params.opt in ('sgd', 'adam')") == KeyCondition(
        "params", "opt", "in", ("sgd", "adam")
    )
    assert pf("params.lr = 0.1") == KeyCondition("params", "lr")  # "0.10" must still match
    assert pf("params.lr = '1e-3'") == KeyCondition("params", "lr")
    assert pf("status = 'failed'") == AttrCondition("status", "=", ("FAILED",))
    assert pf("params.a = 'x' and not metrics.b > 1") == KeyCondition("params", "a", "=", ("x",))
    assert pf("params.a = 'x' or metrics.b > 1") == AnyOf(
        (KeyCondition("params", "a", "=", ("x",)), KeyCondition("metrics", "b", ">", (1.0,)))
    )
    assert pf("params.a = 'x' or metrics.b != 1") is None
    assert pf("metrics.a > 1 and tags.t is not null") == AllOf(
        (KeyCondition("metrics", "a", ">", (1.0,)), KeyCondition("tags", "t"))
    )
    for negative in (
        "params.a != 'x'",
        "tags.t is null",
        "params.a not in ('x')",
        "not status = 'X'",
    ):
        assert pf(negative) is None


def test_exact_prefilter_only_where_sql_gives_the_same_answer() -> None:
    from lineage.query._pushdown import exact_prefilter
    from lineage.store import AllOf, AnyOf, AttrCondition, KeyCondition

    def ex(expr: str) -> object:
        return exact_prefilter(parse_where(expr))

    assert ex("metrics.loss < 0.5 and params.opt = 'sgd'") == AllOf(
        (KeyCondition("metrics", "loss", "<", (0.5,)), KeyCondition("params", "opt", "=", ("sgd",)))
    )
    assert ex("status = 'failed' or metrics.acc is not null") == AnyOf(
        (AttrCondition("status", "=", ("FAILED",)), KeyCondition("metrics", "acc"))
    )
    assert ex("start_time >= 5") == AttrCondition("start_time", ">=", (5.0,))
    for inexact in (
        "params.lr = 0.1",  # "0.10" equals it too
        "params.lr > '0.1'",
        "params.opt like 's%'",
        "tags.t = ''",  # a NULL tag value reads back as ""
        "metrics.loss < 1 and not params.opt = 'x'",  # a necessary part only
        "metrics.loss < 1 and run_name = 'a'",
        "duration > 3",
        "metrics.loss != 1",
    ):
        assert ex(inexact) is None, inexact
    # The necessary condition still narrows where the exact one gives up.
    from lineage.query._pushdown import to_prefilter

    assert to_prefilter(parse_where("tags.t = ''")) == KeyCondition("tags", "t")


def test_unindexed_and_conditions_after_the_first_are_probed_per_run() -> None:
    from lineage.query._pushdown import exact_prefilter
    from lineage.store._sql_text import prefilter_sql

    pf = exact_prefilter(parse_where("metrics.a < 1 and params.b = 'x' and status = 'FINISHED'"))
    assert pf is not None
    plain, args = prefilter_sql(pf, frozenset())
    assert plain.count("IN (SELECT") == 1 and plain.count("EXISTS (SELECT") == 1
    assert args == ["a", 1.0, "b", "x", "FINISHED"]
    indexed, same_args = prefilter_sql(pf, frozenset({"params", "latest_metrics", "tags"}))
    assert indexed.count("IN (SELECT") == 2 and "EXISTS" not in indexed and same_args == args


def test_value_classes_unpack_in_field_order_like_the_tuples_they_replaced() -> None:
    from lineage.store import MetricPoint

    step, value, timestamp = MetricPoint(3, 0.5, 1_700_000_000_000)
    assert (step, value, timestamp) == (3, 0.5, 1_700_000_000_000)
    kind, key = parse_field("params.lr")
    assert (kind, key) == ("params", "lr")
    assert repr(MetricPoint(1, 2.0, 3)) == "MetricPoint(step=1, value=2.0, timestamp=3)"


def test_mlflow_filters_state_a_superset_in_mlflow_syntax() -> None:
    from lineage.query._pushdown import to_prefilter
    from lineage.store._mlflow_filter import MAX_SEARCHES, mlflow_filters

    def filters(expr: str) -> list[str]:
        return mlflow_filters(to_prefilter(parse_where(expr)))

    assert filters("params.opt = 'adam' and metrics.loss < 0.5") == [
        "params.`opt` = 'adam' AND metrics.`loss` < 0.5"
    ]
    assert filters("params.opt in ('a', 'b') or tags.t like 'x%'") == [
        "params.`opt` = 'a'",
        "params.`opt` = 'b'",
        "tags.`t` LIKE 'x%'",
    ]
    assert filters("params.lr < 0.01") == ["params.`lr` IS NOT NULL"]  # "1e-3" must match
    assert filters("metrics.acc is not null") == [""]  # NaN is present, fails every test
    assert filters("not params.opt = 'adam'") == [""]
    assert filters("params.opt = 'adam' or not metrics.loss < 1") == [""]
    assert filters("status in ('failed', 'KILLED') and start_time > 1700000000000.5") == [
        "attributes.status = 'FAILED' AND attributes.start_time >= 1700000000000",
        "attributes.status = 'KILLED' AND attributes.start_time >= 1700000000000",
    ]
    assert filters('params.name = "it\'s"') == ['params.`name` = "it\'s"']
    assert filters("params.p like 'a\\\\%'") == ["params.`p` IS NOT NULL"]  # PostgreSQL escape
    wide = " or ".join(f"metrics.m = {i}" for i in range(MAX_SEARCHES + 1))
    assert filters(wide) == [""]
    both = "(params.a = 'x' or params.a = 'y') and (params.b = 'x' or params.b = 'y')"
    assert len(filters(both)) == 4
