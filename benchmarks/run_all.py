"""Run every benchmark, one after another, so that the figures the docs show come from one commit.

Each benchmark writes its own result file (``benchmarks/results/<name>.json``, see
``_results.py``); the docs render those files. Running them all in one go, on a quiet machine,
at the sizes the committed files were measured at, is how the docs are brought up to date
after the code changes. ``--quick`` runs each at a small size into a scratch folder instead:
a smoke test of the scripts that leaves the committed figures alone.

Usage::

    python benchmarks/run_all.py --list
    python benchmarks/run_all.py                        # every benchmark, full size
    python benchmarks/run_all.py --quick                # small sizes, results to a scratch folder
    python benchmarks/run_all.py --only tuner,status    # some of them
    python benchmarks/run_all.py --skip outcome         # all but some
    python benchmarks/run_all.py --mfpbench-python ~/mfp/bin/python

Benchmarks that need a part this machine lacks are reported as ``skipped`` with the reason:
PostgreSQL at 127.0.0.1:5432 (``LT_PG_DSN`` to point elsewhere), MindSpore, PyTorch, Ray, or an
interpreter with mf-prior-bench 1.10.0 (which pins packages of its own, so it lives in a venv
of its own: ``python -m venv mfp && mfp/bin/pip install mf-prior-bench==1.10.0``). A benchmark
that accepts ``--mfpbench-python`` and is not given one runs its other tasks only.

The summary table gives each benchmark's exit status, minutes and result files; the exit
status is 1 when any benchmark failed, else 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Bench:
    """One benchmark invocation and the result files it writes."""

    name: str
    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    writes: tuple[str, ...]
    needs: tuple[str, ...] = field(default=())


#: The warm-start benchmark's tasks at full size: the four analytic ones and the two SVC ones.
OUTCOME_TASKS = (
    "quad-carry",
    "quad-mislead",
    "quad-decoy",
    "quad-constant",
    "digits-svc",
    "digits-svc-moved",
)


def _outcome(seeds: int, *methods: str) -> tuple[str, ...]:
    """The warm-start benchmark's full size for ``methods``: every task at ``seeds`` seeds,
    two (task, seed) pairs at a time."""
    return ("--tasks", *OUTCOME_TASKS, "--seeds", str(seeds), "--methods", *methods, "--jobs", "2")


#: In the order they run: quick, store-bound timings first (least disturbed), long
#: outcome studies last. ``full`` is the size the committed result files were measured at.
BENCHES: tuple[Bench, ...] = (
    Bench(
        "recording",
        "bench_recording.py",
        ("--store", "sqlite", "--store", "postgresql", "--store", "http"),
        ("--store", "sqlite", "--points", "2000", "--sample", "50"),
        ("recording_sqlite", "recording_postgresql", "recording_http"),
        ("postgres",),
    ),
    Bench(
        "query_sqlite",
        "bench_query.py",
        ("--store", "sqlite"),
        ("--store", "sqlite", "--runs", "300", "--repeat", "1", "--mlflow-repeat", "1"),
        ("query_sqlite",),
    ),
    Bench(
        "query_postgresql",
        "bench_query.py",
        ("--store", "postgresql"),
        ("--store", "postgresql", "--runs", "300", "--repeat", "1", "--mlflow-repeat", "1"),
        ("query_postgresql",),
        ("postgres",),
    ),
    Bench(
        "query_http",
        "bench_query.py",
        ("--store", "http"),
        ("--store", "http", "--runs", "300", "--repeat", "1", "--mlflow-repeat", "1"),
        ("query_http",),
        ("postgres",),
    ),
    Bench("status", "bench_status.py", (), ("--trials", "100", "--repeat", "1"), ("status",)),
    Bench("ui", "bench_ui.py", (), ("--runs", "10", "--repeat", "1"), ("ui",)),
    Bench(
        "tuner", "bench_tuner.py", (), ("--trials", "100", "--efficiency-trials", "8"), ("tuner",)
    ),
    Bench(
        "startup",
        "bench_startup.py",
        (),
        ("--trials", "2", "--campaign-trials", "3", "--efficiency-trials", "8"),
        ("bench_startup",),
    ),
    Bench(
        "load",
        "bench_load.py",
        ("--workers", "8", "--trials", "100"),
        ("--workers", "2", "--trials", "10"),
        ("load",),
        ("postgres",),
    ),
    Bench("cluster", "bench_cluster.py", (), ("--skip-ray",), ("cluster",), ("postgres", "ray")),
    Bench(
        "outage",
        "bench_outage.py",
        (),
        ("--outage", "5", "--after", "3", "--trials", "2", "--points", "30"),
        ("outage",),
        ("postgres",),
    ),
    Bench(
        "mindspore",
        "bench_mindspore.py",
        (),
        ("--epochs", "2", "--repeats", "1"),
        ("mindspore",),
        ("mindspore",),
    ),
    Bench(
        "pytorch_recording",
        "bench_pytorch_recording.py",
        ("--rounds", "8"),
        ("--epochs", "1", "--rounds", "1"),
        ("pytorch_recording",),
        ("torch",),
    ),
    Bench(
        "checkpoint",
        "bench_checkpoint.py",
        (),
        ("--trials", "2", "--epochs", "4"),
        ("checkpoint",),
        ("mindspore",),
    ),
    Bench(
        "importance",
        "bench_importance.py",
        # Every case but `noisy`: Optuna's fANOVA on its 24-level categorical runs for
        # many minutes a call (``--cases noisy`` alone measures it).
        ("--runs", "200", "--seeds", "2", "--skip-cases", "noisy"),
        ("--runs", "40", "--seeds", "1"),
        ("importance",),
    ),
    Bench(
        "importance_truth",
        "bench_importance_truth.py",
        (),
        ("--runs", "30", "--seeds", "1"),
        ("importance_truth",),
    ),
    Bench(
        "importance_power",
        "bench_importance_power.py",
        ("--reps", "50"),
        ("--runs", "30", "--reps", "2"),
        ("importance_power",),
    ),
    Bench(
        "diagnosis",
        "bench_diagnosis.py",
        (),
        ("--configs", "4", "--mlp-configs", "2", "--epochs", "5"),
        ("diagnosis",),
    ),
    Bench("schedulers", "bench_schedulers.py", (), ("--quick",), ("schedulers",), ("ray",)),
    Bench(
        "schedulers_recommended",
        "bench_schedulers.py",
        (
            "--arms",
            "tpe-none,tpe-median,tuner-bohb",
            "--result-name",
            "schedulers_recommended",
        ),
        ("--quick", "--arms", "tpe-none,tpe-median,tuner-bohb"),
        ("schedulers_recommended",),
    ),
    Bench(
        "schedulers_schedule",
        "bench_schedulers.py",
        ("--suite", "nqm", "--arms", "tpe-none,tpe-median,tuner-pbt,tuner-pbt-synch"),
        ("--suite", "nqm", "--quick"),
        ("schedulers_schedule",),
    ),
    Bench(
        "schedulers_schedule_slow",
        "bench_schedulers.py",
        (
            "--suite",
            "nqm",
            "--arms",
            "tpe-none,tuner-pbt,tuner-pbt-synch",
            "--epoch-seconds",
            "0.3",
            "--result-name",
            "schedulers_schedule_slow",
        ),
        (
            "--suite",
            "nqm",
            "--quick",
            "--arms",
            "tpe-none,tuner-pbt,tuner-pbt-synch",
            "--result-name",
            "schedulers_schedule_slow",
        ),
        ("schedulers_schedule_slow",),
    ),
    Bench(
        "schedulers_mfh",
        "bench_schedulers.py",
        ("--suite", "mfh", "--seeds", "10"),
        ("--suite", "mfh", "--seeds", "1", "--tasks", "mfh3_good", "--epochs", "300"),
        ("schedulers_mfh",),
        ("ray", "mfpbench"),
    ),
    Bench(
        "stop",
        "bench_stop.py",
        ("--rounds", "5"),
        ("--rounds", "1", "--schedulers", "none"),
        ("stop",),
    ),
    Bench("pause", "bench_pause.py", ("--trials", "24"), ("--trials", "6"), ("pause",)),
    Bench(
        "faults",
        "bench_faults.py",
        ("--race-runs", "20"),
        ("--stores", "sqlite"),
        ("faults",),
        ("postgres",),
    ),
    Bench(
        "outcome",
        "bench_outcome.py",
        _outcome(200, "tpe-cold", "tpe-warm", "tpe-warm-rank", "tuner-init"),
        ("--quick",),
        ("outcome",),
    ),
    Bench(
        "outcome_focus",
        "bench_outcome.py",
        (*_outcome(40, "tpe-cold", "tuner-init-focus"), "--result-name", "outcome_focus"),
        ("--quick", "--methods", "tpe-cold", "tuner-init-focus"),
        ("outcome_focus",),
    ),
)


def _postgres() -> str | None:
    dsn = os.environ.get("LT_PG_DSN", "")
    host, port = "127.0.0.1", 5432
    if "@" in dsn:
        where = dsn.split("@", 1)[1].split("/", 1)[0]
        host, _, p = where.partition(":")
        port = int(p or 5432)
    try:
        with socket.create_connection((host, port), timeout=2):
            return None
    except OSError as exc:
        return f"no PostgreSQL at {host}:{port} ({exc.strerror or exc})"


def _module(name: str) -> str | None:
    return None if importlib.util.find_spec(name) else f"{name} is not installed"


def missing(needs: tuple[str, ...], mfpbench: str | None = None) -> str | None:
    """Why a benchmark with these ``needs`` cannot run here, or None."""
    checks = {
        "postgres": _postgres,
        "mindspore": lambda: _module("mindspore"),
        "torch": lambda: _module("torch"),
        "ray": lambda: _module("ray"),
        "mfpbench": lambda: None if mfpbench else "no --mfpbench-python given",
    }
    for need in needs:
        why = checks[need]()
        if why:
            return why
    return None


def command(
    bench: Bench, *, quick: bool, mfpbench: str | None, results_dir: Path | None = None
) -> list[str]:
    """The command line that runs ``bench`` with this interpreter (``results_dir``: a scratch
    folder, passed to the scripts that take ``--results-dir``; the others read
    ``BENCH_RESULTS_DIR``)."""
    script = HERE / bench.script
    source = script.read_text(encoding="utf-8")
    argv = [sys.executable, str(script), *(bench.quick if quick else bench.full)]
    if mfpbench and "--mfpbench-python" in source:
        argv += ["--mfpbench-python", mfpbench]
    if results_dir is not None and "--results-dir" in source:
        argv += ["--results-dir", str(results_dir)]
    return argv


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return -1.0


def _select(names: str | None, skip: str | None) -> list[Bench]:
    known = {b.name for b in BENCHES}
    wanted = [n for n in (names or "").split(",") if n]
    dropped = [n for n in (skip or "").split(",") if n]
    unknown = sorted(set(wanted + dropped) - known)
    if unknown:
        raise ValueError(
            f"--only/--skip: unknown benchmark {', '.join(unknown)}; "
            f"known: {', '.join(b.name for b in BENCHES)}"
        )
    return [b for b in BENCHES if (not wanted or b.name in wanted) and b.name not in dropped]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, to a scratch folder")
    ap.add_argument("--only", help="comma-separated benchmark names (see --list)")
    ap.add_argument("--skip", help="comma-separated benchmark names to leave out")
    ap.add_argument("--list", action="store_true", help="print the benchmarks and exit")
    ap.add_argument("--mfpbench-python", help="interpreter with mf-prior-bench==1.10.0")
    ap.add_argument("--logs", type=Path, default=None, help="folder for each run's output")
    ap.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per benchmark")
    args = ap.parse_args(argv)
    try:
        benches = _select(args.only, args.skip)
    except ValueError as exc:
        print(f"run_all.py: error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for b in benches:
            print(f"{b.name:18} {b.script:28} writes {', '.join(b.writes)}")
        return 0

    env = dict(os.environ)
    # Trials started by a benchmark's campaigns run `python` from PATH (as a user's config
    # does): put this interpreter's folder first, so they get its packages without an
    # activated virtual environment.
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    results_dir = HERE / "results"
    if args.quick:
        results_dir = Path(tempfile.mkdtemp(prefix="bench-quick-"))
        env["BENCH_RESULTS_DIR"] = str(results_dir)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="bench-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"results: {results_dir}\nlogs:    {logs}", flush=True)

    rows: list[tuple[str, str, float, str]] = []
    for bench in benches:
        why = missing(bench.needs, args.mfpbench_python)
        if why:
            rows.append((bench.name, "skipped", 0.0, why))
            print(f"- {bench.name}: skipped ({why})", flush=True)
            continue
        argv_ = command(
            bench,
            quick=args.quick,
            mfpbench=args.mfpbench_python,
            results_dir=results_dir if args.quick else None,
        )
        print(f"- {bench.name}: {' '.join(argv_[1:])}", flush=True)
        started = time.monotonic()
        before = {w: _mtime(results_dir / f"{w}.json") for w in bench.writes}
        log = logs / f"{bench.name}.log"
        # Each benchmark runs in a scratch folder beside its log: MLflow puts the artifacts of
        # a SQLite store's new experiments under ./mlruns, which stays out of the checkout.
        work = logs / "work" / bench.name
        work.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            try:
                rc = subprocess.run(
                    argv_,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=work,
                    timeout=args.timeout,
                    check=False,
                ).returncode
                status = "ok" if rc == 0 else f"exit {rc}"
            except subprocess.TimeoutExpired:
                status = f"timed out after {args.timeout:.0f} s"
        minutes = (time.monotonic() - started) / 60
        written = [w for w in bench.writes if _mtime(results_dir / f"{w}.json") > before[w]]
        if status == "ok" and len(written) < len(bench.writes):
            status = "no result"
        rows.append((bench.name, status, minutes, ", ".join(written) or f"see {log}"))
        print(f"  {status} in {minutes:.1f} min", flush=True)

    print()
    width = max(len(r[0]) for r in rows) if rows else 4
    for name, status, minutes, detail in rows:
        print(f"{name:{width}}  {status:12}  {minutes:6.1f} min  {detail}")
    return 1 if any(r[1] not in ("ok", "skipped") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
