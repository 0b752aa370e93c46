"""One opener of a store for the race tests: imports what it needs, says it is ready, waits
for the start signal, then opens the store the way its entry point does.

argv: READY_FILE GO_FILE KIND ARGS...

- ``plain URI``: a script that only uses plain ``mlflow`` (a run with one metric);
- ``start_run URI``: ``lineage.start_run`` (a run with a param and a metric);
- ``lineage ARGS...``: the ``lineage`` command line, in this process;
- ``tuner ARGS...``: the ``tuner`` command line, in this process;
- ``optuna URL``: the tuner's Optuna storage and a study in it.

Exits with the opener's own status.
"""

from __future__ import annotations

import os
import sys
import time

ready, go, kind, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
if kind in ("plain", "start_run", "lineage"):
    import mlflow  # paid before the start, so that the opens meet
if kind == "start_run":
    import lineage
if kind == "lineage":
    from lineage.cli import main as lineage_main
if kind == "tuner":
    from tuner.cli import main as tuner_main
if kind == "optuna":
    import optuna

    from tuner.search import create_rdb

open(ready, "w").close()
deadline = time.monotonic() + 600
while not os.path.exists(go):  # the test creates it once every opener is ready
    if time.monotonic() > deadline:
        raise SystemExit("no start signal")
    time.sleep(0.005)

if kind == "plain":
    mlflow.set_tracking_uri(args[0])
    with mlflow.start_run():
        mlflow.log_metric("m", 1.0)
    code = 0
elif kind == "start_run":
    with lineage.start_run(tracking_uri=args[0], params={"a": 1}) as run:
        run.log_metric("m", 1.0, step=0)
    code = 0
elif kind == "lineage":
    code = lineage_main(args)
elif kind == "tuner":
    code = tuner_main(args)
elif kind == "optuna":
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(storage=create_rdb(args[0]), study_name="race", load_if_exists=True)
    code = 0
else:
    raise SystemExit(f"unknown opener {kind!r}")
sys.exit(code)
