"""A trial for the placement tests: records the devices it was given, takes ``mib`` of fake
device memory (`_fake_gpu.allocate`) and, with ``say_memory``, says so through
`tuner.trial.report_memory` (as a framework's own count), then waits until the test creates
``release`` in its folder (or ``release-<trial number>``) and reports ``loss``."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _fake_gpu import allocate

params = json.loads(os.environ["TUNER_PARAMS"])
folder = Path(params["folder"])
me = f"{os.environ['TUNER_TRIAL_NUMBER']}-{os.environ['TUNER_ATTEMPT']}"
(folder / f"env-{me}.json").write_text(
    json.dumps(
        {
            k: os.environ.get(k)
            for k in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "DEVICE_ID")
        }
    )
)
if params.get("mib"):
    allocate(float(params["mib"]))
    if params.get("say_memory"):
        from tuner import trial

        trial.report_memory(float(params["mib"]) * 2**20)
mine = folder / f"release-{os.environ['TUNER_TRIAL_NUMBER']}"
while not (folder / "release").exists() and not mine.exists():
    time.sleep(0.02)  # the trial's own pace: it waits for the test's event
from tuner import trial  # noqa: E402

trial.report(0, loss=float(params.get("mib", 0)))
