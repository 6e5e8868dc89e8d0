"""The graders' page: `autograder review -a ASSIGNMENT R` (Starlette, served by uvicorn).

Nothing is served without a grader's token, static files and the API included: the URL the
command prints carries it once (`?token=`), the page moves it into an HttpOnly, SameSite=Strict
cookie and drops it from the address bar. Each grader has a token of their own (`--grader`),
so the audit log says who did what. Every request must name this server's host (no DNS
rebinding); every change is a JSON POST carrying the page's CSRF token in a header, which a
page of another site can neither read nor send. Student text reaches the browser only as JSON
that the page's script puts into text nodes (never markup), with controls and format
characters (bidirectional overrides, zero-width marks) shown as codes, in answers and names
alike; the Content-Security-Policy allows no inline script at all.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from ..model.project import ENGINE_DIR
from .groups import group_answers, suggestion
from ..model.safetext import page_finalize, shown_text
from ..model.written_spec import WrittenQuestion
from .store import MAX_COMMENT, Conflict, Store, score_of

HERE = ENGINE_DIR / "written"
MAX_BODY = 256 * 1024
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; form-action 'none'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


def new_tokens(graders: list[str]) -> dict[str, str]:
    """{token: grader}: a fresh token for each grader, valid while this server runs."""
    return {secrets.token_urlsafe(24): name for name in graders}


# ------------------------------------------------------------------ the publisher

class Publisher:
    """Rewrites the results folder's files after grades change, one run at a time, once the
    graders have paused for `quiet` seconds (`outputs.rewrite`)."""

    def __init__(self, out: Path, quiet: float = 1.0, rewrite=None):
        from .outputs import rewrite as default

        self.out, self.quiet, self._rewrite = out, quiet, rewrite or default
        self._lock = threading.Condition()
        self._changed_at: float | None = None
        self._running = False
        self._stopping = False
        self.state = {"state": "up to date", "message": "", "at": ""}
        self._thread = threading.Thread(target=self._loop, daemon=True, name="publisher")
        self._thread.start()

    def changed(self) -> None:
        with self._lock:
            self._changed_at = time.monotonic()
            self.state = dict(self.state, state="waiting")
            self._lock.notify_all()

    def status(self) -> dict:
        with self._lock:
            return dict(self.state)

    def stop(self, finish: bool = True) -> None:
        """Stop; with `finish`, first write what is still waiting."""
        with self._lock:
            if finish and self._changed_at is not None:
                self._changed_at = 0.0
            self._stopping = True
            self._lock.notify_all()
        self._thread.join(timeout=3600)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while self._changed_at is None and not self._stopping:
                    self._lock.wait()
                if self._changed_at is None:
                    return
                wait = self._changed_at + self.quiet - time.monotonic()
                if wait > 0 and not self._stopping:
                    self._lock.wait(wait)
                    continue
                self._changed_at = None
                self.state = dict(self.state, state="writing")
            ok, message = self._rewrite(self.out)
            with self._lock:
                self.state = {"state": "up to date" if ok else "failed", "message": message,
                              "at": time.strftime("%H:%M:%S")}
                if self._changed_at is not None:
                    self.state["state"] = "waiting"


# ------------------------------------------------------------------ the guard

@dataclass
class Access:
    tokens: dict[str, str]       # token -> grader
    hosts: set[str] | None       # Host headers this server answers to (None: any)
    cookie: str                  # the cookie's name (one per port: cookies ignore ports)
    secret: bytes                # for the CSRF tokens

    def grader(self, token: str | None) -> str | None:
        if not token:
            return None
        found = None
        for known, name in self.tokens.items():   # constant time in the token's content
            if hmac.compare_digest(known.encode(), token.encode()):
                found = name
        return found

    def csrf(self, token: str) -> str:
        return hmac.new(self.secret, token.encode(), hashlib.sha256).hexdigest()


class Guard:
    """ASGI middleware in front of every route: the host, the token, the CSRF token."""

    def __init__(self, app, access: Access):
        self.app, self.access = app, access

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send) if scope["type"] == "lifespan" \
                else None
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}

        async def secured(message):
            if message["type"] == "http.response.start":
                message["headers"] = [h for h in message.get("headers", [])
                                      if h[0].decode("latin-1").lower() not in SECURITY_HEADERS]
                message["headers"] += [(k.encode(), v.encode())
                                       for k, v in SECURITY_HEADERS.items()]
            await send(message)

        if self.access.hosts is not None and headers.get("host", "") not in self.access.hosts:
            return await _plain(secured, 421, "This server does not answer to that host name.")
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie header is no token
            pass
        bearer = headers.get("authorization", "")
        token = query.get("token") or (bearer[7:] if bearer.startswith("Bearer ") else None) \
            or (cookies[self.access.cookie].value if self.access.cookie in cookies else None)
        grader = self.access.grader(token)
        if grader is None:
            return await _plain(secured, 403, "This page needs the link with your token that "
                                              "`autograder review` printed.")
        method = scope["method"]
        if "token" in query:
            if method not in ("GET", "HEAD"):
                return await _plain(secured, 403, "A change never carries the token in its "
                                                  "address.")
            rest = urlencode([(k, v) for k, v in parse_qsl(
                scope.get("query_string", b"").decode("latin-1")) if k != "token"])
            location = scope["path"] + (f"?{rest}" if rest else "")
            cookie = (f"{self.access.cookie}={token}; HttpOnly; SameSite=Strict; Path=/")
            return await _send(secured, 303, b"", "text/plain",
                               [(b"location", location.encode("latin-1", "replace")),
                                (b"set-cookie", cookie.encode())])
        if method not in ("GET", "HEAD"):
            problem = self._refuse_change(headers, token)
            if problem:
                return await _plain(secured, 403, problem)
        scope.setdefault("state", {})["grader"] = grader
        scope["state"]["csrf"] = self.access.csrf(token)
        await self.app(scope, receive, secured)

    def _refuse_change(self, headers: dict, token: str) -> str | None:
        if not hmac.compare_digest(headers.get("x-csrf-token", ""), self.access.csrf(token)):
            return "This change does not come from the review page (no CSRF token)."
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return "A change is sent as JSON."
        origin = headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != headers.get("host"):
            return "This change comes from another site."
        return None


async def _send(send, status: int, body: bytes, content_type: str, headers=()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def _plain(send, status: int, text: str) -> None:
    await _send(send, status, text.encode() + b"\n", "text/plain; charset=utf-8")


# ------------------------------------------------------------------ the application

class Review:
    """The data behind the page: one results folder, its assignment's written questions."""

    def __init__(self, store: Store, questions: list[WrittenQuestion], title: str,
                 publisher: Publisher | None):
        self.store, self.title, self.publisher = store, title, publisher
        self.questions = {q.id: q for q in questions}
        self.salt = store.meta("order_salt") or ""

    def changed(self) -> None:
        if self.publisher is not None:
            self.publisher.changed()

    def question_data(self, qid: str, grader: str) -> dict:
        q = self.questions[qid]
        rubric = self.store.rubric(qid)
        answers = self.store.answers(qid)
        grades = self.store.grades(qid)
        groups = group_answers(qid, answers, grades, self.store.splits(qid), self.salt)
        keys = "1234567890"
        out_groups = []
        for g in groups:
            members = []
            for m in g.members:
                grade = m.grade
                members.append({
                    # `student` is the key changes name; `name` is how the page shows it.
                    "student": m.student, "name": shown_text(m.student), "alias": m.alias,
                    "text": shown_text(m.text),
                    "chars": len(m.text), "similarity": m.similarity, "status": m.status,
                    "version": grade.version if grade else 0,
                    "score": score_of(grade.items, grade.adjust, rubric, q.points)
                    if grade else None,
                    "decision": grade.decision() if grade else None,
                    "grader": grade.grader if grade else None, "at": grade.at if grade else None})
            out_groups.append({"key": g.key, "status": g.status, "split": g.split,
                               "members": members,
                               "suggestion": suggestion(g, groups) if g.status in
                               ("pending", "regrade") else None})
        members = [m for g in groups for m in g.members]
        graded = [m for m in members if m.status == "graded" and m.text]
        by_grader: dict[str, int] = {}
        for m in graded:
            by_grader[m.grade.grader] = by_grader.get(m.grade.grader, 0) + 1
        answered = [g for g in groups if g.status != "unanswered"]
        return {"question": {"id": q.id, "prompt": q.prompt, "points": q.points,
                             "has_model": bool(q.model_answer)},
                "rubric": [{**i.to_json(), "key": keys[n] if n < len(keys) else ""}
                           for n, i in enumerate(rubric.values())],
                "groups": out_groups, "me": grader,
                "progress": {"graded": len(graded),
                             "total": sum(bool(m.text) for m in members),
                             "unanswered": sum(m.status == "unanswered" for m in members),
                             "groups": len(answered),
                             "groups_done": sum(g.status == "graded" for g in answered),
                             "by_grader": by_grader}}

    def overview(self) -> list[dict]:
        rows = []
        for qid, q in self.questions.items():
            data = self.question_data(qid, "")
            rows.append({"id": qid, "points": q.points, "prompt": q.prompt,
                         **data["progress"]})
        return rows


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or abs(value) > 1e6:
        raise ValueError(f"{what} must be a number")
    return float(value)


