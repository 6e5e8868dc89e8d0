"""`autograder review -a ASSIGNMENT R`: grade the written answers of a class run in R.

Serves the graders' page (127.0.0.1 unless `--host` says otherwise, loudly), or with
`--export FILE` / `--import FILE` takes the spreadsheet path. After an import, and while the
page is used, R's files are rewritten with the hand grades (`outputs.rewrite`).
"""
from __future__ import annotations

import getpass
import secrets
import socket
import sys
from pathlib import Path

from ..model.safetext import shown_path, visible

DEFAULT_PORT = 8765


def add_arguments(parser) -> None:
    parser.add_argument("results", help="the results folder of `autograder grade --out`")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port to serve on (default {DEFAULT_PORT}; 0: any free port)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to serve on (default 127.0.0.1, this machine only)")
    parser.add_argument("--grader", action="append", metavar="NAME",
                        help="a grader's name (repeatable): each gets a link with a token of "
                             "their own, so the audit log says who did what (default: your "
                             "user name); with --import, who the log names")
    parser.add_argument("--export", metavar="FILE",
                        help="write the answers and grades as CSV (student,question,points,"
                             "rubric,comment, then version,status,answer for reading)")
    parser.add_argument("--import", dest="import_file", metavar="FILE",
                        help="apply a CSV of grades: every row is checked, and none is "
                             "applied if any is wrong; then R's files are rewritten")


def cmd_review(args) -> int:
    from ..model.assignment import load_assignment
    from .store import FILE_NAME, Conflict, Store, StoreError

    assignment = load_assignment(args.assignment)
    if not assignment.written:
        print(f"autograder: assignment {assignment.name} has no written questions "
              "(written.toml)", file=sys.stderr)
        return 2
    out = Path(args.results)
    try:
        store = Store.existing(out / FILE_NAME, assignment.name, assignment.written)
    except StoreError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 2
    for warning in store.warnings:
        print(f"note: {warning}", file=sys.stderr)
    if args.export and args.import_file:
        print("autograder: --export and --import are separate steps", file=sys.stderr)
        return 2
    if args.export:
        from .sheet import export_csv

        rows = export_csv(store, assignment.written, Path(args.export))
        print(f"wrote {shown_path(args.export)} ({rows} answers)")
        return 0
    if args.import_file:
        from .outputs import rewrite
        from .sheet import import_csv

        who = (args.grader or [f"{_user()} (csv import)"])[0]
        try:
            checked = import_csv(store, assignment.written, Path(args.import_file), who)
        except Conflict as e:
            print(f"autograder: nothing imported: {e}", file=sys.stderr)
            return 1
        if checked.errors:
            for error in checked.errors:
                print(f"{shown_path(args.import_file)}: {visible(error)}", file=sys.stderr)
            print(f"autograder: nothing imported: {len(checked.errors)} row(s) to correct",
                  file=sys.stderr)
            return 1
        print(f"imported {len(checked.changes)} grade(s) from {shown_path(args.import_file)} "
              f"({checked.unchanged} unchanged, {checked.skipped} without a grade)")
        if checked.changes:
            ok, message = rewrite(out)
            print(message if ok else f"autograder: the grades are saved, but {message}",
                  file=sys.stdout if ok else sys.stderr)
            return 0 if ok else 1
        return 0
    return _serve(args, assignment, store, out)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        return "grader"


def _serve(args, assignment, store, out: Path) -> int:
    from .server import (LOOPBACK, Access, Publisher, Review, allowed_hosts, new_tokens,
                         serve)

    graders = list(dict.fromkeys(args.grader or [_user()]))
    tokens = new_tokens(graders)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        print(f"autograder: cannot serve on {args.host}:{args.port} ({e.strerror}); give "
              "another --port (0 picks a free one)", file=sys.stderr)
        return 2
    sock.listen(64)
    port = sock.getsockname()[1]
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    if args.host not in LOOPBACK:
        print(f"WARNING: serving on {args.host}, not only this machine: anyone who can reach "
              f"port {port} here and holds a link below can read every answer and change "
              "grades; the traffic is not encrypted (plain HTTP). Use the default "
              "(127.0.0.1) and an SSH tunnel unless you mean it.", file=sys.stderr)
        if shown_host in ("0.0.0.0", "[::]"):
            shown_host = socket.gethostname()
    access = Access(tokens, allowed_hosts(args.host, port), f"review_{port}",
                    secrets.token_bytes(32))
    publisher = Publisher(out)
    review = Review(store, assignment.written, assignment.title, publisher)
    print(f"Grading the written answers of {assignment.title} in {shown_path(out)}; each "
          "grader's link (it holds their token: keep it to them):")
    for token, name in tokens.items():
        print(f"  {visible(name)}: http://{shown_host}:{port}/?token={token}")
    print("Stop with Ctrl-C; the results folder's files are rewritten after each change.",
          flush=True)
    try:
        serve(review, access, sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        print("writing the results folder's files with the last grades...", flush=True)
        publisher.stop(finish=True)
        print(publisher.status().get("message") or "done")
    return 0
