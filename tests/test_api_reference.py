"""The Python API reference (``docs/reference/api.md``, rendered by mkdocstrings from the
source) covers the curated public surface: every module of it has a page entry, and every
name a module exports has a docstring to show there."""

from __future__ import annotations

import re
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "lineage",
    "lineage.checkpoints",
    "lineage.pausing",
    "lineage.training",
    "lineage.mindspore",
    "lineage.pytorch",
    "lineage.lightning",
    "lineage.transformers",
    "lineage.importance",
    "lineage.diagnose",
    "tuner.trial",
]


@pytest.fixture(scope="module")
def loader() -> griffe.GriffeLoader:
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    for package in ("lineage", "tuner"):
        loader.load(package)
    loader.resolve_aliases(implicit=False, external=False)
    return loader


def test_the_reference_page_renders_every_curated_module() -> None:
    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    assert re.findall(r"^::: ([\w.]+)$", page, flags=re.M) == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_every_exported_name_has_a_docstring(loader: griffe.GriffeLoader, module: str) -> None:
    mod = loader.modules_collection[module]
    exported = [str(name) for name in mod.exports or []]
    assert exported, f"{module} has no __all__"
    bare = []
    for name in exported:
        obj = mod[name]
        target = obj.final_target if obj.is_alias else obj
        if not (target.docstring and target.docstring.value.strip()):
            bare.append(name)
    assert not bare, f"{module} exports names without a docstring: {bare}"


#: Modules whose every exported function documents each of its arguments: all of them.
ARGUMENTS_DOCUMENTED = MODULES


def _undocumented(function: griffe.Function, *docstrings: griffe.Docstring | None) -> list[str]:
    """The arguments of ``function`` that no ``Args:`` section of ``docstrings`` describes
    (``*args`` and ``**kwargs`` count too, documented under their starred names)."""
    wanted = {p.name for p in function.parameters if p.name not in ("self", "cls")}
    documented = {
        param.name.lstrip("*")
        for docstring in docstrings
        if docstring is not None
        for section in docstring.parse("google")
        if section.kind is griffe.DocstringSectionKind.parameters
        for param in section.value
    }
    return sorted(wanted - documented)


@pytest.mark.parametrize("module", ARGUMENTS_DOCUMENTED)
def test_every_exported_function_documents_its_arguments(
    loader: griffe.GriffeLoader, module: str
) -> None:
    mod = loader.modules_collection[module]
    missing: dict[str, list[str]] = {}
    for name in mod.exports or []:
        obj = mod[str(name)]
        target = obj.final_target if obj.is_alias else obj
        if not isinstance(target, griffe.Function) or target.docstring is None:
            continue
        if undocumented := _undocumented(target, target.docstring):
            missing[str(name)] = undocumented
    assert not missing, f"{module}: arguments without a description: {missing}"


#: Exported classes a script builds itself, whose constructor's every argument is described
#: in the class's or ``__init__``'s ``Args:`` section.
CONSTRUCTORS_DOCUMENTED = [
    "lineage.mindspore.LineageCallback",
    "lineage.mindspore.TrialCheckpoint",
    "lineage.lightning.LineageCallback",
    "lineage.transformers.LineageCallback",
]


@pytest.mark.parametrize("path", CONSTRUCTORS_DOCUMENTED)
def test_constructors_document_their_arguments(loader: griffe.GriffeLoader, path: str) -> None:
    module, _, name = path.rpartition(".")
    assert name in [str(n) for n in loader.modules_collection[module].exports or []]
    obj = loader.modules_collection[module][name]
    cls = obj.final_target if obj.is_alias else obj
    assert isinstance(cls, griffe.Class)
    init = cls.members["__init__"]
    init = init.final_target if init.is_alias else init
    assert isinstance(init, griffe.Function)
    undocumented = _undocumented(init, cls.docstring, init.docstring)
    assert not undocumented, f"{path}: constructor arguments without a description: {undocumented}"
