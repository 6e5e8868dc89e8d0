"""The jinja2 environment of every HTML page the class tools write (report, similarity)."""
from __future__ import annotations

import functools

from ..model.project import ENGINE_DIR


TEMPLATES = ENGINE_DIR / "course" / "templates"


@functools.lru_cache(maxsize=None)
def page_environment():
    """Every value is escaped: a student's name, message or code cannot add markup to a page,
    and shows its control and format characters as codes (`<U+202E>`). The `code` filter
    escapes too, and shows the engine's code spans (`...`) as code. One environment per
    process: it compiles each template once (compiling the feedback page's took about 0.1 s,
    as much again as rendering it for a whole class)."""
    import jinja2
    from markupsafe import Markup

    from ..model.safetext import html_text, page_finalize

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             finalize=page_finalize)
    env.filters["code"] = lambda text: Markup(html_text(text))
    env.filters["picture"] = _picture_svg
    return env


def _picture_svg(picture: dict):
    """A case's heatmaps (`autograder.pictures`) as inline SVG, every text in it escaped; ""
    if they cannot be drawn."""
    from markupsafe import Markup

    try:
        from ..pictures.draw import heatmap

        return Markup(heatmap(picture))
    except Exception:  # noqa: BLE001 - a picture never costs a page
        return ""
