"""The jinja2 environment of every HTML page the class tools write (report, similarity)."""
from __future__ import annotations

from ..model.project import ENGINE_DIR

TEMPLATES = ENGINE_DIR / "course" / "templates"


def page_environment():
    """Every value is escaped: a student's name, message or code cannot add markup to a page,
    and shows its control and format characters as codes (`<U+202E>`). The `code` filter
    escapes too, and shows the engine's code spans (`...`) as code."""
    import jinja2
    from markupsafe import Markup

    from ..model.safetext import html_text, page_finalize

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             finalize=page_finalize)
    env.filters["code"] = lambda text: Markup(html_text(text))
    env.filters["picture"] = _picture_uri
    return env


def _picture_uri(picture: dict) -> str:
    """A case's heatmaps (`autograder.pictures`) as a data URI; "" if they cannot be drawn."""
    try:
        from ..pictures.draw import data_uri

        return data_uri(picture)
    except Exception:  # noqa: BLE001 - a picture never costs a page
        return ""
