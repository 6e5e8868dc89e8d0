"""`autograder similarity`: planted copies (renamed, reordered, reformatted, a notebook) rank
above independent solutions, the template never pairs anyone, code the whole class shares
counts for little, links are not followed, and every piece of student text in the HTML is
escaped."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import similarity_class as cls_
from helpers import SUBMISSIONS, cli_in_process, run_cli

from autograder.model.assignment import load_assignment
from autograder.course.classlist import Student
from autograder.course import code_tokens
from autograder.course.similarity import (base_hashes, compare_paths, compare_students,
                                          template_files)


@pytest.fixture(scope="module")
def assignment():
    return load_assignment("attention")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("similarity")
    cls = cls_.build(root)
    out = root / "out"
    r = run_cli("similarity", "-a", "attention", str(cls), "--out", str(out), "--min-score",
                "0", "--max-pairs", "100000")
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads((out / "similarity.json").read_text())
    return {"cls": cls, "out": out, "data": data, "stdout": r.stdout}


def _students(pair: dict) -> frozenset[str]:
    return frozenset((pair["a_student"], pair["b_student"]))


def test_planted_copies_rank_first_and_independent_solutions_below(report):
    pairs = report["data"]["pairs"]
    planted = {frozenset((copy, original)) for copy, (original, _, _) in cls_.planted().items()}
    top = {_students(p) for p in pairs[:len(planted)]}
    assert top == planted
    lowest_planted = min(p["score"] for p in pairs if _students(p) in planted)
    highest_other = max(p["score"] for p in pairs if _students(p) not in planted)
    # Independent solutions (including the realworld files, which all start from one style and
    # share most of their code with each other) stay well below every planted copy.
    assert highest_other < 0.3 < lowest_planted
    scores = [p["score"] for p in pairs]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert report["data"]["assignment"] == "attention"
    assert report["data"]["submissions"] == len(cls_.independents()) + len(cls_.planted()) + \
        len(cls_.STUBS)


def test_pairs_name_the_files_and_their_shared_lines(report):
    for p in report["data"]["pairs"][:len(cls_.planted())]:
        a, b = Path(p["a"]), Path(p["b"])
        assert a.is_file() and b.is_file() and a.parent.parent == report["cls"]
        assert p["shared_lines"] == sorted(p["shared_lines"]) and p["shared_lines"]
        assert all(len(x) == 2 and x[0] >= 1 and x[1] >= 1 for x in p["shared_lines"])


def test_template_only_submissions_do_not_pair(report, assignment):
    stubs = set(cls_.STUBS)
    assert not [p for p in report["data"]["pairs"] if _students(p) & stubs]
    # Not because they were skipped: they were read, and nothing of theirs is beyond the base.
    found = compare_paths(assignment, [str(report["cls"] / s) for s in stubs])
    assert len(found.sources) == 3 and not found.skipped
    assert all(len(s.hashes) == 0 for s in found.sources)


def _code_line(path: Path, line: int) -> str:
    from autograder.intake.submissions import read_submission

    return read_submission(path).source.split("\n")[line - 1].strip()


def test_a_notebook_and_a_py_of_the_same_code_match_line_for_line(report):
    pair = next(p for p in report["data"]["pairs"]
                if _students(p) == {"copy_notebook", "finfo_min_helpers"})
    assert pair["score"] > 0.8
    notebook_first = pair["a"].endswith(".ipynb")
    same = 0
    for la, lb in pair["shared_lines"]:
        nb, py = (la, lb) if notebook_first else (lb, la)
        nb_file, py_file = (pair["a"], pair["b"]) if notebook_first else (pair["b"], pair["a"])
        same += _code_line(Path(nb_file), nb) == _code_line(Path(py_file), py)
    assert same >= 0.9 * len(pair["shared_lines"])
    # The highlighted lines cover the functions' code, not a few stray lines.
    original = (SUBMISSIONS / "correct" / "finfo_min_helpers.py").read_text().split("\n")
    body = {i for i, line in enumerate(original, 1)
            if line.startswith("    ") and line.strip() and not line.strip().startswith("#")}
    covered = {(lb if notebook_first else la) for la, lb in pair["shared_lines"]}
    assert len(body & covered) >= 0.8 * len(body)


def _fingerprints(path: Path, text: str, base) -> set[int]:
    path.write_text(text)
    found = compare_students([Student(path.stem, None, path)], [], shown=None)
    (source,) = found.sources
    return {int(h) for h in source.hashes if int(h) not in base}


@pytest.mark.parametrize("name", sorted(p.stem for p in (SUBMISSIONS / "correct").glob("*.py")))
def test_renaming_reordering_and_reformatting_leave_the_fingerprints_unchanged(name, tmp_path,
                                                                            assignment):
    original = (SUBMISSIONS / "correct" / f"{name}.py").read_text()
    disguised = cls_.rename(cls_.reorder(cls_.reformat(original)))
    compile(disguised, name, "exec")
    base = base_hashes(template_files(assignment))
    a = _fingerprints(tmp_path / "a.py", original, base)
    b = _fingerprints(tmp_path / "b.py", disguised, base)
    assert a and a == b


def test_a_different_solution_has_different_fingerprints(tmp_path, assignment):
    """The normalisation keeps what tells solutions apart (library calls, structure)."""
    base = base_hashes(template_files(assignment))
    a = _fingerprints(tmp_path / "a.py", (SUBMISSIONS / "correct" / "einsum_style.py")
                      .read_text(), base)
    b = _fingerprints(tmp_path / "b.py", (SUBMISSIONS / "correct" / "loop_over_heads.py")
                      .read_text(), base)
    assert len(a & b) < 0.2 * min(len(a), len(b))


def _with_functions(template: str, **functions: str) -> str:
    """The template with some of its stubs replaced by these definitions."""
    imports, others = cls_.top_level(template)
    body = []
    for text in others:
        name = text.split("def ", 1)[1].split("(", 1)[0] if text.startswith("def ") else None
        body.append(functions.get(name, text))
    return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(body) + "\n"


def test_code_most_of_the_class_shares_counts_for_little(tmp_path, assignment):
    """Everyone writes the same softmax; each writes their own attention. Two of them share the
    whole softmax, yet score low in the class, and higher where no one else has it."""
    template = cls_.TEMPLATE.read_text()
    softmax = cls_.top_level((SUBMISSIONS / "correct" / "reference_style.py").read_text())[1]
    softmax = next(t for t in softmax if t.startswith("def softmax"))
    attentions = []
    for path in sorted((SUBMISSIONS / "correct").glob("*.py")):
        texts = cls_.top_level(path.read_text())[1]
        attentions.append(next(t for t in texts
                               if t.startswith("def scaled_dot_product_attention")))
    attentions = list(dict.fromkeys(attentions))[:8]
    students = []
    for i, attention in enumerate(attentions):
        f = tmp_path / f"s{i}.py"
        f.write_text(_with_functions(template, softmax=softmax,
                                     scaled_dot_product_attention=attention))
        students.append(Student(f.stem, None, f))
    template_paths = template_files(assignment)
    whole = compare_students(students, template_paths)
    alone = compare_students(students[:2], template_paths)
    pair = lambda c: next(p.score for p in c.pairs  # noqa: E731
                          if {p.a.student, p.b.student} == {"s0", "s1"})
    assert pair(whole) < 0.2 < pair(alone)
    assert pair(alone) > 2 * pair(whole)


def test_links_are_not_followed(tmp_path, assignment):
    cls = tmp_path / "class"
    for name in ("ada", "bob"):
        (cls / name).mkdir(parents=True)
        shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", cls / name / "attention.py")
    (cls / "bob" / "attention.py").write_text(
        cls_.rename((SUBMISSIONS / "correct" / "einsum_style.py").read_text()))
    os.symlink(cls / "ada", cls / "linked_folder")
    (cls / "linked_file").mkdir()
    os.symlink(cls / "ada" / "attention.py", cls / "linked_file" / "attention.py")
    found = compare_paths(assignment, [str(cls)])
    assert sorted(s.student for s in found.sources) == ["ada", "bob"]
    why = {s.student: s.why for s in found.skipped}
    assert set(why) == {"linked_folder", "linked_file"}
    assert all("link" in w for w in why.values())
    assert [{p.a.student, p.b.student} for p in found.pairs] == [{"ada", "bob"}]


def test_unreadable_and_broken_files_get_a_reason_or_are_compared(tmp_path, assignment):
    found = compare_paths(assignment, [str(SUBMISSIONS / "broken"), str(SUBMISSIONS / "hostile")])
    names = {s.student for s in found.sources} | {s.student for s in found.skipped}
    expected = {p.stem for p in (SUBMISSIONS / "broken").glob("*.py")} | \
        {p.stem for p in (SUBMISSIONS / "hostile").glob("*.py")}
    assert names == expected
    assert "not_utf8" in {s.student for s in found.skipped}


def test_tokenising_is_bounded_and_survives_what_does_not_tokenise():
    huge = "x = [" + "1, " * 300_000 + "]\n"
    total = sum(len(u.tokens) for u in code_tokens.units(huge))
    assert total <= code_tokens.MAX_TOKENS + 10
    # An unterminated string costs its line; the function after it is still read.
    broken = 's = """never closed\n' + (SUBMISSIONS / "correct" / "einsum_style.py").read_text()
    good = code_tokens.units((SUBMISSIONS / "correct" / "einsum_style.py").read_text())
    after = code_tokens.units(broken)
    assert [u.tokens for u in good][-3:] == [u.tokens for u in after][-3:]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


