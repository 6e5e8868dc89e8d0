"""The graders' page, as graders and an attacker meet it: `autograder review` run as a command,
driven over HTTP and in Debian's chromium (Playwright). One class is graded and one server
started for the module; one browser serves every test.

Covered: nothing is served without a token (static files and the API included) nor to another
host name; the token moves into a SameSite cookie; changes need the page's CSRF token, JSON and
no foreign Origin; two graders, one conflict refused with a message; the audit log; hostile
answers (script tags, `onerror`, bidirectional and control characters, a 1 MB answer) shown as
text; a group graded with the keyboard reaching the student's feedback page; a graded
answer's decision suggested to a reworded answer, never to a word salad.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from alike_answers import LONG, SAME_THING, WORD_SALAD
from helpers import GRADED, ROOT, SUBMISSIONS, cli_in_process

CORRECT = (SUBMISSIONS / "correct" / "einsum_style.py").read_text()
SCALE = "Dot products grow with d_k, so the softmax saturates and its gradients vanish."
HOSTILE = ('<script>document.body.dataset.pwned = "script"</script> '
           '<img src=x onerror="document.body.dataset.pwned = \'img\'"> '
           'override \u202eevil\u202c and a clear-screen \x1b[2J here')
OVERRIDDEN = "mal\u202elory"          # a file name with a right-to-left override
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _answer(name: str, text: str) -> str:
    return CORRECT + f"\nwhy_scale = {text!r}\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("review-page")
    cls = root / "class"
    cls.mkdir()
    (cls / "ann.py").write_text(_answer("ann", SCALE))
    (cls / "ben.py").write_text(_answer("ben", SCALE + "!"))       # near-identical: one group
    (cls / "cat.py").write_text(_answer("cat", HOSTILE))
    (cls / "dan.py").write_text(_answer("dan", "x" * 1_000_000))   # a 1 MB answer
    (cls / "lea.py").write_text(_answer("lea", LONG))
    (cls / "ivy.py").write_text(_answer("ivy", SAME_THING["ivy"][0]))   # lea's, reworded
    (cls / "kim.py").write_text(_answer("kim", WORD_SALAD))
    (cls / f"{OVERRIDDEN}.py").write_text(_answer(OVERRIDDEN, "A \u2067named\u2069 answer."))
    out = root / "out"
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--jobs", "1",
                       "--question", "softmax", "--question", "why_scale")
    # The 1 MB file is too large for the source scan: flagged for review (exit status 4).
    assert r.returncode in GRADED, r.stdout + r.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def server(results):
    """`autograder review` as a grader runs it, with two graders; stopped with Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "review", "-a", "attention",
                             str(results), "--port", "0", "--grader", "ann-grader",
                             "--grader", "bo"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    links = {}
    while len(links) < 2:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        m = re.match(r"\s+(\S+): (http://127\.0\.0\.1:(\d+)/)\?token=(\S+)$", line)
        if m:
            links[m.group(1)] = {"base": m.group(2), "token": m.group(4),
                                 "port": int(m.group(3))}
    yield {"proc": proc, "links": links, "out": results,
           "base": links["bo"]["base"], "port": links["bo"]["port"]}
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "writing the results folder's files" in stdout


def _request(url: str, *, token: str | None = None, method: str = "GET", data=None,
             headers: dict | None = None) -> tuple[int, dict, str]:
    headers = dict(headers or {})
    if token:
        headers.setdefault("Authorization", f"Bearer {token}")
    body = json.dumps(data).encode() if data is not None else None
    req = urllib.request.Request(url, data=body, method=method, headers=headers)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def _csrf(server, grader: str) -> str:
    status, _, page = _request(server["base"], token=server["links"][grader]["token"])
    assert status == 200
    return re.search(r'<meta name="csrf" content="([0-9a-f]+)">', page).group(1)


def _post(server, grader: str, path: str, data: dict, **headers) -> tuple[int, dict]:
    h = {"Content-Type": "application/json", "X-CSRF-Token": _csrf(server, grader), **headers}
    status, _, body = _request(server["base"] + path.lstrip("/"), method="POST", data=data,
                               token=server["links"][grader]["token"], headers=h)
    return status, json.loads(body) if body.startswith("{") else {"text": body}


