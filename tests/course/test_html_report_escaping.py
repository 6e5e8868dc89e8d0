"""report.html cannot be forged: names from Gradescope metadata and messages quoting a
student's code are escaped by the template (jinja2 autoescape), so the page carries no markup
of the student's; honest students in the same batch keep full marks."""
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

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
    assert all(attrs.get("src", "").startswith("data:image/png;base64,")
               for tag, attrs in parser.tags if tag == "img")
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
    assert rows["Honest Student"]["score"] == 35
    assert rows['"><img src=x onerror=alert(2)>']["score"] == 35


def test_report_template_autoescapes():
    import jinja2

    from autograder.course import report

    source = Path(report.__file__).read_text()
    assert "autoescape=True" in source
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(
        Path(report.__file__).parent / "templates"), autoescape=True)
    template = (Path(report.__file__).parent / "templates" / "report.html.j2").read_text()
    assert "|safe" not in template.replace(" ", "") and "autoescape false" not in template
    assert env.get_template("report.html.j2")


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
    template = (Path(__file__).resolve().parents[2] / "autograder" / "course" / "templates"
                / "feedback.html.j2").read_text()
    assert "|safe" not in template.replace(" ", "") and "autoescape false" not in template
