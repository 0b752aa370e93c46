"""Identity tags: git commit and dirty flag of the script's repository, versions, host."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from lineage._identity import framework_versions, git_identity, identity_tags

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@x",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@x",
}


def _git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return out.stdout.strip()


def test_git_commit_and_dirty_flag(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    (repo / "src").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "src" / "train.py").write_text("print(1)\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    head = _git(repo, "rev-parse", "HEAD")
    tags = git_identity(repo / "src")
    assert tags["lineage.git.commit"] == head == tags["mlflow.source.git.commit"]
    assert tags["lineage.git.dirty"] == "false"
    (repo / "src" / "train.py").write_text("print(2)\n")
    assert git_identity(repo / "src")["lineage.git.dirty"] == "true"


def test_outside_a_repository_says_so(tmp_path: Path) -> None:
    tags = git_identity(tmp_path)
    assert tags["lineage.git.commit"] == "none"
    assert "mlflow.source.git.commit" not in tags


def test_identity_is_read_from_the_scripts_directory_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "proj"
    repo.mkdir()
    _git(repo, "init", "-q")
    script = repo / "train.py"
    script.write_text("x = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(script), raising=False)
    tags = identity_tags([str(script), "--lr", "0.1"])
    assert tags["lineage.git.commit"] == _git(repo, "rev-parse", "HEAD")
    assert tags["mlflow.source.name"] == str(script)
    assert tags["lineage.python"] == platform.python_version()
    assert tags["lineage.host"] and tags["lineage.user"] == tags["mlflow.user"]


def test_framework_versions_without_importing_them() -> None:
    before = set(sys.modules)
    versions = framework_versions()
    assert "sklearn" in versions and "mlflow" in versions
    assert "mindspore" not in set(sys.modules) - before and "torch" not in set(sys.modules) - before
