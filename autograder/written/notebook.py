"""The written questions in the student notebook, as otter's manual questions.

Each question is three Markdown cells: the prompt, opened by `<!-- BEGIN QUESTION -->` and
locked as otter locks it; the answer cell, tagged with the question's id (where the grader reads
the answer) and `otter_answer_cell`, holding otter's placeholder; and `<!-- END QUESTION -->`.
`otter export --filtering` keeps what lies between the two comments, so the PDF it makes holds
the prompts and answers, which is what Gradescope's manual grading takes.
"""
from __future__ import annotations

import nbformat

from .collect import PLACEHOLDERS
from ..model.written_spec import WrittenQuestion

OTTER_ANSWER_TAG = "otter_answer_cell"
INTRO = ("## Written questions (graded by hand)\n\n"
         "Answer each question in your own words, a few sentences, in the cell under it: "
         "double-click the cell, replace the placeholder with your answer and run the cell. "
         "`grader.check` does not score these; a grader does, after you submit.")


def _markdown(cid: str, text: str, *, tags: list[str] | None = None, locked: bool = False):
    cell = nbformat.v4.new_markdown_cell(text)
    cell["id"] = cid[:64]
    if tags:
        cell["metadata"]["tags"] = list(tags)
    if locked:
        cell["metadata"]["deletable"] = False
        cell["metadata"]["editable"] = False
    return cell


def points_text(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def written_cells(questions: list[WrittenQuestion],
                  explanations: dict[str, str] | None = None) -> list:
    """The notebook cells of the written questions (none when there are none); a question's
    explanation from notebook.md (`explanations`, by id), if any, comes above its prompt."""
    if not questions:
        return []
    cells = [_markdown("written-about", INTRO)]
    for q in questions:
        if (explanations or {}).get(q.id):
            cells.append(_markdown(f"{q.id}-about", explanations[q.id]))
        cells.append(_markdown(f"{q.id}-prompt", f"<!-- BEGIN QUESTION -->\n\n**`{q.id}`** "
                                                 f"({points_text(q.points)}): {q.prompt}",
                               locked=True))
        cells.append(_markdown(q.id, PLACEHOLDERS[0], tags=[q.id, OTTER_ANSWER_TAG]))
        cells.append(_markdown(f"{q.id}-end", "<!-- END QUESTION -->", locked=True))
    return cells