HOSTILE_NAME = "<img src=x onerror=alert(1)>&amp;"
HOSTILE_CODE = "# </td></tr></table><script>alert(2)</script> \x1b[2J{{ 7*7 }}\n"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-similarity")
    cls = root / "class"
    text = HOSTILE_CODE + (SUBMISSIONS / "correct" / "loop_over_heads.py").read_text() + \
        "\nBANNER = '<script>alert(3)</script>'\n"
    for name in (HOSTILE_NAME, "honest"):
        (cls / name).mkdir(parents=True)
        (cls / name / "attention.py").write_text(text)
    (cls / "<b>unread").mkdir()
    out = root / "out"
    r = run_cli("similarity", "-a", "attention", str(cls), "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    return {"out": out, "stdout": r.stdout}


def test_html_shows_student_text_escaped(hostile):
    html = (hostile["out"] / "similarity.html").read_text()
    parser = _Tags()
    parser.feed(html)
    assert "script" not in {tag for tag, _ in parser.tags}
    assert "img" not in {tag for tag, _ in parser.tags}
    assert not any(k.startswith("on") for _, attrs in parser.tags for k in attrs)
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;amp;" in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html and "{{ 7*7 }}" in html
    assert "\x1b" not in html and "\\x1b[2J" in html
    assert "&lt;b&gt;unread" in html          # the folder with nothing to compare
    assert "\x1b" not in hostile["stdout"]
    data = json.loads((hostile["out"] / "similarity.json").read_text())
    assert data["pairs"][0]["score"] == 1.0
    assert {data["pairs"][0]["a_student"], data["pairs"][0]["b_student"]} == {HOSTILE_NAME,
                                                                              "honest"}


def test_html_opens_in_a_headless_browser(hostile, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is installed by `make system-deps`"
    page = (hostile["out"] / "similarity.html").resolve()
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--no-first-run"]
    r = subprocess.run(common + [f"--user-data-dir={tmp_path / 'p1'}", "--enable-logging=stderr",
                                 "--v=0", "--virtual-time-budget=2000", "--dump-dom",
                                 page.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    assert "<script" not in dom and "Uncaught" not in r.stderr
    assert dom.count('class="pair"') == 1 and 'class="strong"' in dom
    shot = tmp_path / "similarity.png"
    subprocess.run(common + [f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1400,1200",
                             f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_similarity_needs_an_out_folder_in_grade():
    r = run_cli("grade", "-a", "attention", str(SUBMISSIONS / "correct" / "einsum_style.py"),
                "--similarity")
    assert r.returncode == 2 and "--out" in r.stderr


def test_grade_similarity_adds_a_section_and_changes_no_grade(tmp_path):
    cls = tmp_path / "class"
    cls.mkdir()
    shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", cls / "ada.py")
    (cls / "bob.py").write_text(cls_.rename((SUBMISSIONS / "correct" / "einsum_style.py")
                                            .read_text()))
    shutil.copy(SUBMISSIONS / "wrong" / "block_gelu.py", cls / "cy.py")
    out = tmp_path / "out"
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--jobs", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    before = {f: (out / f).read_bytes() for f in ("grades.json", "grades.csv")}
    assert 'id="similarity"' not in (out / "report.html").read_text()
    # The same class again (results from the cache), now with the similarity section.
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--jobs", "1",
                       "--similarity")
    assert r.returncode == 0, r.stderr[-3000:]
    assert {f: (out / f).read_bytes() for f in before} == before
    html = (out / "report.html").read_text()
    section = html.split('id="similarity"', 1)[1].split("<h2>", 1)[0]
    assert "ada" in section and "bob" in section and "similarity.html#pair-1" in section
    data = json.loads((out / "similarity.json").read_text())
    assert {data["pairs"][0]["a_student"], data["pairs"][0]["b_student"]} == {"ada", "bob"}
    assert (out / "similarity.html").is_file()


def test_benchmark_builds_a_class_and_finds_its_planted_copies():
    r = run_cli("benchmark", "--similarity", "--n", "60", "--corpus", str(SUBMISSIONS),
                timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "65 submissions in" in r.stdout
    assert "planted copies ranked first: 5 of 5" in r.stdout
