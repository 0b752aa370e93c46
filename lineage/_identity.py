"""Who, where and what produced a run: the identity tags recorded when a run starts.

Everything here is read without importing heavy frameworks: a framework's version is taken
from ``sys.modules`` when the script already imported it, else from the installed
distribution's metadata. Git is asked through a ``git`` subprocess run in the script's own
directory (not the cwd), with a short timeout; no repository, no git binary or a timeout are
recorded as such rather than failing the run. Command lines and environment values pass
through ``lineage._secrets`` before they are returned.
"""

from __future__ import annotations

import getpass
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from lineage import tags as T
from lineage._secrets import mask_argv, mask_value

# name in tags -> (module name, distribution names)
FRAMEWORKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mindspore": ("mindspore", ("mindspore", "mindspore-gpu", "mindspore-ascend")),
    "torch": ("torch", ("torch",)),
    "tensorflow": ("tensorflow", ("tensorflow", "tensorflow-cpu", "tensorflow-gpu")),
    "jax": ("jax", ("jax",)),
    "sklearn": ("sklearn", ("scikit-learn",)),
    "mlflow": ("mlflow", ("mlflow", "mlflow-skinny")),
}

# Environment variables worth keeping with a run: device placement and the launch contract.
_ENV_PREFIXES = (
    "CUDA_",
    "ASCEND_",
    "MS_",
    "TUNER_",
    "MLFLOW_",
    "LINEAGE_",
    "OMP_",
    "RANK",
    "WORLD_SIZE",
)
_ENV_NAMES = ("DEVICE_ID", "RANK_ID", "RANK_SIZE", "LOCAL_RANK", "HCCL_CONNECT_TIMEOUT")
#: The rank variables of the launchers that start one process per device (torchrun, msrun,
#: mpirun), first set wins. The tuner's trial API reads the same ones, so a callback and
#: ``tuner.trial.report`` agree on which process speaks for a multi-process trial.
RANK_VARS = ("RANK", "RANK_ID", "OMPI_COMM_WORLD_RANK")
_GIT_TIMEOUT_S = 5.0
_MAX_TAG = 8000


def launcher_rank(environ: Mapping[str, str] | None = None) -> int | None:
    """This process's rank as its launcher set it (`RANK_VARS`), None when none did. msrun's
    scheduler process (``MS_ROLE=MS_SCHED``), which runs the script too until
    ``mindspore.communication.init`` and carries ``RANK_ID=0``, is no worker: -1."""
    environ = os.environ if environ is None else environ
    if environ.get("MS_ROLE", "MS_WORKER") != "MS_WORKER":
        return -1
    for name in RANK_VARS:
        value = (environ.get(name) or "").strip()
        if value:
            return int(value) if value.isdigit() else None
    return None


def script_path(argv: Sequence[str] | None = None) -> Path | None:
    """The running script, or None for ``python -c``, a REPL or a notebook."""
    argv = sys.argv if argv is None else argv
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    candidate = main_file or (argv[0] if argv and argv[0] not in ("", "-c", "-") else None)
    if not candidate:
        return None
    path = Path(candidate)
    return path.resolve() if path.exists() else None


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_identity(directory: Path) -> dict[str, str]:
    """``lineage.git.*`` tags for the repository holding ``directory`` (``none`` outside one)."""
    commit = _git(["rev-parse", "HEAD"], directory)
    if commit is None:
        return {T.GIT_COMMIT: "none", T.GIT_DIRTY: "unknown"}
    tags = {T.GIT_COMMIT: commit, T.MLFLOW_SOURCE_GIT_COMMIT: commit}
    status = _git(["status", "--porcelain", "--untracked-files=no"], directory)
    tags[T.GIT_DIRTY] = "unknown" if status is None else str(bool(status)).lower()
    branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], directory)
    if branch and branch != "HEAD":
        tags[T.GIT_BRANCH] = branch
        tags[T.MLFLOW_SOURCE_GIT_BRANCH] = branch
    root = _git(["rev-parse", "--show-toplevel"], directory)
    if root:
        tags[T.GIT_ROOT] = root
    remote = _git(["config", "--get", "remote.origin.url"], directory)
    if remote:
        tags[T.MLFLOW_SOURCE_GIT_REPO_URL] = mask_value("url", remote)
    return tags


def framework_versions() -> dict[str, str]:
    """``{name: version}`` for the frameworks this interpreter has, without importing them."""
    found: dict[str, str] = {}
    for name, (module, dists) in FRAMEWORKS.items():
        mod = sys.modules.get(module)
        version = getattr(mod, "__version__", None) if mod is not None else None
        if not isinstance(version, str):
            version = None
            for dist in dists:
                try:
                    version = importlib.metadata.version(dist)
                    break
                except importlib.metadata.PackageNotFoundError:
                    continue
        if version:
            found[name] = version
    return found


def recorded_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables a run keeps (devices, launch contract), secrets masked."""
    environ = os.environ if environ is None else environ
    kept = {k: v for k, v in environ.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES}
    return {k: str(mask_value(k, v)) for k, v in sorted(kept.items())}


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TAG else text[: _MAX_TAG - 3] + "..."


def identity_tags(argv: Sequence[str] | None = None) -> dict[str, str]:
    """All identity tags for a run started by this process."""
    argv = list(sys.argv if argv is None else argv)
    script = script_path(argv)
    directory = script.parent if script else Path.cwd()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    command = mask_argv([sys.executable, *argv] if argv else [sys.executable])
    tags = {
        T.COMMAND: _clip(json.dumps(command)),
        T.HOST: socket.gethostname(),
        T.USER: user,
        T.PYTHON: platform.python_version(),
        T.PLATFORM: platform.platform(),
        T.PID: str(os.getpid()),
        T.CWD: str(Path.cwd()),
        T.ENV: _clip(json.dumps(recorded_environment(), separators=(",", ":"))),
        T.MLFLOW_USER: user,
        T.MLFLOW_SOURCE_TYPE: "LOCAL",
        T.MLFLOW_SOURCE_NAME: str(script) if script else (argv[0] if argv else "<interactive>"),
    }
    tags.update(git_identity(directory))
    for name, version in framework_versions().items():
        tags[T.framework_tag(name)] = version
    return tags