def _group_of(server, grader: str, student: str) -> dict:
    _, _, body = _request(server["base"] + "api/q/why_scale",
                          token=server["links"][grader]["token"])
    data = json.loads(body)
    return next(g for g in data["groups"] if any(m["student"] == student for m in g["members"]))


# ------------------------------------------------------------------ access

@pytest.mark.parametrize("path", ["", "q/why_scale", "api/q/why_scale", "static/review.js",
                                  "static/review.css", "log", "api/status",
                                  "api/q/why_scale/model", "favicon.ico"])
def test_nothing_is_served_without_a_token(server, path):
    for token in (None, "not-a-token", server["links"]["bo"]["token"][:-1]):
        status, headers, body = _request(server["base"] + path, token=token)
        assert status == 403, (path, token)
        assert "dataset.pwned" not in body and SCALE not in body
        assert "default-src 'none'" in headers["content-security-policy"]


def test_a_change_without_a_token_is_refused(server):
    status, _, _ = _request(server["base"] + "api/q/why_scale/grade", method="POST",
                            data={"members": [["ann", 0]], "items": []},
                            headers={"Content-Type": "application/json"})
    assert status == 403


def test_another_host_name_gets_nothing(server):
    """A page of another site whose name points at 127.0.0.1 (DNS rebinding) is refused."""
    status, _, body = _request(server["base"], token=server["links"]["bo"]["token"],
                               headers={"Host": f"attacker.example:{server['port']}"})
    assert status == 421 and SCALE not in body


def test_the_token_moves_into_a_strict_cookie(server):
    status, headers, _ = _request(server["base"] + "q/why_scale?token="
                                  + server["links"]["bo"]["token"])
    assert status == 303 and headers["location"] == "/q/why_scale"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert cookie.startswith(f"review_{server['port']}={server['links']['bo']['token']}")


def test_changes_need_the_pages_csrf_token_json_and_no_foreign_origin(server):
    token = server["links"]["bo"]["token"]
    url = server["base"] + "api/q/why_scale/grade"
    change = {"members": [["ann", 0]], "items": ["grow"], "adjust": 0, "comment": ""}
    csrf = _csrf(server, "bo")
    refused = [{"Content-Type": "application/json"},                       # no CSRF token
               {"Content-Type": "application/json", "X-CSRF-Token": "0" * 64},
               {"Content-Type": "text/plain", "X-CSRF-Token": csrf},   # a plain form's type
               {"Content-Type": "application/json", "X-CSRF-Token": csrf,
                "Origin": "http://attacker.example"}]
    for headers in refused:
        assert _request(url, method="POST", data=change, token=token,
                        headers=headers)[0] == 403, headers
    # Another grader's CSRF token does not do either.
    other = _csrf(server, "ann-grader")
    assert _request(url, method="POST", data=change, token=token,
                    headers={"Content-Type": "application/json",
                             "X-CSRF-Token": other})[0] == 403
    assert _group_of(server, "bo", "ann")["members"][0]["decision"] is None   # none applied


def test_the_server_binds_the_loopback_address_and_warns_when_told_otherwise(results):
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "review", "-a", "attention",
                             str(results), "--port", "0", "--host", "0.0.0.0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("Grading the written answers")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    assert "WARNING: serving on 0.0.0.0, not only this machine" in err


# ------------------------------------------------------------------ graders

