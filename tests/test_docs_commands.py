"""The README and docs/ stay true: every command they present as runnable runs as written, and
every relative link in them points to a file (and heading) that exists.

The convention (docs/README.md, "Commands in these pages"): a ```sh block is runnable as written
from the project root, with the project's venv first on PATH. The blocks of one page run in
order in one fresh copy of the project, each from its root, so a block may use what an earlier
block of its page made. `<!-- exit: N -->` and `<!-- output: TEXT -->` just above a block state
another exit status and text its output must contain; `<!-- file: PATH -->` above a block is a
file written into the copy before the page's commands run. ```console and ```text blocks are
not run. The assignments named by `-a NAME` are the engine's own (the venv's editable install),
so no runnable block may write into them: the test checks they are unchanged after the runs.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
VENV_BIN = Path(sys.executable).parent          # the venv running the tests: the project's
README_MAX_LINES = 200

# Blocks the test does not run, by page and a text only that block holds: they run this test
# suite itself, so running them here would recurse.
EXCLUDED = {
    ("README.md", "make demo"): "make demo and make test: installs, then runs this suite",
    ("docs/testing.md", "make test-fast"): "make test and make test-fast run this suite",
}

# Blocks broken today, each being fixed in the engine. They run and must fail (strict xfail):
# once fixed they pass, the xfail turns into a failure, and the entry must be removed.
KNOWN_BROKEN: dict[tuple[str, str], str] = {}

FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^<!-- (exit|output|file): (.*?) -->$")
# An untagged or shell-tagged fence holding one of these is ambiguous: runnable or not?
COMMAND = re.compile(r"^\s*(autograder|python3?|make|\.venv/bin/\S+)\s+\S")
AMBIGUOUS_LANGS = {"bash", "shell", "shell-session", "zsh", "console-session"}


@dataclass(frozen=True)
class Block:
    page: str                     # relative to the project root
    line: int                     # the opening fence's line, from 1
    lang: str
    text: str
    markers: tuple[tuple[str, str], ...]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def exit(self) -> int:
        return int(dict(self.markers).get("exit", "0"))

    @property
    def outputs(self) -> list[str]:
        return [value for key, value in self.markers if key == "output"]

    @property
    def file(self) -> str | None:
        return dict(self.markers).get("file")


def closing_fence(fence: str) -> re.Pattern:
    return re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")


def page_name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def parse_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown page, with the markers on the lines just above it."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        closing = closing_fence(fence)
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        body = [line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:j]]
        markers, k = [], i - 1
        while k >= 0 and (mk := MARKER.match(lines[k].strip())):
            markers.insert(0, (mk.group(1), mk.group(2)))
            k -= 1
        blocks.append(Block(page_name(path), i + 1, lang, "\n".join(body) + "\n", tuple(markers)))
        i = j + 1
    return blocks


ALL_BLOCKS = {page_name(p): parse_blocks(p) for p in PAGES}


def matching(page: str, snippet: str) -> list[Block]:
    return [b for b in ALL_BLOCKS.get(page, []) if b.lang == "sh" and snippet in b.text]


def listed(block: Block, table: dict) -> bool:
    return any(page == block.page and snippet in block.text for page, snippet in table)


RUNNABLE = [b for blocks in ALL_BLOCKS.values() for b in blocks
            if b.lang == "sh" and not listed(b, EXCLUDED)]


def block_param(block: Block):
    reasons = [why for (page, snippet), why in KNOWN_BROKEN.items()
               if page == block.page and snippet in block.text]
    marks = [pytest.mark.xfail(strict=True, reason=reasons[0])] if reasons else []
    return pytest.param(block, id=block.id, marks=marks)


# ------------------------------------------------------------------ running the blocks

def copy_project(dest: Path) -> None:
    """The project's tracked files as they are in the working tree (no build outputs or results
    lying around), and a link to its venv, so that `.venv/bin/...` works as in the project."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=ROOT,
                             capture_output=True)
    if listing.returncode == 0:
        for rel in filter(None, listing.stdout.decode().split("\0")):
            src = ROOT / rel
            if src.is_file() or src.is_symlink():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel, follow_symlinks=False)
    else:   # not a git checkout: everything but the venv, caches and outputs
        ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".pytest_cache",
                                        ".hypothesis", "*.egg-info", "demo-results", "dist")
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, symlinks=True, ignore=ignore)
    (dest / ".venv").symlink_to(VENV_BIN.parent)


