"""A trial that reports the state it found, then dirties every kind of state it can.

argv: ``OUT [--sleep S]``. Writes to OUT (JSON) what a previous trial could have leaked:
a module global, an attribute on an imported module, MindSpore's context, an environment
variable; then sets all of them, runs one MindSpore op, and sleeps S seconds.
"""

from __future__ import annotations

import json
import os
import sys
import time

import mindspore
import numpy as np

import lineage

LEAK = "clean"

seen = {
    "global": LEAK,
    "module_attr": getattr(lineage, "_leaked_by_a_trial", None),
    "context_mode": mindspore.get_context("mode"),
    "env": os.environ.get("WARM_TRIAL_LEAK"),
    "pid": os.getpid(),
    "ppid": os.getppid(),
    "argv": sys.argv[1:],
    "mindspore_loaded_before_main": True,
}
LEAK = "dirty"
lineage._leaked_by_a_trial = True  # type: ignore[attr-defined]
mindspore.set_context(mode=mindspore.PYNATIVE_MODE if seen["context_mode"] == 0 else 0)
os.environ["WARM_TRIAL_LEAK"] = "dirty"
seen["op"] = float(mindspore.Tensor(np.ones(3, np.float32)).sum().asnumpy())
with open(sys.argv[1], "w") as f:
    json.dump(seen, f)
if "--sleep" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
