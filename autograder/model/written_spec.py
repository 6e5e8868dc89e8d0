"""An assignment's written questions: `written.toml` beside `assignment.toml`.

    [[question]]
    id = "why_scale"          # also the variable that holds the answer in the student's .py
    points = 3
    prompt = "Why are the attention scores divided by the square root of d_k? ..."

    [[question.rubric]]       # items a grader toggles; their points (+ or -) add up
    id = "grows"
    description = "dot products grow with d_k"
    points = 1
    feedback = "Right: a dot product adds up d_k products, so it grows with d_k."

A question's score is the sum of its applied items' points (plus any adjustment the grader
types), kept between 0 and the question's points. Model answers are hidden material: a TOML
file of `id = "answer"` lines named by `written_answers` in assignment.toml (never shipped to
students, like the reference). Only the prompts and points reach a student bundle.
"""
from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "written.toml"
QUESTION_KEYS = {"id", "points", "prompt", "rubric"}
# The top-level `rubric` key of a bundle's written.toml whose rubrics were left out.
RUBRIC_ELSEWHERE = "kept by the graders"
ITEM_KEYS = {"id", "description", "points", "feedback"}


class WrittenError(ValueError):
    """A written.toml (or model answers file) that cannot be read (the author's problem)."""


@dataclass(frozen=True)
class RubricItem:
    id: str
    description: str
    points: float
    feedback: str = ""

    def to_json(self) -> dict:
        return {"id": self.id, "description": self.description, "points": self.points,
                "feedback": self.feedback}


@dataclass(frozen=True)
class WrittenQuestion:
    id: str
    prompt: str
    points: float
    rubric: tuple[RubricItem, ...] = ()
    model_answer: str = ""         # "" when the hidden material is not at hand

    def item(self, item_id: str) -> RubricItem | None:
        return next((i for i in self.rubric if i.id == item_id), None)


def written_file(root: Path) -> Path:
    return Path(root) / FILE_NAME


def load_written(root: Path, model_answers: Path | None = None) -> list[WrittenQuestion]:
    """The written questions of the assignment in `root` (none without a written.toml), with
    the model answers when their file is given and exists."""
    path = written_file(root)
    if not path.is_file():
        return []
    answers = model_answers if model_answers is not None and model_answers.is_file() else None
    return list(_load(str(path), path.stat().st_mtime_ns,
                      str(answers) if answers else "",
                      answers.stat().st_mtime_ns if answers else 0))


@functools.lru_cache(maxsize=32)
def _load(path: str, _mtime: int, answers_path: str, _answers_mtime: int
          ) -> tuple[WrittenQuestion, ...]:
    data = read_toml(Path(path))
    models = read_toml(Path(answers_path)) if answers_path else {}
    raw = data.get("question", [])
    if not isinstance(raw, list):
        raise WrittenError(f"{path}: write each question as a [[question]] table")
    questions = []
    for i, q in enumerate(raw, 1):
        if not isinstance(q, dict):
            raise WrittenError(f"{path}: question {i} is not a table")
        qid, prompt, points = q.get("id"), q.get("prompt"), q.get("points")
        if not isinstance(qid, str) or not isinstance(prompt, str) or \
                not _is_number(points):
            raise WrittenError(f"{path}: question {i} needs `id`, `prompt` (text) and "
                               "`points` (a number); `autograder lint` says more")
        items = []
        for item in q.get("rubric", []) if isinstance(q.get("rubric"), list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or \
                    not _is_number(item.get("points")):
                raise WrittenError(f"{path}: a rubric item of {qid!r} needs `id` and `points`")
            items.append(RubricItem(item["id"], str(item.get("description", "")),
                                    float(item["points"]), str(item.get("feedback", ""))))
        model = models.get(qid, "")
        questions.append(WrittenQuestion(qid, prompt.strip(), float(points), tuple(items),
                                         model.strip() if isinstance(model, str) else ""))
    return tuple(questions)


def read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise WrittenError(f"{path}: cannot be read ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise WrittenError(f"{path}: not valid TOML: {e}") from None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def public_toml(questions: list[WrittenQuestion]) -> str:
    """The written.toml a student bundle carries: ids, points and prompts, no rubric (what a
    grader looks for stays with the graders, like the hidden cases)."""
    lines = ["# Written questions, graded by hand after you submit (the rubric stays with the",
             "# graders). Answer each in the string of the same name in your file.",
             f"rubric = {json.dumps(RUBRIC_ELSEWHERE)}", ""]
    for q in questions:
        lines += ["[[question]]", f"id = {json.dumps(q.id)}", f"points = {_number(q.points)}",
                  f"prompt = {json.dumps(q.prompt)}", ""]
    return "\n".join(lines)


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def reachable_points(q: WrittenQuestion) -> float:
    """The most its rubric items can give together (every positive item applied)."""
    return sum(i.points for i in q.rubric if i.points > 0)

