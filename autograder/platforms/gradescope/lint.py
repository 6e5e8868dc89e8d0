"""Gradescope's lint: settings that would show students what they should not see yet.

Gradescope's autograder specification (results.json, "Controlling test case visibility"):
students cannot see their total score while tests that carry points are hidden until the due
date or until grades are published (`after_due_date`, `after_published`); tests marked
`hidden` do not hide the total, being meant for tests that carry no points. A question with
hidden cases carries points, so `[gradescope] hidden_visibility = "hidden"` would show each
student their total, hidden points included, at once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..registry import Finding


def gradescope_visibility(toml_path: Path, config: dict,
                          line_of: Callable[[str, str], int]) -> list[Finding]:
    """`[gradescope] hidden_visibility = "hidden"`, which would reveal the hidden points."""
    section = config.get("gradescope")
    if not isinstance(section, dict) or section.get("hidden_visibility") != "hidden":
        return []
    return [(toml_path, line_of("gradescope", "hidden_visibility"),
             "hidden_visibility = \"hidden\" lets Gradescope show each student their total "
             "score, hidden cases' points included, as soon as they submit (tests marked "
             "hidden do not hide the total)",
             "use \"after_published\" (or \"after_due_date\"): the total then shows only "
             "when grades are published")]
