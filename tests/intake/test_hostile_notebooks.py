"""Notebooks are the student's data: whatever a notebook file holds, reading it ends in a
Submission or in that submission's message, in bounded time, never in another exception."""
import json
import re
import time

import pytest

from autograder.intake.submissions import UnreadableSubmission, read_notebook, read_submission


def notebook(cells, **extra) -> str:
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3",
                                                                   "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5, **extra})


def code(source) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": [],
            "execution_count": None}


def message_of(text: str) -> str:
    with pytest.raises(UnreadableSubmission) as e:
        read_notebook(text)
    return str(e.value)


@pytest.mark.parametrize("text, words", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"cells": [' * 50_000 + "]" * 50_000 + "}" * 50_000, "nested too deeply"),
    ('{"cells": [], "n": ' + "9" * 100_000 + "}", "too many digits"),
    ('{"cells": [1, 2', "not valid JSON"),
    ("[1, 2, 3]", "not a Jupyter notebook"),
    ('{"cells": "not a list"}', "not a Jupyter notebook"),
])
def test_malformed_notebooks_become_a_message(text, words):
    assert words in message_of(text)


@pytest.mark.parametrize("cells, source", [
    # Non-strings in a source list are dropped, the strings kept in order.
    ([code(["x = 1\n", 5, None, {"a": 1}])], "x = 1\n"),
    # A cell whose source, type or whole self is not what nbformat allows holds no code.
    ([code({"not": "a source"})], ""),
    ([{"cell_type": ["code"], "source": "x = 1"}], ""),       # an unhashable cell type
    (["a cell that is a string", 7, None], ""),
    ([{"cell_type": "code"}], ""),                            # no source at all
    ([code(5), code("y = 2")], "y = 2"),                      # the good cell beside a bad one
])
def test_fields_of_the_wrong_type_are_skipped(cells, source):
    sub = read_notebook(notebook(cells))
    assert sub.source.strip() == source.strip()


@pytest.mark.parametrize("metadata", [
    {"kernelspec": ["python"]},
    "not a dict",
    {},
])
def test_unreadable_metadata_is_graded_as_python(metadata):
    text = json.dumps({"cells": [code("x = 1")], "metadata": metadata, "nbformat": 4})
    sub = read_notebook(text)
    assert sub.source.strip() == "x = 1"


def test_a_kernel_that_is_not_python_is_refused_in_one_bounded_sentence():
    meta = {"kernelspec": {"name": {"deep": [1, 2] * 10_000}, "language": 3}}
    text = json.dumps({"cells": [code("x = 1")], "metadata": meta, "nbformat": 4})
    message = message_of(text)
    assert "not Python" in message and "Kernel > Change kernel" in message
    assert len(message) < 500 and "\n" not in message


def test_an_unknown_kernel_name_is_graded_as_python_with_a_bounded_note():
    meta = {"kernelspec": {"name": "x" * 10**6}}
    sub = read_notebook(json.dumps({"cells": [code("x = 1")], "metadata": meta, "nbformat": 4}))
    assert sub.source.strip() == "x = 1"
    [note] = sub.notes
    assert "graded as Python" in note and len(note) < 500


def test_unexpected_errors_become_the_submissions_message(monkeypatch):
    import autograder.intake.submissions as submissions

    def broken(*a, **k):
        raise KeyError("anything")
    monkeypatch.setattr(submissions, "_check_kernel", broken)
    assert "could not be read (KeyError)" in message_of(notebook([code("x = 1")]))


def hostile_sources() -> list[str]:
    """About 2 MB of code meant to make line-anchored regular expressions quadratic: runs of
    newlines and spaces, near-misses of `grader = otter.Notebook(` and `grader.check(`."""
    n = 45_000
    return [
        "x\n" * 100_000 + "a.b(c)\n" * 30_000,
        "\n" * n + " " * n + "x" + "\n" * n,
        " " * n + "\n" * n + "grader" + " " * n + "=" + " " * n + "Notebook",
        ("grader" + " " * 20 + ".") * 5_000 + "\t\n" * n,
        "\n".join(f"g{i} = otter.Notebook(" for i in range(5_000)) + "\n" + " \n" * n,
        ("a" * 200 + " " * 200 + "= %") * 700,
        " " * 200_000 + "grader.check(" + "\n" * 20_000,
        ("grader . check" + " " * 500) * 500,
    ]