def test_two_graders_one_conflict_and_the_audit_log(server):
    group = _group_of(server, "bo", "cat")
    members = [[m["student"], m["version"]] for m in group["members"]]
    status, reply = _post(server, "ann-grader", "api/q/why_scale/grade",
                          {"members": members, "items": ["sums_to_one"], "adjust": 0,
                           "comment": "first"})
    assert status == 200 and reply["saved"] == 1
    # The second grader decided from the same page (version 0): refused, not written over.
    status, reply = _post(server, "bo", "api/q/why_scale/grade",
                          {"members": members, "items": ["grow"], "adjust": 0,
                           "comment": "second"})
    assert status == 409
    assert "ann-grader changed this grade at" in reply["error"] and "reload" in reply["error"]
    assert _group_of(server, "bo", "cat")["members"][0]["decision"]["comment"] == "first"
    _, _, log = _request(server["base"] + "log", token=server["links"]["bo"]["token"])
    row = re.search(r"<tr><td class=\"num\">\d+</td><td>([^<]+)</td><td>ann-grader</td>"
                    r"<td>grade</td><td>cat</td><td>why_scale</td>", log)
    assert row and row.group(1).endswith("Z")
    assert "&#34;first&#34;" in log or "&quot;first&quot;" in log


def test_a_rubric_item_edited_after_use_rescores_its_answers(server):
    data = json.loads(_request(server["base"] + "api/q/why_scale",
                               token=server["links"]["bo"]["token"])[2])
    item = next(i for i in data["rubric"] if i["id"] == "sums_to_one")
    status, reply = _post(server, "bo", "api/q/why_scale/rubric/sums_to_one",
                          {"description": item["description"], "points": 1,
                           "feedback": item["feedback"], "version": item["version"]})
    assert status == 200 and reply["rescored"] >= 1
    cat = _group_of(server, "bo", "cat")["members"][0]
    assert cat["score"] == 1
    status, reply = _post(server, "bo", "api/q/why_scale/rubric/sums_to_one",
                          {"description": "x", "points": -1, "feedback": "",
                           "version": item["version"]})           # from the old version
    assert status == 409
    status, _ = _post(server, "bo", "api/q/why_scale/rubric/sums_to_one",
                      {**item, "version": item["version"] + 1})   # put it back
    assert status == 200


# ------------------------------------------------------------------ in the browser

@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(180_000)   # a loaded machine: the page waits on the server
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    page.goto(server["links"]["ann-grader"]["base"] + "?token="
              + server["links"]["ann-grader"]["token"])
    yield page
    context.close()


def _open_group(page, server, student: str) -> None:
    page.goto(server["base"] + "q/why_scale")
    page.wait_for_selector("body[data-loaded=true]")
    for _ in range(10):
        if page.locator("#answers .who b").all_inner_texts() and student_alias(page, server,
                                                                               student):
            return
        page.keyboard.press("j")
    raise AssertionError(f"no group of {student}")


def student_alias(page, server, student: str) -> bool:
    group = _group_of(server, "ann-grader", student)
    alias = next(m["alias"] for m in group["members"] if m["student"] == student)
    return alias in page.locator("#answers .who b").all_inner_texts()


def test_hostile_answers_are_shown_as_text(page, server, tmp_path):
    _open_group(page, server, "cat")
    text = page.inner_text("#answers")
    assert "<script>document.body.dataset.pwned" in text and 'onerror="' in text
    assert "<U+202E>evil<U+202C>" in text and "<U+001B>[2J" in text
    assert page.locator("#answers script, #answers img").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None and not page.dialogs
    page.screenshot(path=str(tmp_path / "hostile.png"))
    # The 1 MB answer arrives cut, as text.
    _open_group(page, server, "dan")
    shown = page.locator("#answers .text").first.inner_text()
    assert len(shown) == 20_000 and set(shown) == {"x"}
    # The audit log and the student's own feedback page escape it too.
    page.goto(server["base"] + "log")
    assert page.locator("main script, main img").count() == 0
    page.goto((server["out"] / "feedback" / "cat.html").as_uri())
    assert "<script>document.body.dataset.pwned" in page.inner_text("blockquote.answer")
    assert page.evaluate("document.body.dataset.pwned") is None and not page.dialogs


