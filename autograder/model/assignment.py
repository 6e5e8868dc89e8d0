"""Assignments as data: `assignments/<name>/assignment.toml`, its question files and its API.

The student-facing API (function names and parameters) is read from the student template with
`ast`, so the template is the single source of truth and nothing here executes it. So are the
*answers*: top-level `NAME = None` lines of the template, variables a student sets to answer a
knowledge-check question (a question lists them under `answers` in `assignment.toml`).

An assignment is found by the path of any folder holding an `assignment.toml`, else by name: a
folder of the project's `assignments/`, else of the current folder's (`assignment_places`).
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from .project import ASSIGNMENTS_DIR
from .safetext import shown_path
from .limits import Limits
from .routines import RoutineError, Routines, parse_routines
from .written_spec import WrittenError, WrittenQuestion, load_written


class AssignmentError(Exception):
    """An assignment that cannot be found or is malformed (an instructor's problem)."""


@dataclass
class Signature:
    name: str
    params: list[str]
    defaults: dict[str, str]

    def render(self) -> str:
        parts = [f"{p}={self.defaults[p]}" if p in self.defaults else p for p in self.params]
        return f"{self.name}({', '.join(parts)})"


@dataclass
class QuestionInfo:
    id: str
    functions: list[str]
    test_file: Path
    answers: list[str] = field(default_factory=list)
    # Routines this question forbids, as `assignment.toml` lists them (ids of `[routines]` or
    # names); its question file's `Question(forbidden=...)` adds to them.
    forbidden: list[str] = field(default_factory=list)


@dataclass
class Assignment:
    name: str
    title: str
    root: Path
    student_file: str
    template: Path
    reference_path: Path | None
    questions: list[QuestionInfo]
    api: dict[str, Signature]
    limits: Limits
    config: dict = field(default_factory=dict)
    answers: list[str] = field(default_factory=list)
    # Questions answered in words and graded by hand (written.toml; model/written_spec.py).
    written: list[WrittenQuestion] = field(default_factory=list)
    # The library routines its questions may forbid, and what computes each (`[routines]`).
    routines: Routines = field(default_factory=Routines)

    @property
    def snapshot_dir(self) -> Path:
        return self.root / "snapshots"

    @property
    def mistake_table(self) -> Path:
        """The known mistakes' outcomes on the public cases (autograder.diagnose.table)."""
        return self.snapshot_dir / "mistake-outcomes.bin"

    def question(self, qid: str) -> QuestionInfo:
        for q in self.questions:
            if q.id == qid:
                return q
        raise AssignmentError(f"assignment {self.name} has no question {qid!r}")

    def question_of(self, function: str) -> str | None:
        """The question grading a function (or an answer variable)."""
        for q in self.questions:
            if function in q.functions or function in q.answers:
                return q.id
        return None

    def load_reference(self) -> ModuleType:
        return _load_reference(str(self.reference_path))


@functools.lru_cache(maxsize=None)
def _load_reference(path: str) -> ModuleType:
    if not path or not Path(path).is_file():
        raise AssignmentError("the hidden reference implementation is not available here")
    spec = importlib.util.spec_from_file_location(f"_reference_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_api(source: str) -> dict[str, Signature]:
    """Top-level functions of a template: names, parameter names and default values."""
    api = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            args = node.args.posonlyargs + node.args.args
            defaults = {}
            for a, d in zip(args[len(args) - len(node.args.defaults):], node.args.defaults):
                defaults[a.arg] = ast.unparse(d)
            api[node.name] = Signature(node.name, [a.arg for a in args], defaults)
    return api


def parse_answers(source: str) -> list[str]:
    """Names of a template's top-level `NAME = None` lines (answers the student fills in)."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and not target.id.startswith("_") \
                and isinstance(value, ast.Constant) and value.value is None \
                and target.id not in names:
            names.append(target.id)
    return names


# What `-a` takes, said once for every command that has it (autograder/arguments.py).
ASSIGNMENT_ARGUMENT_HELP = ("the assignment: a folder holding assignment.toml (a path), or the "
                            "name of one under assignments/ of the project or of the current "
                            "folder")


def assignment_places(name_or_path: str | Path) -> list[Path]:
    """Where `-a NAME_OR_PATH` is looked for, in order: the folder it names (or the folder of
    the assignment.toml it names), then `assignments/NAME` of the project, then of the current
    folder."""
    p = Path(name_or_path).expanduser()
    if p.name == "assignment.toml":
        p = p.parent
    places = [p, ASSIGNMENTS_DIR / str(name_or_path), Path("assignments") / str(name_or_path)]
    unique: list[Path] = []
    for place in places:
        if place.resolve() not in [u.resolve() for u in unique]:
            unique.append(place)
    return unique


def find_assignment_root(name_or_path: str | Path) -> Path:
    """The folder of the assignment `-a` names (see `assignment_places`), resolved."""
    places = assignment_places(name_or_path)
    for place in places:
        if (place / "assignment.toml").is_file():
            return place.resolve()
    known = sorted({d.name for folder in (ASSIGNMENTS_DIR, Path("assignments"))
                    if folder.is_dir() for d in folder.iterdir()
                    if (d / "assignment.toml").is_file()})
    looked = ", ".join(shown_path(place / "assignment.toml") for place in places)
    raise AssignmentError(f"no assignment {str(name_or_path)!r} (looked for {looked}); known: "
                          f"{', '.join(known) or 'none'}")


@functools.lru_cache(maxsize=None)
def load_assignment(name_or_path: str | Path) -> Assignment:
    root = find_assignment_root(name_or_path)
    try:
        config = tomllib.loads((root / "assignment.toml").read_text())
    except tomllib.TOMLDecodeError as e:
        raise AssignmentError(f"{root / 'assignment.toml'}: {e}") from e
    integrity = config.get("integrity", {})
    if not isinstance(integrity, dict) or integrity.get("on_tamper", "zero") not in ("zero",
                                                                                    "flag"):
        raise AssignmentError(f"{root / 'assignment.toml'}: [integrity] on_tamper must be "
                              "\"zero\" or \"flag\"")
    base = root.parent.parent
    template = resolve_config_path(root, base, config["template"])
    ref = config.get("reference")
    reference_path = resolve_config_path(root, base, ref) if ref else None
    if not template.is_file():
        raise AssignmentError(f"{root / 'assignment.toml'}: template {config['template']!r} "
                              "not found")
    template_source = template.read_text()
    answers = parse_answers(template_source)
    questions = []
    for q in config["question"]:
        test_file = root / "tests" / f"{q['id']}.py"
        if not test_file.is_file():
            raise AssignmentError(f"question file missing: {test_file}")
        unknown = [a for a in q.get("answers", []) if a not in answers]
        if unknown:
            raise AssignmentError(f"question {q['id']}: answers {', '.join(unknown)} are not "
                                  "`NAME = None` lines of the template")
        forbidden = q.get("forbidden", [])
        if not isinstance(forbidden, list) or not all(isinstance(n, str) and n
                                                      for n in forbidden):
            raise AssignmentError(f"question {q['id']}: forbidden must be a list of routines "
                                  "(ids of [routines] or library names)")
        questions.append(QuestionInfo(q["id"], list(q.get("functions", [])), test_file,
                                      list(q.get("answers", [])), list(forbidden)))
    model_answers = config.get("written_answers")
    try:
        written = load_written(root, resolve_config_path(root, base, model_answers)
                               if isinstance(model_answers, str) else None)
    except WrittenError as e:
        raise AssignmentError(str(e)) from e
    try:
        routines = Routines(parse_routines(config.get("routines")))
    except RoutineError as e:
        raise AssignmentError(f"{shown_path(root / 'assignment.toml')}: {e}") from e
    return Assignment(
        written=written, routines=routines,
        name=config["name"], title=config.get("title", config["name"]), root=root,
        student_file=config["student_file"], template=template,
        reference_path=reference_path if reference_path and reference_path.exists() else None,
        questions=questions, api=parse_api(template_source),
        limits=Limits.from_config(config.get("limits", {})), config=config, answers=answers,
    )


def resolve_config_path(root: Path, base: Path, rel: str) -> Path:
    """Paths in assignment.toml are relative to the assignment folder, else to the project."""
    for b in (root, base):
        p = (b / rel).resolve()
        if p.exists():
            return p
    return (base / rel).resolve()


def assignment_for_test_file(test_file: str) -> Assignment | None:
    """The assignment a question file belongs to (its folder's parent holds assignment.toml)."""
    root = Path(test_file).resolve().parent.parent
    if (root / "assignment.toml").is_file():
        return load_assignment(root)
    return None
