"""Power and false-positive rate of ``lineage importance``'s ``significant`` flag.

For each effect size and run count, ``--reps`` replicates of synthetic runs are ranked
in-process by ``get_param_importances`` with the default evaluator (``AutoImportance``):
``lr`` (log-uniform over four decades) drives the target monotonically, with a population
Spearman correlation of about 0.8 (``strong``) or 0.5 (``moderate``), next to three
parameters without effect (``dropout``, ``seed``, ``activation``). Power is the share of
replicates in which ``lr`` is flagged significant; the false-positive rate is the share of
no-effect parameters flagged (nominal: 2.5%, the one-sided level of the 95% interval), and the
family-wise rate the share of replicates in which any of the three was flagged. Each cell also
counts the verdicts the output gives (``tune``, ``no effect``, ``cannot tell``) for ``lr`` and
for the no-effect parameters, how often ``lr``'s rank is a tie, the median "run K more"
estimate, and which model ``AutoImportance`` kept.

    python benchmarks/bench_importance_power.py [--runs 30,50,200] [--reps 100] [--effects strong]
    python benchmarks/bench_importance_power.py --merge DIR [DIR ...]

Cells can run in separate processes (``--effects``, ``--runs``, ``--results-dir DIR``) and
``--merge`` then writes the one result file from their files.

Replicate ``r`` of ``n`` runs draws from ``numpy.random.default_rng([n, r, noise * 100])``,
so a cell is the same data on every machine.

Prints one row per cell and writes ``benchmarks/results/importance_power.json``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result
from bench_importance import _cat, _int, _log, _sample, _u

SPACE = {
    "lr": _log(1e-4, 1.0),
    "dropout": _u(0.0, 0.5),
    "seed": _int(0, 10_000),
    "activation": _cat("relu", "gelu", "tanh"),
}
NO_EFFECT = ("dropout", "seed", "activation")
#: effect label -> the noise's standard deviation beside ``lr``'s standardized effect.
EFFECTS = {"strong": 0.72, "moderate": 1.6}


def _runs(n: int, rep: int, noise: float) -> tuple[list[Any], float]:
    """``n`` runs of one replicate, and the sample Spearman correlation of ``lr`` and ``y``."""
    from scipy.stats import spearmanr

    from lineage.store import RunRecord

    rng = np.random.default_rng([n, rep, int(noise * 100)])
    runs, xs, ys = [], [], []
    for i in range(n):
        p = _sample(SPACE, rng)
        # log10(lr) spans [-4, 0]: centred and scaled to unit variance before the noise.
        y = (math.log10(p["lr"]) + 2.0) / 1.1547 + noise * float(rng.normal())
        xs.append(p["lr"])
        ys.append(y)
        runs.append(
            RunRecord(run_id=f"{rep}-{i}", experiment_id="0", experiment="power", name=f"r{i}",
                      status="FINISHED", start_time=i, end_time=i,
                      params={k: str(v) for k, v in p.items()}, metrics={"y": y})
        )  # fmt: skip
    return runs, float(spearmanr(xs, ys)[0])


def _cell(n: int, reps: int, noise: float) -> dict[str, Any]:
    from lineage.importance import get_param_importances, verdict

    hits = false = any_false = lr_tied = 0
    verdicts: dict[str, dict[str, int]] = {"lr": {}, "no_effect": {}}
    more: list[int] = []
    rhos: list[float] = []
    cpus: list[float] = []
    models: dict[str, int] = {}
    for rep in range(reps):
        runs, rho = _runs(n, rep, noise)
        rhos.append(rho)
        t0 = time.process_time()
        result = get_param_importances(runs, target="y", goal="maximize")
        cpus.append(time.process_time() - t0)
        models[result.model] = models.get(result.model, 0) + 1
        sig = {q.name: q.significant for q in result.params}
        for q in result.params:  # the interval and the verdict agree, always
            assert q.significant == (q.ci[0] > 0.0), q
        hits += sig["lr"]
        false += sum(sig[k] for k in NO_EFFECT)
        any_false += any(sig[k] for k in NO_EFFECT)
        ranks = dict(zip([q.name for q in result.params], result.rank_ranges(), strict=True))
        lr_tied += ranks["lr"][0] != ranks["lr"][1]
        for q in result.params:
            group = verdicts["lr" if q.name == "lr" else "no_effect"]
            group[verdict(q)] = group.get(verdict(q), 0) + 1
        advice = result.advice()
        if advice.more_runs is not None:
            more.append(advice.more_runs)
    return {
        "runs": n,
        "replicates": reps,
        "power": round(hits / reps, 3),
        "false_positive_rate": round(false / (len(NO_EFFECT) * reps), 3),
        "no_effect_tests": len(NO_EFFECT) * reps,
        "family_wise_false_positive_rate": round(any_false / reps, 3),
        "lr_rank_tied": round(lr_tied / reps, 3),
        "verdicts": {k: dict(sorted(v.items())) for k, v in verdicts.items()},
        "median_more_runs": statistics.median(more) if more else None,
        "median_spearman": round(statistics.median(rhos), 2),
        "median_cpu_s": round(statistics.median(cpus), 2),
        "models": dict(sorted(models.items())),
    }


def _merge(dirs: list[Path], results_dir: Path | None) -> int:
    """One result file from the files of cells run in separate processes."""
    import json

    figures: dict[str, dict[str, Any]] = {}
    reps: set[int] = set()
    for d in dirs:
        part = json.loads((d / "importance_power.json").read_text())
        reps.add(part["params"]["reps"])
        for label, cells in part["figures"].items():
            figures.setdefault(label, {}).update(cells)
    for label in figures:
        figures[label] = dict(sorted(figures[label].items(), key=lambda kv: int(kv[0])))
    runs = sorted({int(n) for cells in figures.values() for n in cells})
    path = write_result(
        "importance_power",
        figures,
        store="none",
        params={
            "runs": ",".join(map(str, runs)),
            "reps": sorted(reps)[0] if len(reps) == 1 else sorted(reps),
            "seeds": "numpy default_rng([runs, replicate, noise*100])",
            "nominal_false_positive_rate": 0.025,
            "merged_from_processes": len(dirs),
        },
        results_dir=results_dir,
    )
    print(f"result: {path}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="30,50,200", help="run counts, comma-separated")
    ap.add_argument("--reps", type=int, default=100, help="replicates per cell")
    ap.add_argument("--effects", default=",".join(EFFECTS), help="effect labels, comma-separated")
    ap.add_argument("--merge", nargs="+", type=Path, default=None, metavar="DIR")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    if args.merge:
        return _merge(args.merge, args.results_dir)
    sizes = [int(v) for v in args.runs.split(",")]
    print(f"{'effect':9s} {'runs':>4s} {'power':>6s} {'FPR':>6s} {'FWER':>6s} {'rho':>5s} "
          f"{'cpu s':>6s} models")  # fmt: skip
    figures: dict[str, dict[str, Any]] = {}
    for label in args.effects.split(","):
        noise = EFFECTS[label]
        for n in sizes:
            row = _cell(n, args.reps, noise)
            figures.setdefault(label, {})[str(n)] = row
            models = ", ".join(f"{m} x{c}" for m, c in row["models"].items())
            print(
                f"{label:9s} {n:4d} {row['power']:6.2f} {row['false_positive_rate']:6.3f} "
                f"{row['family_wise_false_positive_rate']:6.3f} "
                f"{row['median_spearman']:5.2f} {row['median_cpu_s']:6.2f} {models}"
            )
            sys.stdout.flush()
    path = write_result(
        "importance_power",
        figures,
        store="none",
        params={
            "runs": args.runs,
            "reps": args.reps,
            "seeds": "numpy default_rng([runs, replicate, noise*100])",
            "nominal_false_positive_rate": 0.025,
        },
        results_dir=args.results_dir,
    )
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
