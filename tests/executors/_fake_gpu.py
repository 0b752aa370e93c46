"""A fake CUDA driver for placement tests on a machine without GPUs.

`install` writes an ``nvidia-smi`` into a folder to put first on ``PATH``. It answers ``-L``,
``--query-gpu=index,uuid,memory.total,memory.used`` and
``--query-compute-apps=pid,used_memory`` (counting these queries in ``queries``, for a
trial to wait on) from a state folder: ``gpus.json`` (the devices and
their sizes in MiB) and one file per "allocating" process, ``procs/<pid>`` holding
``<device> <MiB>``, written by `allocate` in a trial. A process that has ended holds nothing.
`allocate` fails as CUDA does when the device's live processes would hold more than its size
(and leaves ``oom-<pid>`` in the state folder, for a test to wait on). Installed with
``hide_pids``, it lists no process (as in a container that hides the host's process ids),
while each device's used memory still counts them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

__all__ = ["allocate", "held_by_others", "install", "wait_measured"]

STATE = "FAKE_GPU_STATE"

SMI = """#!{python}
import json, os, sys
state = {state!r}
gpus = json.load(open(os.path.join(state, "gpus.json")))
def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie holds no memory
        return open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
procs = []
for name in os.listdir(os.path.join(state, "procs")):
    if name.startswith("."):
        continue
    device, mib = open(os.path.join(state, "procs", name)).read().split()
    if alive(int(name)):
        procs.append((int(name), device, float(mib)))
args = sys.argv[1:]
if args == ["-L"]:
    for g in gpus:
        print(f"GPU {{g['index']}}: NVIDIA Fake (UUID: {{g['uuid']}})")
        for m in g.get("mig", []):
            print(f"  MIG {{m['profile']}}     Device  {{m['n']}}: (UUID: {{m['uuid']}})")
elif args and args[0].startswith("--query-gpu"):
    for g in gpus:
        used = sum(m for _, d, m in procs if d in (str(g["index"]), g["uuid"]))
        print(f"{{g['index']}}, {{g['uuid']}}, {{g['total']}}, {{used:.0f}}")
elif args and args[0].startswith("--query-compute-apps"):
    with open(os.path.join(state, "queries"), "a") as fh:
        fh.write("q\\n")
    for pid, _, mib in procs:
        if not os.path.exists(os.path.join(state, "hide-pids")):
            print(f"{{pid}}, {{mib:.0f}}")
else:
    sys.exit(2)
"""


def install(
    folder: Path, gpus: list[dict[str, object]], *, hide_pids: bool = False
) -> tuple[Path, Path]:
    """A fake driver for ``gpus`` (``{"index", "uuid", "total", "mig"?}``): its ``bin``
    folder and its state folder."""
    state = folder / "gpu-state"
    (state / "procs").mkdir(parents=True, exist_ok=True)
    if hide_pids:
        (state / "hide-pids").touch()
    (state / "gpus.json").write_text(json.dumps(gpus))
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(SMI.format(python=sys.executable, state=str(state)))
    smi.chmod(0o755)
    return bin_dir, state


def held_by_others() -> float:
    """MiB the other live processes hold on this process's device."""
    state = Path(os.environ[STATE])
    device = os.environ["CUDA_VISIBLE_DEVICES"]
    held = 0.0
    for entry in (state / "procs").iterdir():
        if entry.name.startswith("."):
            continue
        other, used = entry.read_text().split()
        pid = int(entry.name)
        if other == device and pid != os.getpid() and Path(f"/proc/{pid}").exists():
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            held += float(used) if stat[0] != "Z" else 0.0
    return held


def _queries(state: Path) -> int:
    try:
        return len((state / "queries").read_text().splitlines())
    except FileNotFoundError:
        return 0


def wait_measured() -> None:
    """In a trial that allocated: return once the driver was asked for the processes' memory
    twice since (so the executor has seen this process hold it)."""
    state = Path(os.environ[STATE])
    start = _queries(state)
    while _queries(state) < start + 2:
        time.sleep(0.02)


def allocate(mib: float) -> None:
    """In a trial: take ``mib`` on the device ``CUDA_VISIBLE_DEVICES`` names, or fail with
    CUDA's out-of-memory message (exit 1) when it does not fit beside the others."""
    state = Path(os.environ[STATE])
    device = os.environ["CUDA_VISIBLE_DEVICES"]
    gpus = json.loads((state / "gpus.json").read_text())
    total = next(float(g["total"]) for g in gpus if device in (str(g["index"]), g["uuid"]))
    held = held_by_others()
    if held + mib > total:
        (state / f"oom-{os.getpid()}").touch()
        print(
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {mib:.0f} MiB "
            f"(GPU {device}; {total:.0f} MiB total capacity; {held:.0f} MiB already allocated)",
            file=sys.stderr,
        )
        sys.exit(1)
    tmp = state / "procs" / f".{os.getpid()}"
    tmp.write_text(f"{device} {mib}")
    tmp.rename(state / "procs" / str(os.getpid()))
