"""Score `lineage importance` against functions whose true parameter importance is known.

Each case's runs go into a fresh MLflow SQLite store as plain runs (params as strings, as any
MLflow user logs them; a conditional parameter absent where its condition does not hold), then
the CLI ranks them as a user would::

    lineage importance --tracking-uri URI --experiment CASE --target y --goal minimize --format json

and the answer is checked against the truth:

- ``order_right``: the relevant parameters in the right order (by importance);
- ``dummies_last``: the parameters without effect below every relevant one;
- ``dummies_significant``: no-effect parameters marked significant (the goal is 0);
- ``misorders_untied``: pairs of relevant parameters in the wrong order whose rank ranges do
  not overlap, i.e. a wrong order the output presents as an order (the goal is 0);
- ``dummies_above_untied``: a no-effect parameter ranked wholly above a relevant one;
- the verdicts the output gives the relevant and the no-effect parameters.

The cases: ``linear`` and ``lr_bowl`` (the two of the public reference), the Ishigami and
Sobol' G functions of the sensitivity-analysis literature, and ``conditional``, a tuning-like
space with a conditional parameter (all from ``bench_importance.py``). Seed ``s`` of a case
draws its runs from ``numpy.random.default_rng(s)``.

    python benchmarks/bench_importance_truth.py [--runs 30,50,200] [--seeds 5] [--method auto]
    python benchmarks/bench_importance_truth.py --merge DIR [DIR ...]

Run counts can run in separate processes (``--runs 50 --results-dir DIR``); ``--merge`` then
writes the one result file from their files.

Prints one row per case and run count and writes ``benchmarks/results/importance_truth.json``
(one entry per ``"<case> at <n> runs"``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result
from bench_importance import CASES as ALL_CASES
from bench_importance import _case_rows, _score, build_store

CASES = {
    name: ALL_CASES[name] for name in ("linear", "lr_bowl", "ishigami", "g_function", "conditional")
}

_COUNTS = (
    "order_right",
    "dummies_last",
    "dummies_significant",
    "misorders_untied",
    "dummies_above_untied",
)


def _check(answer: dict[str, Any], names: list[str], truth: list[float]) -> dict[str, Any]:
    """The figures of one ranking against the truth."""
    ranked = answer["params"]
    order, dummies_last = _score(ranked, names, truth)
    by_name = {r["name"]: r for r in ranked}
    weight = dict(zip(names, truth, strict=True))
    relevant = [n for n in names if weight[n] > 0 and n in by_name]
    dummies = [n for n in names if weight[n] == 0 and n in by_name]
    misorders = 0
    for a in relevant:
        for b in relevant:
            ra, rb = by_name[a], by_name[b]
            if weight[a] > weight[b] and ra["importance"] < rb["importance"]:
                misorders += ra["rank"][0] > rb["rank"][1]  # a placed wholly below b
    above = sum(by_name[d]["rank"][1] < by_name[r]["rank"][0] for d in dummies for r in relevant)
    return {
        "order_right": order,
        "dummies_last": dummies_last,
        "dummies_significant": sum(bool(by_name[d]["significant"]) for d in dummies),
        "misorders_untied": misorders,
        "dummies_above_untied": above,
        "relevant_verdicts": [by_name[n]["verdict"] for n in relevant],
        "dummy_verdicts": [by_name[n]["verdict"] for n in dummies],
    }


def _cell(
    cname: str, n: int, seeds: int, method: str, template: Path, cli: str
) -> dict[str, Any] | str:
    space, _, truth = CASES[cname]
    rows: list[dict[str, Any]] = []
    secs: list[float] = []
    models: set[str] = set()
    for seed in range(seeds):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "mlflow.db"
            shutil.copyfile(template, path)
            uri = build_store(path, cname, _case_rows(cname, n, seed))
            argv = [cli, "importance", "--tracking-uri", uri, "--experiment", cname,
                    "--target", "y", "--goal", "minimize", "--method", method,
                    "--format", "json"]  # fmt: skip
            t0 = time.perf_counter()
            res = subprocess.run(argv, capture_output=True, text=True)
            secs.append(time.perf_counter() - t0)
            if res.returncode != 0:
                return f"{cname}: lineage importance failed: {res.stderr.strip()[-300:]}"
            answer = json.loads(res.stdout)
            models.add(str(answer.get("model", "?")))
            rows.append(_check(answer, list(space), truth))
    verdicts: dict[str, dict[str, int]] = {"relevant": {}, "no_effect": {}}
    for r in rows:
        for key, group in (("relevant_verdicts", "relevant"), ("dummy_verdicts", "no_effect")):
            for v in r[key]:
                verdicts[group][v] = verdicts[group].get(v, 0) + 1
    return {
        "runs": n,
        "seeds": seeds,
        **{k: int(sum(r[k] for r in rows)) for k in _COUNTS},
        "verdicts": {k: dict(sorted(v.items())) for k, v in verdicts.items()},
        "median_seconds": round(float(np.median(secs)), 2),
        "models": sorted(models),
    }


def _template(directory: Path) -> Path:
    """An empty, migrated MLflow SQLite store, copied for every case (migrations cost seconds)."""
    from mlflow.tracking import MlflowClient

    path = directory / "template.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


def _merge(dirs: list[Path], results_dir: Path | None) -> int:
    """One result file from the files of run counts run in separate processes."""
    figures: dict[str, Any] = {}
    for d in dirs:
        figures.update(json.loads((d / "importance_truth.json").read_text())["figures"])
    figures = dict(sorted(figures.items(), key=lambda kv: int(kv[0].split(" at ")[1].split()[0])))
    seeds = sorted({row["seeds"] for row in figures.values()})
    path = write_result(
        "importance_truth",
        figures,
        store="sqlite",
        params={
            "runs": ",".join(sorted({k.split(" at ")[1].split()[0] for k in figures}, key=int)),
            "seeds": seeds[0] if len(seeds) == 1 else seeds,
            "method": "auto",
            "seed_rule": "numpy default_rng(seed), seed in range(seeds)",
            "merged_from_processes": len(dirs),
        },
        results_dir=results_dir,
    )
    print(f"result: {path}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="30,50,200", help="run counts, comma-separated")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--method", choices=["auto", "forest", "gp"], default="auto")
    ap.add_argument("--merge", nargs="+", type=Path, default=None, metavar="DIR")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    if args.merge:
        return _merge(args.merge, args.results_dir)
    cli = str(Path(sys.executable).with_name("lineage"))
    figures: dict[str, Any] = {}
    failed = False
    with tempfile.TemporaryDirectory() as d:
        template = _template(Path(d))
        for n in [int(v) for v in args.runs.split(",")]:
            for cname in CASES:
                row = _cell(cname, n, args.seeds, args.method, template, cli)
                if isinstance(row, str):
                    print(row)
                    failed = True
                    continue
                figures[f"{cname} at {n} runs"] = row
                print(
                    f"{cname:11s} runs={n:<4d} order_right={row['order_right']}/{args.seeds} "
                    f"dummies_last={row['dummies_last']}/{args.seeds} "
                    f"dummies_significant={row['dummies_significant']} "
                    f"misorders_untied={row['misorders_untied']} "
                    f"dummies_above_untied={row['dummies_above_untied']} "
                    f"median_seconds={row['median_seconds']:.2f}",
                    flush=True,
                )
    path = write_result(
        "importance_truth",
        figures,
        store="sqlite",
        params={
            "runs": args.runs,
            "seeds": args.seeds,
            "method": args.method,
            "seed_rule": "numpy default_rng(seed), seed in range(seeds)",
        },
        results_dir=args.results_dir,
    )
    print(f"result: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
