"""Regenerate the sample outputs the docs show, from real runs on this machine.

A page marks a sample with ``<!-- sample: NAME -->`` on the line before a fenced code block;
this script runs the campaign the sample comes from, then the sample's command, and writes
what it printed into that block (abridged the way the sample says: a long listing keeps its
head and ``...``). A sample is never typed by hand, so it cannot drift from what the code
prints: run this after a change to what a command prints, look at ``git diff docs``, commit.

Two campaigns feed the samples, each in a fresh folder laid out like a clone:

- ``quickstart``: ``tuner run configs/quickstart.yaml`` as the getting-started page runs it
  (real MindSpore trainings on CPU, about two minutes);
- ``demo``: a 4-trial campaign of a one-line script (seconds).

Usage, from the repository root::

    python scripts/sample_outputs.py            # rewrite every sample block in docs/ and README
    python scripts/sample_outputs.py --list     # the samples, their pages and commands
    python scripts/sample_outputs.py --only demo-log,demo-status
    python scripts/sample_outputs.py --check    # exit 1 when a page's block differs (no writes)

Values differ from run to run (timings, the trials' scores), so ``--check`` is for a person
looking at the drift, not for CI; ``tests/test_sample_outputs.py`` checks that every marker
names a sample here and every sample has its marker.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(?P<indent>[ ]*)<!-- sample: (?P<name>[a-z0-9-]+) -->\n", re.M)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

DEMO_SCRIPT = "import sys; lr = float(sys.argv[1]); print(f'loss={(lr - 0.001) ** 2}')\n"
DEMO_CONFIG = """\
name: demo
command: python demo.py {lr}
target: {metric: loss, goal: minimize}
parameters:
  lr: {type: float, low: 1e-3, high: 0.1, log: true}
metrics:
  loss: {pattern: 'loss=([0-9.eE+-]+)'}
budget: {trials: 4}
sampler: {name: tpe, seed: 3}
resources: {kind: cpu, parallel: 2}
"""


@dataclass(frozen=True)
class Sample:
    """One sample: the campaign it reads, the command, and how its output is cut."""

    name: str
    campaign: str  # "quickstart" or "demo"
    argv: tuple[str, ...]
    #: ``$COLUMNS`` for the command (None: a pipe, tables printed whole).
    columns: int | None = None
    #: Turns the output into the block's text.
    abridge: Callable[[str], str] = lambda text: text
    #: Shown as the block's first line (``$ command  # comment``), when the page shows it.
    prompt: str | None = None
    #: What the command says on stderr follows its output (a terminal shows both).
    stderr: bool = False


def _log_abridged(text: str) -> str:
    """A campaign's log: its first line, two trial lines, the first pruned trial's line, the
    closing line with the parameters elided."""
    lines = text.rstrip("\n").splitlines()
    trials = [i for i, line in enumerate(lines) if re.match(r"\[\d+/\d+\] trial ", line)]
    keep: list[str] = [lines[0], *(lines[i] for i in trials[:2])]
    pruned = [i for i in trials[2:] if " PRUNED " in lines[i]]
    if pruned:
        keep += ["...", lines[pruned[0]]]
    keep.append("...")
    closing = next(line for line in lines if re.match(r"campaign '[^']+': \d+/\d+ trials", line))
    keep.append(re.sub(r" with \{.*\}$", " with {...}", closing))
    return "\n".join(keep)


def _runs_abridged(text: str) -> str:
    """``lineage runs``: the title, the header, two runs, ``...``, then the campaign's own
    runs and what was left out."""
    lines = text.rstrip("\n").splitlines()
    blank = lines.index("") if "" in lines else len(lines)
    return "\n".join([*lines[:4], "...", *lines[blank:]])


def _whole(text: str) -> str:
    return text.rstrip("\n")


SAMPLES: tuple[Sample, ...] = (
    Sample("quickstart-log", "quickstart", ("tuner", "run", "configs/quickstart.yaml"),
           abridge=_log_abridged),
    Sample("quickstart-runs", "quickstart", ("lineage", "runs", "-e", "quickstart"), columns=80,
           abridge=_runs_abridged, stderr=True,
           prompt="$ lineage runs -e quickstart            # an 80-column terminal"),
    Sample("demo-log", "demo", ("tuner", "run", "demo.yaml"), abridge=_whole),
    Sample("demo-status", "demo", ("tuner", "status", "demo.yaml"), abridge=_whole),
)  # fmt: skip


def _env(columns: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return env


def _run(argv: tuple[str, ...], cwd: Path, columns: int | None = None, stderr: bool = False) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=_env(columns), capture_output=True, text=True, timeout=1200
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout + (done.stderr if stderr else "")


def _campaign(kind: str, where: Path) -> tuple[Path, str]:
    """A fresh folder with ``kind``'s campaign run in it, and what ``tuner run`` printed."""
    folder = where / kind
    folder.mkdir()
    if kind == "quickstart":
        shutil.copytree(ROOT / "configs", folder / "configs")
        shutil.copytree(ROOT / "examples", folder / "examples")
        argv: tuple[str, ...] = ("tuner", "run", "configs/quickstart.yaml")
    else:
        (folder / "demo.py").write_text(DEMO_SCRIPT)
        (folder / "demo.yaml").write_text(DEMO_CONFIG)
        argv = ("tuner", "run", "demo.yaml")
    return folder, _run(argv, folder)


