"""mf-prior-bench, reached through its own interpreter.

mf-prior-bench 1.10.0 pins numpy<2, so it lives in its own environment (``python -m venv V &&
V/bin/pip install mf-prior-bench==1.10.0``) and the benchmarks talk to it through a child
process of that interpreter: `sample_curves` asks once for the curves of sampled
configurations; `Hartmann` keeps one child open and answers the curve of any configuration
(the multi-fidelity Hartmann functions ``mfh3_*`` and ``mfh6_*``, fidelity 1..100), as a
tuner asking configuration after configuration needs.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

#: The functions and the correlation variants the library ships (how well a low fidelity
#: ranks configurations the way the highest does).
TASKS = tuple(
    f"{fn}_{variant}"
    for fn in ("mfh3", "mfh6")
    for variant in ("terrible", "bad", "moderate", "good")
)

_SAMPLE = """
import json, sys, importlib.metadata as md
import mfpbench
n, seed = int(sys.argv[1]), int(sys.argv[2])
out = {"version": md.version("mf-prior-bench"), "tasks": {}}
for name in json.loads(sys.argv[3]):
    bench = mfpbench.get(name, seed=seed)
    configs = bench.sample(n=n, seed=seed)
    out["tasks"][name] = [[float(r.error) for r in bench.trajectory(c)] for c in configs]
print(json.dumps(out))
"""

# One request a line: {"task", "seed", "x": {name: value}} -> the errors at fidelity 1..100;
# {"task", "seed"} alone -> the space's names and the known optimum's error.
_SERVE = """
import json, sys, importlib.metadata as md
import mfpbench
print(json.dumps({"version": md.version("mf-prior-bench")}), flush=True)
benches = {}
for line in sys.stdin:
    ask = json.loads(line)
    key = (ask["task"], ask["seed"])
    if key not in benches:
        benches[key] = mfpbench.get(ask["task"], seed=ask["seed"])
    bench = benches[key]
    if "x" not in ask:
        names = sorted(bench.space.keys())
        best = float(bench.query(bench.optimum, at=bench.end).error)
        print(json.dumps({"names": names, "optimum": best}), flush=True)
        continue
    config = bench.Config.from_dict(ask["x"])
    print(json.dumps([float(r.error) for r in bench.trajectory(config)]), flush=True)
"""


def sample_curves(python: str, n: int, seed: int) -> tuple[str, dict[str, list[list[float]]]]:
    """The library's version, and for each task the curves (error at fidelity 1..100) of
    ``n`` configurations it samples with ``seed``."""
    out = subprocess.run(
        [python, "-c", _SAMPLE, str(n), str(seed), json.dumps(TASKS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    data = json.loads(out.stdout)
    return data["version"], data["tasks"]


class Hartmann:
    """A child of ``python`` that answers curves of the Hartmann tasks, until `close`."""

    def __init__(self, python: str) -> None:
        self._proc = subprocess.Popen(
            [python, "-c", _SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.version = str(self._read()["version"])

    def _read(self) -> Any:
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        if not line:
            raise RuntimeError(f"mf-prior-bench's process ended (exit {self._proc.poll()})")
        return json.loads(line)

    def _ask(self, request: dict[str, Any]) -> Any:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        return self._read()

    def space(self, task: str, seed: int) -> tuple[list[str], float]:
        """The task's parameter names (each in [0, 1]) and the error at its known optimum."""
        got = self._ask({"task": task, "seed": seed})
        return list(got["names"]), float(got["optimum"])

    def curve(self, task: str, seed: int, x: dict[str, float]) -> list[float]:
        """The errors of configuration ``x`` at fidelity 1..100."""
        return [float(v) for v in self._ask({"task": task, "seed": seed, "x": x})]

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)
