"""``lineage importance``: rank the hyperparameters of an experiment by how much of a target
metric they explain (a Gaussian process or a boosted random forest, whichever predicts
held-out runs better, or the one ``--method`` names; held-out permutation importance, t intervals),
show which way each one points, the target's distribution and the best runs; ``--log``
records it all, plots included, as an analysis run in the MLflow UI."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lineage._errors import UsageError
from lineage.cli._common import (
    add_common,
    format_cell,
    print_csv,
    print_json,
    print_table,
    print_text,
)

if TYPE_CHECKING:
    from lineage.importance import ImportanceResult

ORDER = 40

_EPILOG = """\
examples:
  lineage importance -e mnist --target val_loss --goal minimize
  lineage importance -e mnist --target acc --goal maximize --top 0.2 --format json
  lineage importance -e mnist --target val_loss --goal minimize --where "params.optimizer = 'adam'" --log
model (--method): auto (default) fits a Gaussian process where the runs are complete and
200-500 of them, and keeps it when it predicts held-out runs at least as well as a boosted
random forest; otherwise the forest. forest and gp force one. The last line says which ran,
why, and each candidate's held-out R2.
columns: importance is each parameter's share (they sum to 1) of the held-out error the
model loses when that parameter's value is swapped with other runs'; 95% CI: t intervals
of those shares that hold together at 95% (each at 1 - 0.05/k for k ranked parameters, so a
no-effect parameter is flagged in at most 2.5% of analyses, however many are ranked); rank
is a range (2-3) where intervals overlap: those parameters cannot be told apart; sig(nificant)
means, by definition, that the interval
excludes 0 (its lower end is above 0, printed non-zero); rho is Spearman's correlation
(numeric parameters); best is the category with the best mean target, or the value in the best
run. type: num, log (numeric on a log scale) or cat(levels).
below the table: "tune these" (significant), "these did not matter" (the interval's upper
end is below 5% of the total), "cannot tell yet" with about how many more runs would decide
(from the interval widths, if the shares and spreads stay as they are).
default params: every parameter that varies; on a campaign's runs, the campaign's tuned
parameters. Parameters with identical values in every run are ranked once (lr = optimizer.lr).
A named parameter no analysed run has (a conditional one never drawn) is reported as never
active; a name no run of the experiment knows is an error with a did-you-mean.
exit codes: 0 ranked, 1 store failure, 2 bad input (unknown experiment/metric/param, fewer
than 8 runs, constant target).
"""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text!r}")
    return value


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return format_cell(value)


def _kind(spec: Any) -> str:
    if spec.kind == "categorical":
        return f"cat({len(spec.categories)})"
    return "log" if spec.log else "num"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "importance",
        help="rank hyperparameters by importance for a target metric",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--experiment", "-e", required=True, metavar="E", help="experiment name or id"
    )
    parser.add_argument("--where", default=None, help="filter runs, as in `lineage runs`")
    parser.add_argument("--target", "-t", required=True, metavar="METRIC", help="metric to explain")
    parser.add_argument(
        "--goal",
        required=True,
        choices=["minimize", "maximize", "min", "max"],
        help="whether lower or higher target values are better",
    )
    parser.add_argument(
        "--params",
        nargs="+",
        default=None,
        metavar="P",
        help="analyse only these parameters (default: every parameter that varies)",
    )
    parser.add_argument(
        "--top",
        type=_fraction,
        default=None,
        metavar="Q",
        help="analyse only the best Q fraction of runs, e.g. 0.2 (what matters near the optimum)",
    )
    parser.add_argument(
        "--runs-shown", type=int, default=5, metavar="K", help="top runs to list (default 5)"
    )
    parser.add_argument(
        "--log",
        action="store_true",
        help="record the analysis (plots, tables, importances as metrics) as an MLflow run",
    )
    parser.add_argument(
        "--method",
        choices=["auto", "forest", "gp"],
        default="auto",
        help="the model: auto (the better of a Gaussian process and a random forest on "
        "held-out runs), forest, or gp (default: auto)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the model and resampling")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lineage.importance import analyze_experiment, evaluator_for, model_line

    if args.runs_shown < 0:
        raise UsageError(f"--runs-shown must be >= 0, got {args.runs_shown}")
    result = analyze_experiment(
        args.experiment,
        target=args.target,
        goal=args.goal,
        tracking_uri=args.tracking_uri,
        where=args.where,
        params=args.params,
        top=args.top,
        evaluator=evaluator_for(args.method, random_state=args.seed),
        log=args.log,
    )
    if args.format == "json":
        print_json(result.to_dict(top_runs=args.runs_shown))
        return 0
    if args.format == "csv":
        _print_csv(result)
        return 0
    _print_tables(result, top=args.top, runs_shown=args.runs_shown)
    _print_notes(result)
    print_text(model_line(result))
    if result.analysis_run_id:
        print_text(f"analysis logged: run {result.analysis_run_id} (lineage.run_type=analysis)")
    return 0


def _print_csv(result: ImportanceResult) -> None:
    """One row per parameter: what the table shows, unrounded."""
    from lineage.importance import verdict

    print_csv(
        ["param", "type", "importance", "ci_low", "ci_high", "significant", "spearman", "best",
         "aliases", "rank_best", "rank_worst", "verdict"],
        [
            [p.name, p.spec.label, p.importance, p.ci[0], p.ci[1], p.significant,
             p.correlation, p.best, " ".join(p.aliases), best, worst, verdict(p)]
            for p, (best, worst) in zip(result.params, result.rank_ranges(), strict=True)
        ],
    )  # fmt: skip


def _print_tables(result: ImportanceResult, *, top: float | None, runs_shown: int) -> None:
    """The ranking, the target's distribution and the best runs."""
    from lineage.importance import format_bound

    rows = [
        [
            str(best) if best == worst else f"{best}-{worst}",
            p.label,
            _kind(p.spec),
            f"{p.importance:.3f}",
            f"{format_bound(p.ci[0])}-{format_bound(p.ci[1])}",
            "yes" if p.significant else "no",
            "" if p.correlation is None else f"{p.correlation:+.2f}",
            _short(p.best),
        ]
        for p, (best, worst) in zip(result.params, result.rank_ranges(), strict=True)
    ]
    columns = ["rank", "param", "type", "importance", "95% CI", "sig", "rho", "best"]
    scope = f", best {top:g} of runs" if top else ""
    print_table(
        columns,
        rows,
        title=f"{result.experiment}: importance for {result.target} ({result.goal}, "
        f"{result.n_runs} runs{scope})",
    )
    for line in result.advice().lines():
        print_text(line)
    s = result.target_summary()
    keys = ["min", "p25", "median", "p75", "max", "mean", "std"]
    print_table(
        ["count", *keys],
        [[s["count"], *(_short(s[k]) for k in keys)]],
        title=f"distribution of {result.target}",
    )
    top_rows = result.top_runs(runs_shown)
    if top_rows:
        shown = [p.name for p in result.params[:4]]
        print_table(
            ["#", "run", result.target, *shown],
            [
                [r["rank"], r["run_name"] or r["run_id"][:8], _short(r[result.target])]
                + [_short(r["params"].get(n)) for n in shown]
                for r in top_rows
            ],
            title=f"top {len(top_rows)} runs",
        )


def _print_notes(result: ImportanceResult) -> None:
    """What was read and what was left out: parameters, aliases, runs."""
    if result.param_source:
        print_text(f"params: {result.param_source} (--params to choose others)")
    for name in result.never_active:
        print_text(f"{name}: {result.dropped[name]}")
    notes = [
        f"{name} ({why})" for name, why in result.dropped.items() if name not in result.never_active
    ]
    if notes:
        print_text(f"not ranked: {', '.join(notes)}")
    for name, same in result.aliases.items():
        print_text(f"aliases: {name} = {' = '.join(same)} (identical in every run, ranked as one)")
    if result.excluded:
        left = [
            f"{n} {k[:-1] if n == 1 and k.endswith(' runs') else k}"
            for k, n in result.excluded.items()
        ]
        print_text("runs left out: " + ", ".join(left))
