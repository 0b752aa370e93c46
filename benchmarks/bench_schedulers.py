"""Epochs to a target: the tuner's schedulers beside Optuna's pruners and Ray Tune's schedulers.

One training for every arm (``_schedulers_train.py``: an MLP on scikit-learn's digits, 500
training images, SGD; ``lr``, ``momentum``, ``weight_decay``, ``hidden`` tuned; at most
``--max-epochs`` epochs a trial), two trials at a time, ``--seeds`` campaigns per arm, each
stopped at an epoch budget of ``--budget-trainings`` x ``--max-epochs`` epochs:

- ``tpe-none``: TPE, every trial trained to the end (``pruner: none``);
- ``tpe-median``: TPE + ``MedianPruner`` (the tuner's default);
- ``tpe-sha``: TPE + Optuna's ``SuccessiveHalvingPruner`` (decides once per rung, kills);
- ``tuner-asha``: ``scheduler: asha`` with promotion (pauses, later resumes from checkpoint);
- ``tuner-hyperband``: the same with ``brackets: 3`` (capped at the rungs there are);
- ``tuner-bohb``: the same with ``model: rung`` (the sampler fitted at a rung), the
  scheduler the schedulers guide recommends;
- ``tuner-pbt``: ``scheduler: pbt``;
- ``tuner-pbt-synch``: the same with ``synch: true`` (members decide together at each
  multiple of the interval, each paused there until all have reached it);
- ``ray-asha``: Ray Tune's ``ASHAScheduler`` with ``OptunaSearch`` (TPE);
- ``ray-pbt``: Ray Tune's ``PopulationBasedTraining``.

Epochs are counted from what the trials trained (each epoch appends a line to a counter
file), in the order they ended. The target is the median over seeds of ``tpe-none``'s best
validation accuracy within the budget (with an even number of seeds the lower of the two
middle ones, so that the median seed reaches it). Per arm: epochs and training CPU-seconds until the
campaign's first epoch at or above the target (median over seeds, a seed that never reaches
it counting as infinitely many; and how many reach it), the best accuracy within the budget
(median), the processes that resumed from a checkpoint (promotions, exploits) and campaign
wall time. Ratios: epochs to the target over ``tpe-median``'s and ``tpe-none``'s; the issue's
goals, met or not.

    python benchmarks/bench_schedulers.py [--seeds 5] [--arms tpe-none,ray-asha] [--quick]

``--result-name`` writes ``benchmarks/results/<name>.json`` instead (a run of some arms
beside the full file: ``schedulers_recommended``, the recommended arm with its references).

``--suite nqm`` runs the same campaigns on a training whose best learning rate changes as it
trains (``_schedulers_nqm.py``: SGD on the noisy quadratic model, ``lr`` and ``momentum``
tuned, a score in decades of loss reduction maximised; 30 epochs a trial, a budget of 10
trainings, a PBT population of 10, epochs of 0.05 s), by default ``tpe-none``, ``tpe-median``
and ``tuner-pbt`` at 10 seeds, and writes ``benchmarks/results/schedulers_schedule.json``.
Its goals add whether PBT's best scores are significantly below or above ``tpe-none``'s
(one-sided Mann-Whitney U over the seeds, p < 0.05), and its figures an untuned reference
(``_schedulers_nqm.reference``: the best fixed ``lr`` and the best decaying schedules). Its
traces are kept in a folder of ``--traces`` per setting, so runs at other settings keep them.

``--suite mfh --mfpbench-python PY`` runs the multi-fidelity Hartmann tasks of mf-prior-bench
instead (``_schedulers_mfh.py``: every arm in this process, one trial at a time, an equal
budget of ``--epochs`` epochs; ``PY``: an interpreter with mf-prior-bench==1.10.0) and writes
``benchmarks/results/schedulers_mfh.json``: per task and arm the median regret at the budget,
the epochs to reach the default's median regret, and whether an arm's regrets are
significantly above the default's (one-sided Mann-Whitney U, p < 0.05).

A campaign's counted epochs are kept in ``--traces`` (one JSON file per arm and seed) and
reused by a later run with the same settings and the same package code
(``_results.code_identity``), so an interrupted run continues and a run on changed code
measures afresh. Writes
``benchmarks/results/schedulers.json`` (``--quick`` writes nothing unless ``--results-dir``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _mfpbench
import _schedulers_mfh
import _schedulers_mfh_summary
import _schedulers_tuner
from _results import code_identity, write_result
from _schedulers_counter import read_counter

HERE = Path(__file__).resolve().parent

ARMS = (
    "tpe-none",
    "tpe-median",
    "tpe-sha",
    "tuner-asha",
    "tuner-hyperband",
    "tuner-bohb",
    "tuner-pbt",
    "tuner-pbt-synch",
    "ray-asha",
    "ray-pbt",
)
TUNER_SCHEDULERS = ("tuner-asha", "tuner-hyperband", "tuner-bohb", "tuner-pbt", "tuner-pbt-synch")
#: The PBT arms, each with the prefix of its goals' names.
PBT_ARMS = {"tuner-pbt": "pbt", "tuner-pbt-synch": "pbt_synch"}
BASELINE, PRUNED = "tpe-none", "tpe-median"
#: Per suite of tuner campaigns: the defaults its options take when not given.
SUITE_DEFAULTS: dict[str, dict[str, Any]] = {
    "digits": {
        "seeds": 5,
        "arms": ",".join(ARMS),
        "max_epochs": 27,
        "budget_trainings": 12,
        "epoch_seconds": 0.2,
        "population": 12,
        "interval": 3,
        "result_name": "schedulers",
    },
    "nqm": {
        "seeds": 10,
        "arms": "tpe-none,tpe-median,tuner-pbt",
        "max_epochs": 30,
        "budget_trainings": 10,
        "epoch_seconds": 0.05,
        "population": 10,
        "interval": 3,
        "result_name": "schedulers_schedule",
    },
}
#: What each suite's training reports (maximised), as the result file names it.
METRICS = {"digits": "val_accuracy", "nqm": "score"}
RAY_NOTE = (
    "Ray Tune's arms run on a local Ray started with 2 CPUs: Ray 2.60 refuses local mode "
    "(`ray.init(local_mode=True)`: 'local_mode is no longer supported')."
)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """What a campaign depends on: traces with other settings are not reused."""
    out = {
        "max_epochs": args.max_epochs,
        "budget": args.budget_trainings * args.max_epochs,
        "epoch_seconds": args.epoch_seconds,
        "min_resource": args.min_resource,
        "population": args.population,
        "interval": args.interval,
    }
    # The package code is part of them: a trace of other code never counts for this one.
    out["code"] = code_identity()
    return out | ({"task": args.suite} if args.suite != "digits" else {})


def _scheduler_missing(arm: str) -> str | None:
    """Why a tuner ``scheduler:`` arm cannot run here, or None when it can."""
    name = {"tuner-hyperband": "asha", "tuner-bohb": "asha", "tuner-pbt-synch": "pbt"}.get(
        arm, arm.removeprefix("tuner-")
    )
    try:
        import tuner.schedulers as schedulers
    except ImportError:
        return "this tuner has no schedulers"
    # A scheduler is there when tuner.schedulers exports its class (Asha, Pbt...).
    there = {
        value.__name__.lower()
        for value in vars(schedulers).values()
        if isinstance(value, type) and issubclass(value, schedulers.Scheduler)
    }
    return None if name in there else f"this tuner has no `scheduler: {name}` yet"


def _ray_missing() -> str | None:
    try:
        import ray.tune
        import ray.tune.search.optuna  # noqa: F401
    except ImportError as exc:
        return f"Ray Tune cannot be imported ({exc}); pip install -e '.[ray]'"
    return None


def _run_ray(arm: str, seed: int, opts: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    with tempfile.TemporaryDirectory(prefix=f"bench-sched-{arm}-") as tmp:
        counter = Path(tmp) / "counter.jsonl"
        env = dict(os.environ, BENCH_COUNTER=str(counter))
        env["BENCH_EPOCH_SECONDS"] = str(opts["epoch_seconds"])
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(HERE / "_schedulers_ray.py"), arm, str(seed), json.dumps(opts)],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        rows = read_counter(counter)
        if done.returncode != 0 or not rows:
            raise RuntimeError(f"{arm} seed {seed}: exit {done.returncode}\n{done.stderr[-2000:]}")
        return rows, wall


def _continuations(rows: list[dict[str, Any]]) -> int:
    """Epochs trained from a checkpoint rather than from the epoch before in that process: a
    promotion, a PBT exploit (a process that trains several trials starts each at 1)."""
    last: dict[int, int] = {}
    count = 0
    for row in rows:
        if row["epoch"] > 1 and last.get(row["pid"]) != row["epoch"] - 1:
            count += 1
        last[row["pid"]] = row["epoch"]
    return count


def _campaign(arm: str, seed: int, opts: dict[str, Any], traces: Path) -> dict[str, Any]:
    """One campaign's trace: ``[[accuracy, cpu_s], ...]`` per counted epoch, in order."""
    path = traces / f"{arm}-{seed}.json"
    if path.exists():
        trace = json.loads(path.read_text())
        if trace.get("settings") == opts:
            return dict(trace)
    runner = _run_ray if arm.startswith("ray-") else _schedulers_tuner.run
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows, wall = runner(arm, seed, opts)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    trace = {
        "settings": opts,
        "arm": arm,
        "seed": seed,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_s": round(wall, 1),
        "process_cpu_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1),
        "epochs": [[round(r["acc"], 5), round(r["cpu"], 5)] for r in rows[: opts["budget"]]],
        "continuations": _continuations(rows[: opts["budget"]]),
    }
    traces.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace))
    return trace


