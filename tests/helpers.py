"""Helpers shared by the tests: paths, corpus headers, the CLI. Tests import them from here
(`from helpers import ...`); fixtures live in conftest.py."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "submissions"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


QUESTIONS = ["softmax", "attention", "mask", "split_heads", "multi_head", "block"]


def read_header(path: Path) -> dict[str, str]:
    """`# key: value` lines at the top of a corpus file."""
    header = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*(\w+):\s*(.*)", line)
        if not m:
            break
        header[m.group(1)] = m.group(2).strip()
    return header


def id_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def assert_loses_and_keeps(result, header: dict, questions: list[str]) -> list[str]:
    """A corpus file loses points on exactly its `loses` questions, with readable feedback;
    returns those question ids."""
    loses, keeps = id_list(header["loses"]), id_list(header["keeps"])
    assert sorted(loses + keeps) == sorted(questions)
    for qid in keeps:
        q = result.questions[qid]
        assert q.status == "passed", f"{qid} should keep full marks: {q.feedback()}"
    for qid in loses:
        q = result.questions[qid]
        assert q.score < q.max_score, f"{qid} should lose points ({header['mistake']})"
        text = q.feedback()
        assert text and "Traceback" not in text and "autograder/" not in text
    return loses


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None,
            timeout: int = 600) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=full_env)


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())
