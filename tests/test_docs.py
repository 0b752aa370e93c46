"""The docs keep their promises: the README's two commands are the ones that run, the README
stays short, and the generated references hold every command, flag and config key.

``mkdocs build --strict`` itself (broken links, missing pages) runs in ``.ci/run``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import subprocess
import sys
import tomllib
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GEN = ROOT / "docs" / "_gen"


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[\w-]*\n(.*?)^```", text, flags=re.S | re.M)


@pytest.fixture(scope="module")
def gen() -> tuple[types.ModuleType, types.ModuleType]:
    """The docs generator (``docs/_gen/``) as the MkDocs build loads it: its hook module,
    which loads the reference module."""
    spec = importlib.util.spec_from_file_location("lineage_tuner_docs_hooks", GEN / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks.reference, hooks


def _page(hooks: types.ModuleType, name: str) -> str:
    """A reference page as the site build renders it (the hook fills its marker)."""
    source = (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8")
    rendered: str = hooks.on_page_markdown(source, page=None, config=None, files=None)
    assert "<!-- generated:" not in rendered
    return rendered


# --------------------------------------------------------------------------- README


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_readme_first_block_installs_and_runs_the_quickstart() -> None:
    first = _code_blocks(README.read_text(encoding="utf-8"))[0].strip()
    steps = [s.strip() for s in first.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    install = next(s for s in steps if s.startswith("pip install"))
    run = steps[-1].split()
    assert run[:2] == ["tuner", "run"], first
    assert (ROOT / run[2]).is_file(), f"the quickstart config {run[2]} is missing"
    extras = re.search(r"\.\[([\w,-]+)\]", install)
    assert extras is not None, install
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    for extra in extras.group(1).split(","):
        assert extra in declared, f"README installs the extra {extra!r}, pyproject lacks it"


def test_readme_second_block_is_what_ci_runs() -> None:
    second = _code_blocks(README.read_text(encoding="utf-8"))[1].strip().splitlines()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    positions = []
    for line in second:
        assert line in ci, f".ci/run does not run the README's test command line {line!r}"
        positions.append(ci.index(line))
    assert positions == sorted(positions), "the README's test commands run in another order in CI"
    assert ci.index("mkdocs build --strict") < ci.index("pytest")


def test_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert targets, "the README links to the docs"
    for target in targets:
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"


# --------------------------------------------------------------------------- CLI reference


def _help(main: typing.Callable[[list[str]], int], argv: list[str]) -> str:
    """What ``PROG ARGV --help`` prints, through the CLI's own main()."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return out.getvalue()


def _commands_in_help(text: str) -> list[str]:
    section = text.split("positional arguments:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^ {4}(\w[\w-]*)\s", section, flags=re.M)


def _flags(text: str) -> set[str]:
    """The option strings of a --help text: the lines that start an option's entry."""
    flags = set()
    for line in text.splitlines():
        match = re.match(r"^ {2}(-\S.*?)(?: {2,}|$)", line)
        if match:
            flags |= {part.split()[0] for part in match.group(1).split(", ")}
    return flags - {"-h", "--help"}


