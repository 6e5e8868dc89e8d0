"""The notebook's written questions are otter manual questions: `otter export --filtering` makes
the PDF that Gradescope's manual grading takes, holding the prompts and the student's answers
and none of the code.

Otter's PDF-via-HTML route prints with Playwright's chromium, looked up under
PLAYWRIGHT_BROWSERS_PATH; the test points that at Debian's chromium (no browser download)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.model.assignment import load_assignment
from autograder.platforms.notebook.build import build_notebook


def _browsers_with_debian_chromium(folder: Path) -> Path:
    """A Playwright browsers folder whose headless shell is Debian's chromium (run without
    its sandbox, as root in a container needs)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        wanted = Path(p.chromium.executable_path)       # .../chromium-<rev>/chrome-linux64/chrome
    revision = wanted.parent.parent.name.split("-")[-1]
    shell = folder / f"chromium_headless_shell-{revision}" / "chrome-headless-shell-linux64" / \
        "chrome-headless-shell"
    shell.parent.mkdir(parents=True)
    shell.write_text(f'#!/bin/sh\nexec {shutil.which("chromium")} --no-sandbox "$@"\n')
    shell.chmod(0o755)
    return folder


@pytest.mark.slow
def test_otter_export_makes_the_pdf_of_the_written_answers(tmp_path):
    nb = build_notebook(load_assignment("attention"))
    for cell in nb.cells:
        if "why_scale" in cell["metadata"].get("tags", []):
            cell["source"] = "Dot products grow with d_k, so the softmax saturates."
    path = tmp_path / "attention.ipynb"
    nbformat.write(nb, path)
    env = {**os.environ,
           "PLAYWRIGHT_BROWSERS_PATH": str(_browsers_with_debian_chromium(tmp_path / "pw"))}
    r = subprocess.run([sys.executable, "-m", "otter", "export", "--filtering", "-e", "html",
                        str(path), str(tmp_path / "answers.pdf")], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    from pypdf import PdfReader

    text = " ".join(" ".join(page.extract_text().split())
                    for page in PdfReader(tmp_path / "answers.pdf").pages)
    for q in load_assignment("attention").written:
        assert f"{q.id} ({q.points:g} points)" in text
    assert "Dot products grow with d_k, so the softmax saturates." in text
    assert "def softmax" not in text and "grader.check" not in text   # the code is filtered out
