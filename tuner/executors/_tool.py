"""The one way this package asks a device tool (``nvidia-smi``, ``npu-smi``) something.

It imports only the standard library: a Ray node reads its devices' memory through it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

__all__ = ["run_tool"]


def run_tool(argv: Sequence[str], *, path: str | None = None) -> str:
    """What ``argv`` prints, or ``""`` when its tool is absent, fails or hangs (20 s).
    ``path``: the ``PATH`` to find the tool on (None: this process's), so that a Ray node
    asks the tool its trial would find."""
    found = shutil.which(argv[0], path=path)
    if found is None:
        return ""
    try:
        done = subprocess.run(
            [found, *argv[1:]], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""
