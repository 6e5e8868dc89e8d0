"""`autograder benchmark --similarity`: how long the similarity report takes for a large class.

The class is made from a corpus folder (correct/, wrong/, realworld/... of `.py` files of one
assignment): each synthetic student takes each function of the template from a corpus file
drawn at random (seeded), so the class has the variety of a real one (a thousand different
files) and the overlap too (every function is shared with dozens of others, as common idioms
are). A few exact copies are planted, and the run checks that they come out on top.
"""
from __future__ import annotations

import ast
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _other_track(path: Path, corpus: Path, assignment_name: str) -> bool:
    """Whether a corpus file belongs to another assignment: its `# assignment:` header says
    so, or it sits in the corpus's numpy/ folder (the NumPy track's files)."""
    try:
        head = path.read_text(errors="replace")[:200]
    except OSError:
        return True
    for line in head.splitlines()[:3]:
        if line.startswith("# assignment:"):
            return line.split(":", 1)[1].strip() != assignment_name
    return ("numpy" in path.relative_to(corpus).parts) != assignment_name.endswith("numpy")


def corpus_functions(corpus: Path, api: list[str],
                     assignment_name: str) -> dict[str, list[str]]:
    """{function name: its source in each corpus file that defines it} (files of the corpus
    for this assignment that parse; only the template's functions)."""
    found: dict[str, list[str]] = {name: [] for name in api}
    for path in sorted(corpus.rglob("*.py")):
        if "hostile" in path.parts or "broken" in path.parts \
                or _other_track(path, corpus, assignment_name):
            continue
        try:
            text = path.read_text()
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in found:
                found[node.name].append(ast.get_source_segment(text, node) or "")
    return {name: list(dict.fromkeys(s for s in sources if s)) for name, sources in
            found.items() if sources}


def make_class(corpus: Path, assignment, n: int, dest: Path, *, copies: int = 5,
               seed: int = 0) -> list[tuple[str, str]]:
    """Write n students' files in `dest`; returns the planted copied pairs (file stems)."""
    rng = random.Random(seed)
    api = list(assignment.api)
    functions = corpus_functions(corpus, api, assignment.name)
    if not functions:
        raise ValueError(f"no functions of the template found under {corpus}")
    template = Path(assignment.template).read_text()
    header = "\n".join(ast.get_source_segment(template, node) or "" for node in
                       ast.parse(template).body
                       if isinstance(node, (ast.Import, ast.ImportFrom))) + "\n\n\n"
    for i in range(n):
        parts = [rng.choice(functions[name]) for name in api if name in functions]
        (dest / f"s{i:04d}.py").write_text(header + "\n\n\n".join(parts) + "\n")
    planted = []
    # Each copy of another student: two copies of one file would make a third identical pair.
    for c, index in enumerate(rng.sample(range(n), min(copies, n))):
        original = f"s{index:04d}"
        copy = f"copy{c:02d}_of_{original}"
        shutil.copy(dest / f"{original}.py", dest / f"{copy}.py")
        planted.append((original, copy))
    return planted


def run(assignment_name: str, corpus: Path, n: int) -> int:
    from ..model.assignment import load_assignment

    assignment = load_assignment(assignment_name)
    work = Path(tempfile.mkdtemp(prefix="autograder-similarity-bench-"))
    try:
        cls = work / "class"
        cls.mkdir()
        planted = make_class(corpus, assignment, n, cls)
        total = n + len(planted)
        out = work / "out"
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "autograder", "similarity", "-a",
                               assignment_name, str(cls), "--out", str(out)],
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return 1
        import json

        data = json.loads((out / "similarity.json").read_text())
        top = {frozenset((Path(p["a"]).stem, Path(p["b"]).stem))
               for p in data["pairs"][:len(planted)]}
        found = sum(frozenset(p) in top for p in planted)
        print(f"autograder similarity: {total} submissions in {wall:.1f} s end to end "
              f"(start-up, reading, fingerprints, ranking, similarity.json and .html); "
              f"{data['candidates']} pairs share a fingerprint, of {total * (total - 1) // 2}")
        print(f"planted copies ranked first: {found} of {len(planted)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0