def session_env(home: Path) -> dict[str, str]:
    """This environment with the project's venv first on PATH, a home of its own and a git that
    reads no configuration of this machine but knows who commits (a reader's git does)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "GRADESCOPE_", "CLASSROOM50_", "AUTOGRADER_", "GITHUB_"))}
    env.pop("PYTHONPATH", None)
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               VIRTUAL_ENV=str(VENV_BIN.parent), HOME=str(home), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL="/dev/null", GIT_AUTHOR_NAME="Docs Reader",
               GIT_AUTHOR_EMAIL="reader@example.org", GIT_COMMITTER_NAME="Docs Reader",
               GIT_COMMITTER_EMAIL="reader@example.org")
    return env


class PageRun:
    """One page's runnable blocks, run in order in one fresh copy of the project."""

    def __init__(self, page: str, folder: Path):
        self.root = folder / "project"
        self.root.mkdir(parents=True)
        copy_project(self.root)
        for block in ALL_BLOCKS[page]:
            if block.file:
                path = self.root / block.file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.text)
        home = folder / "home"
        home.mkdir()
        self.env = session_env(home)
        self.blocks = [b for b in RUNNABLE if b.page == page]
        self.done: dict[Block, subprocess.CompletedProcess] = {}

    def run(self, block: Block) -> subprocess.CompletedProcess:
        """The block's run, after every runnable block above it on the page (once each)."""
        for earlier in self.blocks[:self.blocks.index(block) + 1]:
            if earlier not in self.done:
                self.done[earlier] = subprocess.run(
                    ["bash", "-e", "-o", "pipefail", "-c", earlier.text], cwd=self.root,
                    env=self.env, capture_output=True, text=True, timeout=1800)
        return self.done[block]


def engine_data_digest() -> str:
    """What `-a NAME` and the engine read from the project itself, whatever the working folder."""
    digest = hashlib.sha256()
    for top in ("assignments", "reference", "student_template"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory):
    runs: dict[str, PageRun] = {}
    before = engine_data_digest()

    def get(page: str) -> PageRun:
        if page not in runs:
            runs[page] = PageRun(page, tmp_path_factory.mktemp("docs-" + page.replace("/", "-")))
        return runs[page]
    yield get
    # The copies isolate what blocks write, except what resolves through the engine's own
    # folder (`-a attention`): a block that writes there would change the project.
    assert engine_data_digest() == before, "a documented command changed the project's files"


@pytest.mark.slow
@pytest.mark.parametrize("block", [block_param(b) for b in RUNNABLE])
def test_runnable_block_runs_as_written(block, page_runs):
    r = page_runs(block.page).run(block)
    out = r.stdout + r.stderr
    assert r.returncode == block.exit, (
        f"{block.id} exited {r.returncode}, the page says {block.exit}:\n{block.text}\n"
        f"{out[-4000:]}")
    for text in block.outputs:
        assert text in out, f"{block.id}: no {text!r} in its output:\n{out[-4000:]}"


def test_blocks_run_with_the_project_venv(tmp_path):
    """`autograder` and `python` in a block are the project's venv, whatever PATH held."""
    r = subprocess.run(["bash", "-c", "command -v autograder; command -v python"],
                       env=session_env(tmp_path), capture_output=True, text=True, check=True)
    assert r.stdout.split() == [str(VENV_BIN / "autograder"), str(VENV_BIN / "python")]


def test_there_are_runnable_blocks_on_the_main_pages():
    pages = {b.page for b in RUNNABLE}
    assert {"README.md", "docs/instructors.md", "docs/platforms.md",
            "docs/writing-an-assignment.md"} <= pages, pages