def test_names_show_format_characters_as_codes(page, server, tmp_path):
    """A student's name with an override shows it as a code when names are shown, on the
    question's page and in the audit log; the name still works as the key of a change."""
    _open_group(page, server, OVERRIDDEN)
    page.keyboard.press("n")
    assert "mal<U+202E>lory" in page.inner_text("#answers .who")
    assert "A <U+2067>named<U+2069> answer." in page.inner_text("#answers .text")
    assert "\u202e" not in page.inner_text("body") and "\u2067" not in page.inner_text("body")
    page.screenshot(path=str(tmp_path / "names.png"))
    member = _group_of(server, "bo", OVERRIDDEN)["members"][0]
    status, _ = _post(server, "bo", "api/q/why_scale/grade",
                      {"members": [[OVERRIDDEN, member["version"]]], "items": ["grow"],
                       "adjust": 0, "comment": ""})
    assert status == 200
    page.goto(server["base"] + "log")
    log = page.inner_text("main")
    assert "mal<U+202E>lory" in log and "\u202e" not in log


def test_a_group_graded_with_the_keyboard_reaches_the_feedback_page(page, server, tmp_path):
    _open_group(page, server, "ann")
    assert "2 answers graded together" in page.inner_text("#group-head")
    page.keyboard.press("1")                 # grow
    page.keyboard.press("2")                 # saturate
    page.keyboard.press("c")
    page.keyboard.type("Say what saturation does to learning.")
    page.keyboard.press("Escape")
    assert page.inner_text("#score") == "2 / 3"
    page.screenshot(path=str(tmp_path / "grading.png"))
    page.keyboard.press("Enter")
    page.wait_for_selector("body[data-saved='1']")
    assert "Saved: 2 answers, 2 of 3 points each." in page.inner_text("#message")
    # The results folder's files are rewritten in the background; then the student sees it.
    # (The feedback pages are written before grades.json: wait for both.)
    deadline = time.monotonic() + 900
    feedback = server["out"] / "feedback" / "ben.html"
    status = {}

    def ann_in_grades_json():
        rows = json.loads((server["out"] / "grades.json").read_text())["submissions"]
        return next(s for s in rows if s["student"] == "ann")["questions"]["why_scale"]

    while time.monotonic() < deadline:
        if "why_scale (written): 2/3" in feedback.read_text() and \
                ann_in_grades_json()["score"] == 2:
            break
        status = json.loads(_request(server["base"] + "api/status",
                                     token=server["links"]["bo"]["token"])[2])
        assert status["state"] != "failed", status
        time.sleep(1)
    assert "why_scale (written): 2/3" in feedback.read_text(), status
    page.goto(feedback.as_uri())
    text = page.inner_text("body")
    assert "why_scale (written): 2/3 (graded by hand)" in text
    assert "Say what saturation does to learning." in text
    page.screenshot(path=str(tmp_path / "feedback.png"))
    grades = json.loads((server["out"] / "grades.json").read_text())
    ann = next(s for s in grades["submissions"] if s["student"] == "ann")
    assert ann["questions"]["why_scale"]["score"] == 2 and \
        ann["questions"]["why_scale"]["grader"] == "ann-grader"


def test_a_word_salad_is_offered_nothing_and_a_reworded_answer_is(page, server, tmp_path):
    """With lea's answer graded full marks, ivy's rewording of it is offered that decision;
    kim's word salad (the prompt's and the lessons' words, lea's among them) is offered none,
    and `a` gives it nothing."""
    lea = _group_of(server, "bo", "lea")["members"][0]
    full = ["grow", "saturate", "gradients"]
    status, _ = _post(server, "bo", "api/q/why_scale/grade",
                      {"members": [["lea", lea["version"]]], "items": full, "adjust": 0,
                       "comment": ""})
    assert status == 200
    _open_group(page, server, "ivy")
    offered = page.inner_text("#suggestion")
    assert offered.startswith("Suggested (press a): grow, saturate, gradients from "
                              f"{lea['alias']}, "), offered
    page.screenshot(path=str(tmp_path / "reworded.png"))
    _open_group(page, server, "kim")
    assert page.inner_text("#suggestion") == ""
    page.keyboard.press("a")
    assert page.inner_text("#score") == "0 / 3"
    assert page.locator("#rubric [aria-pressed=true]").count() == 0
    page.screenshot(path=str(tmp_path / "salad.png"))