def build_app(review: Review, access: Access):
    """The Starlette application, behind the Guard."""
    import jinja2
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, finalize=page_finalize)

    def page(name: str, request: Request, **values) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(
            title=review.title, grader=request.scope["state"]["grader"],
            csrf=request.scope["state"]["csrf"], questions=list(review.questions), **values))

    def question_or_404(request: Request) -> WrittenQuestion:
        qid = request.path_params["qid"]
        if qid not in review.questions:
            raise KeyError(qid)
        return review.questions[qid]

    def refusal(e: Exception, what: str) -> JSONResponse:
        """A change that was not made, and why, in words for the page: an unknown name (404),
        a conflict with someone else's change (409) or a malformed change (400)."""
        if isinstance(e, KeyError):
            return JSONResponse({"error": f"Not saved: no such {what}"}, 404)
        return JSONResponse({"error": f"Not saved: {e}"}, 409 if isinstance(e, Conflict) else 400)

    async def body(request: Request) -> dict:
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise ValueError("the change is too large")
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("the change must be a JSON object")
        return data

    def index(request: Request):
        return page("index.html.j2", request, overview=review.overview(),
                    outputs=review.publisher.status() if review.publisher else None)

    def question(request: Request):
        try:
            q = question_or_404(request)
        except KeyError:
            return Response("no such question", 404, media_type="text/plain")
        return page("question.html.j2", request, question=q)

    def api_question(request: Request):
        try:
            q = question_or_404(request)
        except KeyError:
            return JSONResponse({"error": "no such question"}, 404)
        return JSONResponse(review.question_data(q.id, request.scope["state"]["grader"]))

    def model(request: Request):
        try:
            q = question_or_404(request)
        except KeyError:
            return JSONResponse({"error": "no such question"}, 404)
        return JSONResponse({"model_answer": q.model_answer})

    async def grade(request: Request):
        try:
            q = question_or_404(request)
            data = await body(request)
            members = [(str(s), int(v)) for s, v in data.get("members", [])]
            items = [str(i) for i in data.get("items", [])]
            adjust = _number(data.get("adjust", 0), "points")
            comment = str(data.get("comment", ""))[:MAX_COMMENT]
            rubric = review.store.rubric(q.id)
            unknown = [i for i in items if i not in rubric]
            if unknown or not members:
                raise ValueError(f"unknown rubric items: {', '.join(unknown)}" if unknown
                                 else "no answer to grade")
            versions = review.store.save(q.id, members, items=items, adjust=adjust,
                                         comment=comment,
                                         who=request.scope["state"]["grader"])
        except (KeyError, Conflict, ValueError, TypeError) as e:
            return refusal(e, "question or answer")
        review.changed()
        return JSONResponse({"saved": len(versions),
                             "score": score_of(items, adjust, rubric, q.points)})

    async def split(request: Request):
        try:
            q = question_or_404(request)
            student = str((await body(request)).get("student", ""))
            if student not in {a.student for a in review.store.answers(q.id)}:
                raise KeyError(student)
            review.store.split(q.id, student, request.scope["state"]["grader"])
        except (KeyError, ValueError, TypeError) as e:
            return refusal(e, "question or answer")
        return JSONResponse({"split": True})

    async def edit_item(request: Request):
        try:
            q = question_or_404(request)
            data = await body(request)
            rescored = review.store.edit_item(
                q.id, request.path_params["item"],
                description=str(data.get("description", ""))[:2000],
                points=_number(data.get("points"), "points"),
                feedback=str(data.get("feedback", ""))[:2000],
                version=int(data.get("version", -1)), who=request.scope["state"]["grader"])
        except (KeyError, Conflict, ValueError, TypeError) as e:
            return refusal(e, "question or rubric item")
        review.changed()
        return JSONResponse({"rescored": rescored})

    def log(request: Request):
        return page("log.html.j2", request, entries=review.store.audit(limit=1000))

    def status(request: Request):
        return JSONResponse(review.publisher.status() if review.publisher else
                            {"state": "off", "message": "", "at": ""})

    def publish(request: Request):
        if review.publisher is not None:
            review.publisher.changed()
        return JSONResponse({"queued": review.publisher is not None})

    def static(request: Request):
        name = request.path_params["name"]
        if name not in ("review.js", "review.css"):
            return Response("not found", 404, media_type="text/plain")
        return FileResponse(HERE / "static" / name)

    routes = [Route("/", index), Route("/q/{qid}", question),
              Route("/api/q/{qid}", api_question), Route("/api/q/{qid}/model", model),
              Route("/api/q/{qid}/grade", grade, methods=["POST"]),
              Route("/api/q/{qid}/split", split, methods=["POST"]),
              Route("/api/q/{qid}/rubric/{item}", edit_item, methods=["POST"]),
              Route("/log", log), Route("/api/status", status),
              Route("/api/publish", publish, methods=["POST"]),
              Route("/static/{name}", static)]
    return Guard(Starlette(routes=routes), access)


# ------------------------------------------------------------------ serving

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def allowed_hosts(host: str, port: int) -> set[str] | None:
    """The Host headers to answer: the loopback names on a loopback address (a page of another
    site that points a name of its own at 127.0.0.1 gets nothing), any on a wildcard address."""
    if host in ("0.0.0.0", "::", ""):
        return None
    names = {"127.0.0.1", "localhost", "[::1]"} | {f"[{host}]" if ":" in host else host}
    return {f"{n}:{port}" for n in names}


def serve(review: Review, access: Access, sock, *, ready=None) -> None:
    """Serve on the bound socket `sock` until interrupted (Ctrl-C)."""
    import uvicorn

    config = uvicorn.Config(build_app(review, access), log_level="warning", access_log=False,
                            lifespan="off", server_header=False, date_header=False,
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    if ready is not None:
        ready(server)
    server.run(sockets=[sock])