def _text(sample: Sample, folder: Path, printed: str) -> str:
    out = (
        printed
        if sample.argv[:2] == ("tuner", "run")
        else _run(sample.argv, folder, sample.columns, sample.stderr)
    )
    out = out.replace(str(folder), "/tmp/" + sample.campaign)
    text = sample.abridge(out)
    return f"{sample.prompt}\n{text}" if sample.prompt else text


def markers() -> dict[str, list[Path]]:
    """Each sample name marked in a page, with the pages that mark it."""
    found: dict[str, list[Path]] = {}
    for page in PAGES:
        for m in MARKER.finditer(page.read_text(encoding="utf-8")):
            found.setdefault(m.group("name"), []).append(page)
    return found


def replace_block(page_text: str, name: str, text: str) -> str:
    """``page_text`` with the fenced block after ``<!-- sample: name -->`` holding ``text``."""
    out, pos = [], 0
    for m in MARKER.finditer(page_text):
        if m.group("name") != name:
            continue
        fence = re.compile(
            rf"{m.group('indent')}(```[a-z]*)\n(.*?)^{m.group('indent')}```$", re.S | re.M
        )
        block = fence.match(page_text, m.end())
        if block is None:
            raise ValueError(f"sample {name}: no fenced block right after its marker")
        indent = m.group("indent")
        body = "\n".join(indent + line if line else line for line in text.splitlines())
        out.append(page_text[pos : block.start(2)] + body + "\n")
        pos = block.end(2)
    out.append(page_text[pos:])
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the samples and exit")
    ap.add_argument("--only", help="comma-separated sample names")
    ap.add_argument("--check", action="store_true", help="exit 1 when a block would change")
    args = ap.parse_args(argv)
    marked = markers()
    chosen = [s for s in SAMPLES if not args.only or s.name in args.only.split(",")]
    if args.list:
        for s in SAMPLES:
            pages = ", ".join(str(p.relative_to(ROOT)) for p in marked.get(s.name, [])) or "-"
            print(f"{s.name:16} {pages:28} {' '.join(s.argv)}")
        return 0
    unknown = sorted(set((args.only or "").split(",")) - {s.name for s in SAMPLES} - {""})
    if unknown:
        print(
            f"sample_outputs.py: error: --only: unknown sample {', '.join(unknown)}",
            file=sys.stderr,
        )
        return 2
    changed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="samples-") as tmp:
        campaigns: dict[str, tuple[Path, str]] = {}
        for sample in chosen:
            if sample.campaign not in campaigns:
                print(f"running the {sample.campaign} campaign...", flush=True)
                campaigns[sample.campaign] = _campaign(sample.campaign, Path(tmp))
            folder, printed = campaigns[sample.campaign]
            text = _text(sample, folder, printed)
            for page in marked.get(sample.name, []):
                before = page.read_text(encoding="utf-8")
                after = replace_block(before, sample.name, text)
                if after != before:
                    changed.append(f"{page.relative_to(ROOT)}: {sample.name}")
                    if not args.check:
                        page.write_text(after, encoding="utf-8")
    for line in changed:
        print(("differs: " if args.check else "rewrote: ") + line)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
