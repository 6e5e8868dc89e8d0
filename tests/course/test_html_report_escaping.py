"""report.html cannot be forged: names from Gradescope metadata and messages quoting a
student's code are escaped by the template (jinja2 autoescape), so the page carries no markup
of the student's; honest students in the same batch keep full marks."""
import json
from html.parser import HTMLParser

import pytest

from helpers import AUTOGRADED_MAX
from hostile_names import HTML_NAMES as NAMES


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def report(hostile_names) -> tuple[str, dict]:
    """report.html and the rows of the class graded once with the other renderers' students
    (tests/hostile_names.py): the first name's import error quotes markup back."""
    out = hostile_names["out"]
    rows = {s["student"]: s for s in json.loads((out / "grades.json").read_text())["submissions"]}
    assert set(NAMES.values()) <= set(rows)
    return (out / "report.html").read_text(), rows


def test_no_markup_from_students(report):
    html, rows = report
    parser = _Tags()
    parser.feed(html)
    tags = {tag for tag, _ in parser.tags}
    assert "script" not in tags
    # The plots are inline SVG drawn by the engine: no image is fetched from anywhere.
    assert not any(tag == "img" for tag, _ in parser.tags)
    assert "svg" in tags and "foreignobject" not in tags
    assert not any("onerror" in attrs for _, attrs in parser.tags)


def test_names_and_messages_are_shown_escaped(report):
    html, rows = report
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in html
    assert "<td>&#34;&gt;&lt;img src=x onerror=alert(2)&gt;</td>" in html
    assert "<td>{{ 7*7 }} &amp; Ada</td>" in html            # not evaluated by the template
    problems = html.split("errored, timed out")[1].split("</table>")[0]
    error = rows["<script>alert(1)</script>"]["error"]
    assert "<script>" in error                                # the JSON keeps the text
    assert error.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace('"', "&#34;").replace("'", "&#39;") in problems
    assert rows["Honest Student"]["score"] == AUTOGRADED_MAX
    assert rows['"><img src=x onerror=alert(2)>']["score"] == AUTOGRADED_MAX


def test_the_pages_environment_escapes_everything():
    """The product's own environment (the one report.html and similarity.html are rendered
    with), not one built here: autoescape on, and no template of it switches escaping off."""
    from autograder.course.pages import TEMPLATES, page_environment

    env = page_environment()
    hostile = '<script>alert(1)</script>"&'
    assert env.from_string("{{ x }}").render(x=hostile) == \
        "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&amp;"
    names = env.list_templates()
    assert {"report.html.j2", "similarity.html.j2", "feedback.html.j2"} <= set(names), names
    for name in names:
        source = (TEMPLATES / name).read_text()
        assert "|safe" not in source.replace(" ", ""), name
        assert "autoescape false" not in source and "Markup(" not in source, name


def test_feedback_pages_carry_no_markup_from_students(hostile_names):
    """The feedback pages report.html links (feedback/*.html, beside each .md) are escaped by
    their template as the report is: a name or message shows as text, never as markup."""
    feedback = hostile_names["out"] / "feedback"
    pages = sorted(feedback.glob("*.html"))
    assert len(pages) == len(list(feedback.glob("*.md"))) > len(NAMES)
    texts = [page.read_text() for page in pages]
    for text in texts:
        parser = _Tags()
        parser.feed(text)
        assert not {tag for tag, _ in parser.tags} & {"script", "img", "iframe", "object"}
        assert not any(name.startswith("on") for _, attrs in parser.tags for name in attrs)
        assert not any(attrs.get("href", "").startswith("javascript")
                       for _, attrs in parser.tags)
    shown = "\n".join(texts)
    assert "feedback for &lt;script&gt;alert(1)&lt;/script&gt;</h1>" in shown
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in shown    # the message quoting markup
    assert "feedback for {{ 7*7 }} &amp; Ada</h1>" in shown
