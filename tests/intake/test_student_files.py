"""What a student file is: a regular file, read without following links, size-capped, never
quoted when it is not the student's Python; and the one function that picks the file to grade."""
import os
import socket
import threading
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS

from autograder.course.classlist import LINKED_FOLDER, discover
from autograder.grading.grade import _syntax_message
from autograder.intake.student_files import UnreadableSubmission, pick_file, read_student_file
from autograder.intake.submissions import MAX_BYTES, read_submission

SECRET = "grader-secret-line-8812"
HONEST = SUBMISSIONS / "correct" / "einsum_style.py"


def within(seconds: float, fn, *args):
    """fn(*args) in a thread; fails (instead of hanging the suite) if it takes longer."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn.__name__} did not return within {seconds}s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def refused(path: Path) -> str:
    with pytest.raises(UnreadableSubmission) as e:
        within(10, read_submission, path)
    return str(e.value)


@pytest.fixture
def secret_file(tmp_path):
    f = tmp_path / "secret.txt"
    f.write_text(f"{SECRET}\n")
    return f


def test_a_regular_file_is_read(tmp_path):
    f = tmp_path / "attention.py"
    f.write_bytes(HONEST.read_bytes())
    assert read_submission(f).source == HONEST.read_text()


@pytest.mark.parametrize("relative", [True, False])
def test_a_symlink_is_refused_without_quoting_its_target(tmp_path, secret_file, relative):
    link = tmp_path / "student" / "attention.py"
    link.parent.mkdir()
    link.symlink_to(Path("../secret.txt") if relative else secret_file)
    message = refused(link)
    assert "symbolic link" in message and SECRET not in message


def test_a_link_into_the_reference_is_refused(tmp_path):
    link = tmp_path / "attention.py"
    link.symlink_to(ROOT / "reference" / "attention.py")
    assert "symbolic link" in refused(link)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/stdin", "/dev/urandom"])
def test_a_link_to_a_device_neither_hangs_nor_exhausts_memory(tmp_path, target):
    link = tmp_path / "attention.py"
    link.symlink_to(target)
    assert "symbolic link" in refused(link)


def test_a_fifo_does_not_block_the_grader(tmp_path):
    fifo = tmp_path / "attention.py"
    os.mkfifo(fifo)
    assert "named pipe" in refused(fifo)


def test_a_socket_and_a_folder_are_refused(tmp_path):
    sock_path = tmp_path / "attention.ipynb"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock_path))
    try:
        assert "not a regular file" in refused(sock_path)
    finally:
        s.close()
    folder = tmp_path / "x.py"
    folder.mkdir()
    assert "a folder" in refused(folder)


def test_a_sparse_gibibyte_file_is_refused_before_reading(tmp_path, monkeypatch):
    f = tmp_path / "attention.py"
    with open(f, "wb") as fh:
        fh.truncate(2**30)
    read = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    assert "larger than 2 MB" in refused(f)
    assert read == []            # refused from its size, not one byte read


def test_the_read_stops_at_the_limit_plus_one_byte(tmp_path):
    f = tmp_path / "a.py"
    f.write_bytes(b"x" * 100)
    assert read_student_file(f, 100) == b"x" * 100
    with pytest.raises(UnreadableSubmission, match="larger than"):
        read_student_file(f, 99)


def test_a_file_that_is_not_python_is_never_quoted(tmp_path):
    f = tmp_path / "attention.py"
    f.write_text(f"the key is {SECRET}\n")
    message = _syntax_message(f.read_text(), "attention.py")
    assert "not Python source" in message and SECRET not in message
    # A Python file with a typo still shows the student the line at fault.
    typo = "import torch\n\ndef softmax(x:\n    return x\n"
    assert "`def softmax(x:`" in _syntax_message(typo, "attention.py")


def test_binary_and_nul_files_are_refused_without_quoting(tmp_path):
    f = tmp_path / "attention.py"
    f.write_bytes(b"\xff\xfe" + SECRET.encode())
    assert SECRET not in refused(f)
    f.write_bytes(SECRET.encode() + b"\0")
    message = refused(f)
    assert "NUL" in message and SECRET not in message


# ------------------------------------------------------------------ picking the file

def make(folder: Path, *names: str) -> Path:
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x = 1\n")
    return folder


def test_pick_prefers_the_expected_name_then_the_notebook(tmp_path):
    folder = make(tmp_path / "s", "sub/attention.py", "attention.ipynb", "notes.py")
    pick = pick_file(folder, "attention.py")
    assert pick.file == folder / "sub" / "attention.py"
    make(folder, "attention.py")
    assert pick_file(folder, "attention.py").file == folder / "attention.py"
    folder2 = make(tmp_path / "t", "attention.ipynb", "helper.py")
    assert pick_file(folder2, "attention.py").file == folder2 / "attention.ipynb"


def test_ambiguous_folders_follow_the_callers_policy(tmp_path):
    folder = make(tmp_path / "s", "one.py", "two.py")
    assert pick_file(folder, "attention.py", ambiguous="closest").file == folder / "one.py"
    refused_pick = pick_file(folder, "attention.py", ambiguous="refuse")
    assert refused_pick.file is None and refused_pick.ambiguous
    single = make(tmp_path / "u", "mine.py")
    assert pick_file(single, "attention.py", ambiguous="refuse").file == single / "mine.py"


def test_pick_does_not_enter_linked_folders_but_offers_linked_files(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "linked").symlink_to(ROOT / "reference")
    assert pick_file(folder, "attention.py").file is None
    (folder / "attention.py").symlink_to(ROOT / "reference" / "attention.py")
    pick = pick_file(folder, "attention.py")
    assert pick.file == folder / "attention.py"   # picked, then refused when read
    with pytest.raises(UnreadableSubmission, match="symbolic link"):
        read_submission(pick.file)


def test_a_student_folder_that_is_a_link_is_refused(tmp_path):
    cls = tmp_path / "class"
    make(cls, "alice/attention.py")
    (cls / "mallory").symlink_to(cls / "alice")
    (cls / "eve").symlink_to(ROOT / "reference")
    students = {s.name: s for s in discover([str(cls)], "attention.py")}
    assert students["alice"].file == cls / "alice" / "attention.py"
    for name in ("mallory", "eve"):
        assert students[name].file is None and students[name].problem == LINKED_FOLDER


def test_discover_gives_special_files_a_row_instead_of_failing(tmp_path):
    cls = tmp_path / "class"
    cls.mkdir()
    os.mkfifo(cls / "fifo.py")
    (cls / "zero.py").symlink_to("/dev/zero")
    (cls / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    students = {s.name: s for s in within(10, discover, [str(cls)], "attention.py")}
    assert set(students) == {"fifo", "zero", "dangling"}
    for s in students.values():
        with pytest.raises(UnreadableSubmission):
            within(10, read_submission, s.file)
    # A FIFO given by name on the command line is a file (refused when read), not a folder.
    (named,) = discover([str(cls / "fifo.py")], "attention.py")
    assert named.file == cls / "fifo.py"


def test_the_notebook_code_limit_is_checked_before_line_processing(tmp_path):
    import json

    nb = tmp_path / "a.ipynb"
    cells = [{"cell_type": "code", "source": "x = 1\n" * (MAX_BYTES // 12), "metadata": {},
              "outputs": [], "execution_count": None} for _ in range(3)]
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                              "nbformat_minor": 5}))
    assert "MB of code" in refused(nb)


def test_gradescope_exports_refuse_linked_submission_folders(tmp_path):
    export = tmp_path / "export"
    make(export, "submission_1/attention.py")
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Ada\nsubmission_2:\n  :submitters:\n"
        "  - :name: Bob\n")
    (export / "submission_2").symlink_to(ROOT / "reference")
    students = {s.name: s for s in discover([str(export)], "attention.py")}
    assert students["Ada"].file == export / "submission_1" / "attention.py"
    assert students["Bob"].file is None and students["Bob"].problem == LINKED_FOLDER


def test_gradescope_asks_to_rename_when_no_file_has_the_expected_name(tmp_path):
    from autograder.platforms.gradescope.run import pick_submission

    folder = make(tmp_path / "submission", "one.py", "two.py")
    path, notes = pick_submission(folder, "attention.py")
    assert path is None and "Several files were submitted (one.py, two.py)" in notes[0]
    make(folder, "attention.py")
    path, notes = pick_submission(folder, "attention.py")
    assert path == folder / "attention.py"
    assert notes == ["Also submitted, not graded: one.py, two.py."]