def test_excluded_and_known_broken_blocks_exist():
    """Each entry names exactly one runnable block; excluded blocks only run make targets."""
    for table in (EXCLUDED, KNOWN_BROKEN):
        for page, snippet in table:
            found = matching(page, snippet)
            assert len(found) == 1, (page, snippet, [b.id for b in found])
    for page, snippet in EXCLUDED:
        block, = matching(page, snippet)
        commands = [line for line in block.text.splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
        assert all(line.startswith("make ") for line in commands), block.text
        assert not listed(block, KNOWN_BROKEN)


def test_every_shell_block_says_whether_it_runs():
    """A block of commands is ```sh (run by this test) or ```text/```console (not run): a
    ```bash block or an untagged one holding a command leaves the reader guessing."""
    unclear = [b.id for blocks in ALL_BLOCKS.values() for b in blocks
               if b.lang in AMBIGUOUS_LANGS
               or (b.lang == "" and any(COMMAND.match(line) for line in b.text.splitlines()))]
    assert unclear == []


def test_markers_are_well_formed():
    for blocks in ALL_BLOCKS.values():
        for b in blocks:
            if "exit" in dict(b.markers):
                assert b.lang == "sh" and re.fullmatch(r"\d+", dict(b.markers)["exit"]), b.id
            if b.outputs:
                assert b.lang == "sh", b.id
            if b.file:
                assert b.lang != "sh", b.id


# ------------------------------------------------------------------ links

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def outside_fences(path: Path) -> list[str]:
    """The page's lines that are not in a fenced block."""
    keep, closing = [], None
    for line in path.read_text().splitlines():
        m = FENCE.match(line)
        if closing is None and m:
            closing = closing_fence(m.group(2))
        elif closing is not None:
            if closing.match(line):
                closing = None
        else:
            keep.append(line)
    return keep


def anchors(path: Path) -> set[str]:
    """GitHub's ids for the page's headings: lower case, punctuation dropped, spaces to
    hyphens, -1, -2... for repeats."""
    seen: dict[str, int] = {}
    for line in outside_fences(path):
        m = HEADING.match(line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def links(path: Path) -> list[str]:
    """Link targets in the page's prose (not in code blocks or inline code)."""
    return [target for line in outside_fences(path)
            for target in LINK.findall(re.sub(r"(`+)(.+?)\1", "", line))]


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_relative_links_point_to_what_exists(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):      # https:, mailto:
            continue
        rel, _, anchor = target.partition("#")
        dest = (page.parent / rel).resolve() if rel else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert broken == []


def test_every_page_is_linked_from_the_readme_and_the_index():
    pages = {p.resolve() for p in PAGES if p.parent != ROOT and p.name != "README.md"}
    for index in (ROOT / "README.md", ROOT / "docs" / "README.md"):
        linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index)}
        assert pages - linked == set(), index
    readme_links = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    assert (ROOT / "docs" / "README.md").resolve() in readme_links


def test_the_readme_stays_a_front_page():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines: move the detail to a docs/ page"


@pytest.mark.slow
def test_following_the_pages_leaves_nothing_untracked(page_runs):
    """What the pages' commands write in the project root (a reader follows them there) is
    ignored by git, so `git status` stays clean: checked in each page's copy after all its
    blocks ran, with the project's own .gitignore."""
    tracked = set(filter(None, subprocess.run(
        ["git", "ls-files", "-z", "--cached"], cwd=ROOT, capture_output=True,
        check=True).stdout.decode().split("\0")))
    left = {}
    for page in sorted({b.page for b in RUNNABLE}):
        run = page_runs(page)
        for block in run.blocks:
            run.run(block)
        # What a page has the reader write (`<!-- file: PATH -->`), with the snapshots and the
        # notebook made for it, is the reader's own work, to commit.
        shown = {b.file for b in ALL_BLOCKS[page] if b.file}
        # ... and so is an assignment `autograder new NAME` started for the reader.
        started = {m for b in ALL_BLOCKS[page] if b.lang == "sh"
                   for m in re.findall(r"autograder new (\w+)", b.text)}
        shown |= {f"{place}/{name}.py" for name in started
                  for place in ("reference", "student_template")}
        shown |= {f"assignments/{name}/assignment.toml" for name in started}
        own = shown | {f[:-3] + ".ipynb" for f in shown if f.endswith(".py")}
        folders = tuple(f.rsplit("/", 1)[0] + "/" for f in shown if f.endswith("assignment.toml"))
        made = [p.relative_to(run.root).as_posix() for p in run.root.rglob("*")
                if p.is_file() and ".venv" not in p.parts and "__pycache__" not in p.parts]
        new = sorted(rel for rel in made if rel not in tracked and rel not in own
                     and not (folders and rel.startswith(folders)))
        if not new:
            continue
        check = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"],
                               cwd=ROOT, input="\0".join(new).encode(), capture_output=True)
        ignored = set(filter(None, check.stdout.decode().split("\0")))
        kept = [rel for rel in new if rel not in ignored]
        if kept:
            left[page] = kept[:10]
    assert not left, f"files the pages' commands leave untracked (ignore them in .gitignore or " \
                     f"write them elsewhere): {left}"