@pytest.mark.parametrize("prog", ["lineage", "tuner"])
def test_cli_reference_has_every_command_and_flag(
    gen: tuple[types.ModuleType, types.ModuleType], prog: str
) -> None:
    _, hooks = gen
    page = _page(hooks, "cli.md")
    listed = subprocess.run(
        [sys.executable, "-m", f"{prog}.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    commands = _commands_in_help(listed)
    assert len(commands) >= 6, listed
    main = __import__(f"{prog}.cli", fromlist=["main"]).main
    sections = re.split(r"^#{2,6} ", page, flags=re.M)
    checked = 0
    for command in commands:
        heading = f"`{prog} {command}`"
        section = next((s for s in sections if s.startswith(heading)), None)
        assert section is not None, f"the CLI reference has no section for {prog} {command}"
        for flag in _flags(_help(main, [command])):
            assert re.search(rf"`{re.escape(flag)}[ `]", section), (
                f"the CLI reference lacks {flag} of {prog} {command}"
            )
            checked += 1
    assert checked >= 10, f"only {checked} flags found in the --help of {prog}'s commands"


def test_cli_reference_lists_the_same_commands_as_the_help(
    gen: tuple[types.ModuleType, types.ModuleType],
) -> None:
    reference, _ = gen
    from lineage.cli import command_names

    names = reference.cli_commands()
    assert {n.split()[1] for n in names if n.startswith("lineage ")} == set(command_names())
    assert "tuner run" in names and "tuner validate" in names


# --------------------------------------------------------------------------- config reference


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _leaf_keys(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    for name, field in model.model_fields.items():
        alias = field.alias or name
        nested = _models_in(field.annotation)
        if not nested:
            yield prefix + alias
            continue
        origin = typing.get_origin(field.annotation)
        if origin is dict:
            yield prefix + alias
            yield from _leaf_keys(nested[0], f"{prefix}{alias}.NAME.")
        elif origin is list:
            yield prefix + alias
            yield from _leaf_keys(nested[0], f"{prefix}{alias}[].")
        else:  # a section, or one of several (``scheduler``: every variant's keys)
            for model in nested:
                yield from _leaf_keys(model, f"{prefix}{alias}.")


def test_config_reference_has_every_key_of_the_model(
    gen: tuple[types.ModuleType, types.ModuleType],
) -> None:
    _, hooks = gen
    from tuner.config import CampaignConfig

    page = _page(hooks, "config.md")
    keys = list(_leaf_keys(CampaignConfig))
    assert "budget.trials" in keys and "parameters.NAME.low" in keys
    for key in keys:
        assert f"`{key}`" in page, f"the configuration reference lacks {key}"
    # defaults and allowed values come through from the model
    assert re.search(r"`budget\.max_failures` \| integer \(>= 1\) \| `5`", page)
    assert re.search(r"`sampler\.name` \| `tpe` \\\| `gp`", page)


def test_environment_reference_lists_every_variable_the_code_spells(
    gen: tuple[types.ModuleType, types.ModuleType],
) -> None:
    _, hooks = gen
    page = _page(hooks, "environment.md")
    in_code = hooks.listings.variables_in_code()
    assert "LINEAGE_DEBUG" in in_code and "TUNER_PARAMS" in in_code
    for name in in_code:
        assert f"| `{name}` |" in page, f"the environment reference lacks {name}"
    # the rule a checked variable must meet comes from lineage.environment
    assert re.search(r"`LINEAGE_HTTP_IN_FLIGHT` \|.*\| must be a whole number >= 1 \|", page)


def test_environment_reference_refuses_a_variable_it_does_not_describe(
    gen: tuple[types.ModuleType, types.ModuleType],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, hooks = gen
    spelled = {**hooks.listings.variables_in_code(), "TUNER_SOMETHING_NEW": ["tuner.x"]}
    monkeypatch.setattr(hooks.listings, "variables_in_code", lambda: spelled)
    with pytest.raises(SystemExit, match="not described: \\['TUNER_SOMETHING_NEW'\\]"):
        hooks.listings.environment_reference()


def test_extras_reference_describes_every_extra_of_pyproject(
    gen: tuple[types.ModuleType, types.ModuleType],
) -> None:
    _, hooks = gen
    page = _page(hooks, "extras.md")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for name, requirements in extras.items():
        assert f"| `{name}` |" in page
        for requirement in requirements:
            assert f"`{requirement}`" in page


def _example_key_paths(text: str) -> set[str]:
    """The key paths ``configs/example-full.yaml`` spells, counting keys in comments (the
    alternatives it shows commented out, read as if the ``# `` were not there): a key's parent
    is the nearest key above it in a column to its left; a key under a mapping of names
    (``parameters``, ``perturb``) reads as ``NAME``, a key of a list item as ``KEY[]``, and
    the keys of a flow mapping (``{factor: [0.8, 1.2]}``) as the line key's children."""
    named = {"parameters", "perturb", "metrics"}
    stack: list[tuple[int, str]] = []
    paths: set[str] = set()
    for line in text.splitlines():
        found = re.match(r"^(\s*)(# ?)?(\s*)(- )?([a-z_][\w-]*):(.*)$", line)
        if not found:
            continue
        lead, _hash, pad, dash, key, rest = found.groups()
        column = len(lead) + len(pad) + (2 if dash else 0)
        while stack and stack[-1][0] >= column:
            stack.pop()
        if dash and stack and not stack[-1][1].endswith("[]"):
            stack[-1] = (stack[-1][0], stack[-1][1] + "[]")
        if stack and stack[-1][1].removesuffix("[]") in named:
            key = "NAME"
        stack.append((column, key))
        path = ".".join(segment for _, segment in stack)
        paths.add(path)
        flow = re.match(r"\s*\{(.*)\}", rest)
        if flow:
            paths.update(f"{path}.{child}" for child in re.findall(r"(\w+):", flow.group(1)))
    return paths


def test_the_full_example_config_holds_every_key_of_the_schema() -> None:
    from tuner.config import CampaignConfig

    text = (ROOT / "configs" / "example-full.yaml").read_text(encoding="utf-8")
    spelled = _example_key_paths(text)
    missing = [key for key in _leaf_keys(CampaignConfig) if key not in spelled]
    assert not missing, f"configs/example-full.yaml lacks {missing}"


def test_campaign_guide_names_only_real_keys(
    gen: tuple[types.ModuleType, types.ModuleType],
) -> None:
    reference, _ = gen
    known = set(reference.config_keys())
    text = (ROOT / "docs" / "guides" / "campaigns.md").read_text(encoding="utf-8")
    table = text.split("### Keys", 1)[1].split("\n### ", 1)[0]
    named = []
    for row in re.findall(r"^\| (`[^|]*`) \|", table, flags=re.M):
        previous = ""
        for key in re.findall(r"`([^`]+)`", row):
            if key.startswith("."):
                key = previous.rsplit(".", 1)[0] + key
            named.append(key)
            previous = key
    assert len(named) >= 30, named
    stale = [key for key in named if key not in known]
    assert not stale, f"the campaigns guide names keys the config model lacks: {stale}"


# --------------------------------------------------------------------------- figures


def _result_numbers(prefixes: tuple[str, ...] = ("",)) -> list[float]:
    """Every number the benchmark result files whose names start with one of ``prefixes``
    hold (figures and params; by default every file's)."""
    numbers: list[float] = []

    def walk(value: object) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int | float):
            numbers.append(float(value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    import json

    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        if not path.stem.startswith(prefixes):
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        walk(doc.get("figures"))
        walk(doc.get("params"))
    return numbers


def _held(stated: str, numbers: list[float]) -> bool:
    """Whether a figure as a page writes it (``0.93``, ``11``, ``69,481``) is a result file's
    number rounded to the digits the page shows."""
    value = float(stated.replace(",", ""))
    decimals = len(stated.split(".")[1]) if "." in stated else 0
    return any(round(n, decimals) == value or round(n) == value for n in numbers)


def test_every_results_marker_names_a_result_file() -> None:
    from glob import glob

    names = set()
    for page in glob(str(ROOT / "docs" / "**" / "*.md"), recursive=True):
        names |= set(re.findall(r"<!-- results: ([a-z0-9_]+) -->", Path(page).read_text()))
    missing = sorted(
        n for n in names if not (ROOT / "benchmarks" / "results" / f"{n}.json").is_file()
    )
    assert not missing, f"pages show result files no benchmark has written: {missing}"


def test_the_readme_states_only_figures_a_result_file_holds() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("Against the stock tools")
    line = text[start : text.index("\n\n", start)]
    stated = re.findall(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)(?=x|\s*(?:efficiency|s\b|points/s))", line)
    stated += re.findall(r"(?:efficiency|optimize\(n_jobs=2\)`?:?) (\d+\.\d+)", line)
    assert stated, line
    # Only the files the line quotes: recording, querying and the tuner's efficiency.
    numbers = _result_numbers(("recording_", "query_", "tuner"))
    unheld = [s for s in stated if not _held(s, numbers)]
    assert not unheld, f"README states figures no result file holds: {unheld} in {line!r}"


def test_the_benchmarks_page_states_figures_only_through_result_files() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    # Hand-written text may name what is measured and the goals, never a measured figure: a
    # number with a unit of time or speed outside the commands and the markers is one.
    prose = re.sub(r"^    .*$", "", page, flags=re.M)  # the commands to run
    measured = re.findall(r"\b\d[\d,.]*\s?(?:ms|µs|s|points/s|trials/s)\b(?! of)", prose)
    allowed = {"0.5 s", "0.2 s", "20 µs", "20 ms", "20,000 points/s"}  # set by the text: goals
    assert set(measured) <= allowed, sorted(set(measured) - allowed)


# --------------------------------------------------------------------------- figures on every page

PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _prose(text: str) -> str:
    """What a page states in its own words: no code blocks, inline code, indented commands
    or comments (a results marker is one: the hook fills it from a result file)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"^    .*$", "", text, flags=re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


#: Pages that still date a measurement by hand; each passes once its figures render from a
#: result file, and then strict xfail fails until it leaves this list.
DATED_BY_HAND: set[str] = set()


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(
            p,
            marks=pytest.mark.xfail(
                _page_id(p) in DATED_BY_HAND, reason="dates a measurement by hand", strict=True
            ),
        )
        for p in PAGES
    ],
    ids=_page_id,
)
def test_a_page_dates_no_measurement_by_hand(page: Path) -> None:
    # A date in prose dates a measurement; the result file carries its own date and the
    # marker that renders it says where and when it ran.
    dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", _prose(page.read_text(encoding="utf-8")))
    assert not dates, f"{_page_id(page)} dates figures by hand ({dates}): render a result file"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_a_page_tabulates_only_figures_a_result_file_holds(page: Path) -> None:
    numbers = _result_numbers()
    unheld = []
    for line in _prose(page.read_text(encoding="utf-8")).splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            stated = [c for c in cells if re.fullmatch(r"-?\d[\d,]*\.\d+", c)]
            unheld += [s for s in stated if not _held(s, numbers)]
    assert not unheld, f"{_page_id(page)} tabulates figures no result file holds: {unheld}"


#: Figures with a unit that a page sets rather than measures: the level of an interval, a
#: nominal rate, a default, a case's design. Anything else with a unit is a measurement.
SET_BY_THE_TEXT = {
    "docs/guides/importance.md": {"95%", "2.5%", "20%", "1%", "50%", "1.15%"},
    "docs/getting-started.md": {"240 s", "20 minutes"},
    "docs/index.md": set(),
    "README.md": {"20 minutes"},
}


@pytest.mark.parametrize("name", sorted(SET_BY_THE_TEXT))
def test_a_page_states_measured_figures_only_through_result_files(name: str) -> None:
    prose = _prose((ROOT / name).read_text(encoding="utf-8"))
    if name == "README.md":  # its speed line is checked against the result files above
        start = prose.index("Against the stock tools")
        prose = prose[:start] + prose[prose.index("\n\n", start) :]
    unit = r"(?:ms|µs|s|min|minutes?|seconds?|hours?|points/s|trials/s|x|%)"
    stated = re.findall(rf"(?<![\w.])\d[\d,.]*\s?{unit}(?=[\s,.;:)]|$)", prose, flags=re.M)
    stated = [re.sub(r"\s+", " ", s) for s in stated]  # a figure wrapped across two lines
    numbers = _result_numbers()
    measured = [s for s in stated if s not in SET_BY_THE_TEXT[name]]
    unheld = [s for s in measured if not _held(re.match(r"[\d,.]*\d", s).group(), numbers)]  # type: ignore[union-attr]
    assert not unheld, f"{name} states figures no result file holds: {unheld}"


def test_the_pip_install_lines_match_the_readme_test_command() -> None:
    readme = _code_blocks(README.read_text(encoding="utf-8"))[1]
    install = next(line for line in readme.splitlines() if line.startswith("pip install"))
    for name in ("CONTRIBUTING.md", "docs/getting-started.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        lines = [ln.strip() for ln in text.splitlines() if "pip install -e '.[dev" in ln]
        assert lines, f"{name} shows no install line for the tests"
        assert all(ln == install for ln in lines), (
            f"{name}: {lines} is not the README's {install!r}"
        )


def test_the_design_page_draws_the_layers_the_contract_checks() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")
    expected = [
        " | ".join(f"tuner.{m.strip()}" for m in layer.split("|")) for layer in layers["layers"]
    ]
    page = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    block = next(b for b in _code_blocks(page) if b.startswith("tuner.cli\n"))
    drawn = [line.split("  ")[0].strip() for line in block.splitlines() if line.strip()]
    assert drawn == expected, (
        f"docs/design.md draws the layers {drawn}, pyproject.toml has {expected}"
    )
    for layer in layers["layers"]:
        for module in layer.split("|"):
            assert (ROOT / "tuner" / module.strip()).is_dir(), module
            assert f"├── {module.strip()}/" in page, f"the design page's tree lacks tuner/{module}"


def test_troubleshooting_quotes_only_errors_the_code_still_raises() -> None:
    page = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    source = "\n".join(
        path.read_text(encoding="utf-8")
        for package in ("lineage", "tuner")
        for path in (ROOT / package).rglob("*.py")
    )
    entries = re.findall(r"^### .*\n(.*)$", page, flags=re.M)
    assert len(entries) >= 10
    for line in entries:
        found = re.fullmatch(r'<!-- raised: "(.+)" -->', line)
        assert found, f"a troubleshooting entry lacks its <!-- raised: --> marker: {line!r}"
        assert found.group(1) in source, f"no code raises {found.group(1)!r} any more"


def test_every_stated_goal_is_checked_against_a_figure_its_result_file_holds(
    gen: tuple[types.ModuleType, types.ModuleType],
) -> None:
    _, hooks = gen
    results = hooks.results
    for name, goals in results.GOALS.items():
        lines = results.goal_lines(name, results.load(name))
        assert len(lines) == len(goals)
        assert not [line for line in lines if "not measured" in line], name
        assert all("**met**" in line or "**not met**" in line for line in lines)


def test_a_docstring_or_comment_edit_does_not_count_as_a_code_change(
    gen: tuple[types.ModuleType, types.ModuleType],
) -> None:
    skeleton = gen[1].results._skeleton
    module = '"""A module."""\n\ndef f(x):\n    """Twice x."""\n    return 2 * x  # doubled\n'
    reworded = module.replace("A module.", "The module.").replace("# doubled", "# twice")
    bare = "def f(x):\n    return 2 * x\n"
    assert skeleton(module) == skeleton(reworded) == skeleton(bare)
    assert skeleton(module) != skeleton(module.replace("2 * x", "3 * x"))
    assert skeleton(module.replace("return", "return return")) is None  # counts as code
