"""The jinja2 environment of every HTML page the class tools write (report, similarity)."""
from __future__ import annotations

from ..project import ENGINE_DIR

TEMPLATES = ENGINE_DIR / "course" / "templates"


def page_environment():
    """Every value is escaped unless a template says otherwise (none does): a student's name,
    message or code cannot add markup to a page."""
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