def _to_target(epochs: list[list[float]], target: float) -> tuple[int, float] | None:
    cpu = 0.0
    for i, (accuracy, seconds) in enumerate(epochs, 1):
        cpu += seconds
        if accuracy >= target - 1e-9:
            return i, cpu
    return None


def _summary(traces: dict[str, list[dict[str, Any]]], target: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for arm, runs in traces.items():
        reached = [r for r in (_to_target(t["epochs"], target) for t in runs) if r]
        missed = [math.inf] * (len(runs) - len(reached))  # a seed that never reaches it
        epochs = statistics.median([e for e, _ in reached] + missed)
        cpu = statistics.median([c for _, c in reached] + missed)
        bests = [max(a for a, _ in t["epochs"]) for t in runs]
        out[arm] = {
            "seeds": len(runs),
            "seeds_reaching_target": len(reached),
            # Over every seed, one that misses counting as infinitely many: None when the
            # median seed misses.
            "median_epochs_to_target": None if math.isinf(epochs) else epochs,
            "median_cpu_s_to_target": None if math.isinf(cpu) else round(cpu, 2),
            # The suite's metric (val_accuracy on digits, the score on nqm).
            "median_best_accuracy": round(statistics.median(bests), 4),
            "best_per_seed": [round(b, 4) for b in bests],
            "epochs_trained": round(statistics.median(len(t["epochs"]) for t in runs)),
            "median_continuations": statistics.median(t["continuations"] for t in runs),
            "median_campaign_wall_s": round(statistics.median(t["wall_s"] for t in runs), 1),
            "measured": f"{min(t['date'] for t in runs)} to {max(t['date'] for t in runs)}",
        }
    for ref in (PRUNED, BASELINE):
        base = (out.get(ref) or {}).get("median_epochs_to_target")
        for row in out.values():
            mine = row["median_epochs_to_target"]
            row[f"epochs_ratio_to_{ref}"] = round(mine / base, 3) if mine and base else None
    return out


def _goals(summary: dict[str, Any]) -> dict[str, Any]:
    """The issue's goals, as measured: each with the figures it compares and whether it holds."""
    ratios = {
        arm: summary[arm][f"epochs_ratio_to_{PRUNED}"] for arm in TUNER_SCHEDULERS if arm in summary
    }
    goals: dict[str, Any] = {}
    if PRUNED in summary:  # else there is nothing to hold the schedulers' epochs against
        goals["asha_or_pbt_epochs_at_most_half_of_tpe_median"] = ratios | {
            "met": any(r is not None and r <= 0.5 for r in ratios.values())
        }
    for arm, name in PBT_ARMS.items():
        if arm not in summary:
            continue
        pbt = summary[arm]["median_best_accuracy"]
        tpe = summary[BASELINE]["median_best_accuracy"]
        goals[f"{name}_best_at_least_tpe_none"] = {arm: pbt, BASELINE: tpe, "met": pbt >= tpe}
        mine, theirs = (summary[a].get("best_per_seed") for a in (arm, BASELINE))
        if mine and theirs and min(len(mine), len(theirs)) >= 3:
            from scipy.stats import mannwhitneyu

            below = float(mannwhitneyu(mine, theirs, alternative="less").pvalue)
            above = float(mannwhitneyu(mine, theirs, alternative="greater").pvalue)
            # Not significantly below TPE's bests (one-sided Mann-Whitney U over the seeds).
            goals[f"{name}_bests_not_significantly_below_tpe_none"] = {
                "p_below": round(below, 4),
                "p_above": round(above, 4),
                "met": below >= 0.05,
            }
    return goals


def _print(summary: dict[str, Any], target: float, budget: int, metric: str) -> None:
    print(f"target: {metric} >= {target:.4f} (median best of {BASELINE}); budget {budget}")
    head = f"{'arm':11} {'reach':>5} {'epochs':>7} {'cpu s':>7} {'best':>7} {'wall s':>7}"
    print(f"{head} {'/median':>8} {'/none':>6}")

    def cell(v: Any, fmt: str) -> str:
        width = int(fmt.split(".")[0].rstrip("gf") or 0)
        return f"{'-':>{width}}" if v is None else format(v, fmt)

    for arm, row in summary.items():
        reach = f"{row['seeds_reaching_target']}/{row['seeds']}"
        print(
            f"{arm:11} {reach:>5} {cell(row['median_epochs_to_target'], '7g')} "
            f"{cell(row['median_cpu_s_to_target'], '7.2f')} {row['median_best_accuracy']:7.4f} "
            f"{row['median_campaign_wall_s']:7.1f} "
            f"{cell(row[f'epochs_ratio_to_{PRUNED}'], '8.2f')} "
            f"{cell(row[f'epochs_ratio_to_{BASELINE}'], '6.2f')}"
        )


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Defaults of None: the suite's (SUITE_DEFAULTS).
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--arms", default=None, help="comma-separated; default: the suite's")
    ap.add_argument("--max-epochs", type=int, default=None)
    ap.add_argument("--budget-trainings", type=int, default=None, help="budget / max epochs")
    ap.add_argument("--epoch-seconds", type=float, default=None, help="an epoch's least wall")
    ap.add_argument("--min-resource", type=int, default=3, help="first rung (epochs)")
    ap.add_argument("--population", type=int, default=None, help="PBT members")
    ap.add_argument("--interval", type=int, default=None, help="PBT epochs between exploits")
    ap.add_argument("--traces", type=Path, default=Path(tempfile.gettempdir()) / "bench-sched")
    ap.add_argument("--quick", action="store_true", help="1 seed, 9 epochs, budget 4 trainings")
    ap.add_argument("--results-dir", type=Path, default=None)
    ap.add_argument("--result-name", default=None, help="the result file's name (no .json)")
    ap.add_argument("--suite", choices=("digits", "nqm", "mfh"), default="digits")
    ap.add_argument("--mfpbench-python", help="--suite mfh: interpreter with mf-prior-bench")
    ap.add_argument("--tasks", default=",".join(_mfpbench.TASKS), help="--suite mfh")
    ap.add_argument("--epochs", type=int, default=2000, help="--suite mfh: the epoch budget")
    ap.add_argument("--first-seed", type=int, default=0, help="--suite mfh: start here")
    ap.add_argument(
        "--traces-only",
        action="store_true",
        help="--suite mfh: run nothing; summarize the traces there are, each arm its seeds",
    )
    ap.add_argument("--brackets", type=int, default=3, help="--suite mfh: tuner's brackets")
    ap.add_argument("--recommend", default="tuner-bohb", help="--suite mfh: goals' arm")
    args = ap.parse_args(argv)
    for key, value in SUITE_DEFAULTS.get(args.suite, SUITE_DEFAULTS["digits"]).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.quick:
        args.seeds, args.max_epochs, args.budget_trainings = 1, 9, 4
        args.min_resource, args.population, args.epoch_seconds = 1, 4, 0.02
    return args


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds through each campaign's cleanup


def _mfh_trace(
    traces: Path, task: str, arm: str, seed: int, opts: dict[str, Any]
) -> dict[str, Any] | None:
    path = traces / "mfh" / f"{task}-{arm}-{seed}.json"
    trace = json.loads(path.read_text()) if path.exists() else None
    return trace if trace is not None and trace["settings"] == opts else None


def _mfh_run(
    traces: Path, task: str, arm: str, seed: int, opts: dict[str, Any], bench: Any
) -> dict[str, Any]:
    started = time.perf_counter()
    full = _schedulers_mfh.run(arm, task, seed, opts, bench)
    trace = {
        "settings": opts,
        "full": full,
        "optimum": bench.space(task, seed)[1],
        "wall_s": round(time.perf_counter() - started, 1),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    path = traces / "mfh" / f"{task}-{arm}-{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace))
    return trace


def _mfh(args: argparse.Namespace) -> int:
    """``--suite mfh``: every arm on every task and seed; traces kept in ``--traces``."""
    if not args.mfpbench_python:
        raise SystemExit("--suite mfh: --mfpbench-python: needs an interpreter with mf-prior-bench")
    import optuna
    import ray

    opts = {
        "budget": args.epochs,
        "min_resource": 1,
        "brackets": args.brackets,
        "ray_brackets": 3,
        "code": code_identity(),
    }
    arms = [a for a in args.arms.split(",") if a] if args.arms != ",".join(ARMS) else None
    arms = arms or list(_schedulers_mfh.ARMS)
    tasks = [t for t in args.tasks.split(",") if t]
    bench = _mfpbench.Hartmann(args.mfpbench_python)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for seed in range(args.first_seed, args.seeds):  # an interrupted run has every arm
            for task in tasks:
                found = {arm: _mfh_trace(args.traces, task, arm, seed, opts) for arm in arms}
                for arm in arms:
                    trace = found[arm]
                    if trace is None and args.traces_only:
                        continue  # each arm counts the seeds it ran
                    trace = trace or _mfh_run(args.traces, task, arm, seed, opts, bench)
                    runs.setdefault(task, {}).setdefault(arm, []).append(trace)
            print(f"seed {seed} done", flush=True)
    finally:
        bench.close()
    summary = _schedulers_mfh_summary.summarize(runs)
    _schedulers_mfh_summary.print_table(summary)
    goals = _schedulers_mfh_summary.goals(summary, args.recommend)
    for goal, row in goals.items():
        print(f"goal {goal}: {row}")
    if args.quick and args.results_dir is None:
        return 0
    dates = sorted(t["date"] for arms_ in runs.values() for ts in arms_.values() for t in ts)
    path = write_result(
        "schedulers_mfh",
        {"epoch_budget": args.epochs, "tasks": summary, "goals": goals},
        store="none",
        params={
            "seeds": args.seeds,
            "seeds_run": {task: {a: len(t) for a, t in r.items()} for task, r in runs.items()},
            "arms": ",".join(arms),
            "tasks": ",".join(tasks),
        }
        | opts,
        notes=(
            f"The campaigns ran from {dates[0]} to {dates[-1]}. Library versions: "
            f"mf-prior-bench {bench.version}, optuna {optuna.__version__}, ray {ray.__version__}. "
            "Regret: the best full-fidelity error found minus the error at the function's "
            "known optimum. ray-hyperband: Ray Tune's HyperBandScheduler driven as Tune's "
            "controller drives it with one trial running and one suggested trial pending; its "
            "first bracket (5 trials to max_t) then never fills, since a trial leaves it when "
            "it finishes, so every trial trains to max_t."
            + (
                " Summarized from kept traces (--traces-only), which campaigns in several "
                "processes wrote: each arm counts the seeds it finished (seeds_run)."
                if args.traces_only
                else ""
            )
        ),
        results_dir=args.results_dir,
    )
    print(f"result: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    args = _parse(argv)
    if args.suite == "mfh":
        return _mfh(args)
    opts = _settings(args)
    arms = [a for a in args.arms.split(",") if a]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown or BASELINE not in arms:
        raise SystemExit(f"--arms: unknown {unknown} or no {BASELINE} (the target's source)")
    skipped: dict[str, str] = {}
    for arm in arms:
        why = _scheduler_missing(arm) if arm in TUNER_SCHEDULERS else None
        why = why or (_ray_missing() if arm.startswith("ray-") else None)
        if why:
            skipped[arm] = why
            print(f"skipping {arm}: {why}", flush=True)
    traces: dict[str, list[dict[str, Any]]] = {}
    kept = args.traces
    if args.suite != "digits":  # a folder per setting: another setting's run keeps these
        digest = hashlib.sha1(json.dumps(opts, sort_keys=True).encode()).hexdigest()[:8]
        kept = args.traces / f"{args.suite}-{digest}"
    for arm in (a for a in arms if a not in skipped):
        for seed in range(args.seeds):
            try:
                trace = _campaign(arm, seed, opts, kept)
            except RuntimeError as exc:
                skipped[arm] = str(exc).splitlines()[0]
                print(f"{arm} failed: {exc}", flush=True)
                traces.pop(arm, None)
                break
            traces.setdefault(arm, []).append(trace)
            best = max(a for a, _ in trace["epochs"])
            print(f"{arm} seed {seed}: best {best:.4f} in {trace['wall_s']} s", flush=True)
    target = statistics.median_low(max(a for a, _ in t["epochs"]) for t in traces[BASELINE])
    summary = _summary(traces, target)
    metric = METRICS[args.suite]
    _print(summary, target, opts["budget"], metric)
    goals = _goals(summary)
    for goal, row in goals.items():
        print(f"goal {goal}: {row}")
    if args.quick and args.results_dir is None:
        return 0
    figures: dict[str, Any] = {f"target_{metric}": round(target, 4)}
    figures |= {"epoch_budget": opts["budget"]}
    if args.suite != "digits":
        figures["metric"] = metric
    if args.suite == "nqm":
        import _schedulers_nqm

        figures["reference"] = _schedulers_nqm.reference(args.max_epochs)
    figures |= {"arms": summary, "goals": goals}
    if skipped:
        figures["not_run"] = skipped
    dates = sorted(t["date"] for runs in traces.values() for t in runs)
    path = write_result(
        args.result_name,
        figures,
        store="sqlite",
        params={"seeds": args.seeds, "arms": ",".join(arms)} | opts,
        # A run that reused earlier campaigns' traces says when they ran (per arm: measured).
        notes=f"The campaigns ran from {dates[0]} to {dates[-1]}."
        + (f" {RAY_NOTE}" if any(arm.startswith("ray-") for arm in traces) else ""),
        results_dir=args.results_dir,
    )
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