class RegexWork:
    """The submissions module's regular expressions, counted: how often they run and how many
    characters they are given. A read that goes back over the text (a pattern run on the rest
    of the cell from every line, say) shows as characters far beyond the text's own length."""

    def __init__(self, monkeypatch):
        import autograder.intake.submissions as submissions

        self.calls = self.chars = 0
        for name, value in vars(submissions).items():
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(submissions, name, self._counted(value))

    def _counted(self, pattern: re.Pattern):
        work = self

        class Counted:
            def __getattr__(self, name):
                method = getattr(pattern, name)
                if name not in ("match", "search", "fullmatch", "finditer", "findall", "sub"):
                    return method

                def call(*args, **kwargs):
                    text = args[1] if name == "sub" else args[0]
                    work.calls += 1
                    work.chars += len(text)
                    return method(*args, **kwargs)
                return call
        return Counted()


def cpu_seconds(fn) -> float:
    """This process's CPU time for `fn()`: only ever compared with a calibration run made the
    same way, in the same process, never with a fixed number of seconds."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def test_a_2mb_notebook_of_hostile_text_is_read_in_linear_work(tmp_path, monkeypatch):
    sources = hostile_sources()
    total = sum(len(s) for s in sources)
    assert 1.5 * 2**20 < total < 2 * 2**20   # just under the limit on a notebook's code
    path = tmp_path / "hostile.ipynb"
    path.write_text(notebook([code(s) for s in sources]))
    assert path.stat().st_size > 2 * 2**20
    work = RegexWork(monkeypatch)
    sub = read_submission(path)
    assert len(sub.cells) == len(sources)
    # Each line is looked at a bounded number of times, by patterns given that line only.
    lines = sum(s.count("\n") + 1 for s in sources)
    assert work.chars <= 2 * total, (work.chars, total)
    assert work.calls <= 3 * lines, (work.calls, lines)
    # Calibration: the same amount of plain code, read the same way. A pattern that
    # backtracks over the hostile runs would cost many times as much; a generous factor
    # keeps a loaded machine from mattering.
    plain = tmp_path / "plain.ipynb"
    plain.write_text(notebook([code("x = 1\n" * (len(s) // 6 + 1)) for s in sources]))
    calibration = min(cpu_seconds(lambda: read_submission(plain)) for _ in range(3))
    hostile = min(cpu_seconds(lambda: read_submission(path)) for _ in range(3))
    assert hostile < 10 * max(calibration, 0.01), (hostile, calibration)


def test_many_notebook_variables_do_not_slow_reading(monkeypatch):
    import autograder.intake.submissions as submissions

    lines = "\n".join(f"v{i} = Notebook(" for i in range(20_000))
    calls = "\n".join(f"v{i}.check('q')" for i in range(20_000))
    seen = []
    calls_on = submissions._calls_on
    monkeypatch.setattr(submissions, "_calls_on",
                        lambda line, names: seen.append(len(names)) or calls_on(line, names))
    sub = read_notebook(notebook([code(lines), code(calls)]))
    assert sub.cells[1].source.splitlines()[0].startswith("pass")   # v0 is known
    # Every line is checked against at most MAX_NOTEBOOK_VARS names, not against all 20,000:
    # the work is lines times a constant.
    assert seen and max(seen) <= submissions.MAX_NOTEBOOK_VARS + 1, max(seen)


@pytest.mark.parametrize("body", ["{},", "[],", '"ab",', "1,"])
def test_a_notebook_of_millions_of_tiny_values_is_refused_before_parsing(tmp_path, body,
                                                                        monkeypatch):
    import autograder.intake.submissions as submissions

    n = (32 * 2**20 - 100) // len(body)
    path = tmp_path / "many.ipynb"
    path.write_text('{"cells": [], "metadata": {"x": [' + body * n + "0]}}")
    import types

    parsed = []
    monkeypatch.setattr(submissions, "json", types.SimpleNamespace(
        loads=lambda *a, **k: parsed.append(1), JSONDecodeError=json.JSONDecodeError))
    with pytest.raises(UnreadableSubmission, match="too many values"):
        read_submission(path)
    assert parsed == []          # refused from a count of its characters, never parsed


def test_a_notebook_with_a_large_image_output_is_still_read(tmp_path):
    import base64
    import os as _os

    image = base64.b64encode(_os.urandom(11 * 2**20)).decode()
    cell = {**code("x = 1"), "outputs": [{"output_type": "display_data", "metadata": {},
                                          "data": {"image/png": image}}]}
    path = tmp_path / "image.ipynb"
    path.write_text(notebook([cell] * 2))
    assert path.stat().st_size > 28 * 2**20
    assert [c.source for c in read_submission(path).cells] == ["x = 1", "x = 1"]
