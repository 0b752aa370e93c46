"""The import contracts in pyproject.toml fail on what they forbid (`lint-imports` in CI)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


@pytest.mark.slow
def test_an_underscore_module_imported_from_outside_its_package_breaks_the_contract(
    tmp_path: Path,
) -> None:
    for package in ("tuner", "lineage"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(LINT_IMPORTS), "--no-cache", "--contract", "private-modules"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    kept = check()
    assert kept.returncode == 0, kept.stdout + kept.stderr

    # The same name through the package's __init__ is what the contract asks for; the
    # underscore module itself, even inside a function, is not.
    derive = tmp_path / "tuner" / "history" / "_derive.py"
    derive.write_text(
        derive.read_text(encoding="utf-8")
        + "\n\ndef _planted() -> None:\n    from tuner.search._study import create_rdb  # noqa: F401\n",
        encoding="utf-8",
    )
    broken = check()
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "tuner.history._derive -> tuner.search._study" in broken.stdout, broken.stdout


def _lazy_packages() -> list[str]:
    """Packages whose __init__ loads some of its names on first use (a module __getattr__,
    `lineage.lazy.lazy_names`)."""
    return sorted(
        ".".join(init.parent.relative_to(ROOT).parts)
        for package in ("tuner", "lineage")
        for init in (ROOT / package).rglob("__init__.py")
        if "\n__getattr__ = lazy_names(" in init.read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("package", _lazy_packages())
def test_every_name_a_package_exports_resolves(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it cannot load: {missing}"


def test_a_lazy_name_is_imported_on_first_use_and_kept_in_the_package() -> None:
    from lineage.lazy import lazy_names

    namespace: dict[str, object] = {"__name__": "pkg"}
    getattr_ = lazy_names(
        namespace,
        {"dedent": "textwrap", "quote": "shlex:join"},
        modules={"wrapping": "textwrap"},
    )
    import shlex
    import textwrap

    assert getattr_("dedent") is textwrap.dedent and namespace["dedent"] is textwrap.dedent
    assert getattr_("quote") is shlex.join  # the package's own name for the module's `join`
    assert getattr_("wrapping") is textwrap and namespace["wrapping"] is textwrap
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        getattr_("nope")
    assert "nope" not in namespace


def test_a_package_keeps_a_lazy_name_after_its_first_use() -> None:
    code = (
        "import sys, lineage.store as s\n"
        "assert 'lineage.store._indexes' not in sys.modules and 'drop_indexes' not in vars(s)\n"
        "f = s.drop_indexes\n"
        "assert 'lineage.store._indexes' in sys.modules and vars(s)['drop_indexes'] is f\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
