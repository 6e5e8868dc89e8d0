"""What the README's sandbox table promises per level, seen from inside a worker.

One probe submission per level, graded by `autograder grade` as an instructor runs it: its
`softmax` looks at the worker it runs in (a connection to a listener this test opens, the
network interfaces, the rlimits, the UTS namespace and an attempt to rename the host, its user
and groups) and raises with what it saw as JSON, so the observations come back in the graded
result (the question's feedback), never from the worker's discarded output. The other questions
are honest and keep their points. The probes call `socket`, `resource` and `/proc/self`, which
the audit hook refuses first: graded with the hook off (`audit_hook=0`), they measure what the
level alone holds.

As root the grader is started with supplementary groups of its own, so a worker that kept them
would show them.
"""
from __future__ import annotations

import json
import os
import re
import socket

import pytest

from helpers import (LEVELS, QUESTIONS, RUN_TOKEN, SUBMISSIONS, autograded, require_level,
                     run_cli)

HONEST = (SUBMISSIONS / "hostile" / "honest.py").read_text()

PROBE = '''
import errno as _errno
import json as _json
import os as _os
import resource as _resource
import socket as _socket

_SEEN = {}


def _error_name(e):
    return _errno.errorcode.get(e.errno, type(e).__name__) if e.errno else type(e).__name__


def _probe():
    seen = {}
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", @PORT@))
        seen["connect"] = "connected"
    except OSError as e:
        seen["connect"] = _error_name(e)
    finally:
        s.close()
    seen["ifs"] = sorted(name for _, name in _socket.if_nameindex())
    for key, res in (("fsize", _resource.RLIMIT_FSIZE), ("nofile", _resource.RLIMIT_NOFILE),
                     ("mq", _resource.RLIMIT_MSGQUEUE)):
        seen[key] = list(_resource.getrlimit(res))
    seen["uts"] = _os.readlink("/proc/self/ns/uts")
    if @RENAME@:
        try:
            _socket.sethostname("@NAME@")
            seen["sethostname"] = "done"
        except OSError as e:
            seen["sethostname"] = _error_name(e)
    seen["hostname"] = _socket.gethostname()
    seen["ids"] = [_os.getuid(), _os.geteuid(), _os.getgid(), _os.getegid()]
    seen["groups"] = sorted(_os.getgroups())
    return seen


def softmax(x, dim=-1):
    if not _SEEN:          # once per worker: every case calls it
        _SEEN.update(_probe())
    raise RuntimeError("probe " + _json.dumps(_SEEN, separators=(",", ":")))
'''

FILE_MB, OPEN_FILES = 7, 123            # not the defaults, nor what this process has
EXTRA_GROUPS = [4, 20, 27]              # supplementary groups the grader runs with (as root)


def _probe_source(port: int, rename: bool) -> str:
    return HONEST + "\n# --- the probe ---\n" + PROBE.replace("@PORT@", str(port)) \
        .replace("@RENAME@", str(rename)).replace("@NAME@", f"probe-{RUN_TOKEN}"[:60])


def _grade_probe(tmp_path, level: str, port: int, rename: bool) -> dict:
    """The probe graded at `level`: what it saw, after checking the honest questions passed."""
    sub = tmp_path / "probe.py"
    sub.write_text(_probe_source(port, rename))
    out = tmp_path / "r.json"
    r = run_cli("grade", "-a", "attention", str(sub), "--json", str(out), "--sandbox", level,
                "--limit", f"file_mb={FILE_MB}", "--limit", f"open_files={OPEN_FILES}",
                "--limit", "question_seconds=30", "--limit", "audit_hook=0",
                extra_groups=EXTRA_GROUPS if os.geteuid() == 0 else None, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    [result] = json.loads(out.read_text())["submissions"]
    qs = autograded(result["questions"])
    assert list(qs) == QUESTIONS
    for qid in QUESTIONS[1:]:
        assert qs[qid]["status"] == "passed", (qid, qs[qid]["feedback"])
    m = re.search(r"probe (\{.*?\})(?:\s|$)", qs["softmax"]["feedback"])
    assert m, qs["softmax"]["feedback"]
    return json.loads(m.group(1))


def _never_connected(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


@pytest.mark.parametrize("level", LEVELS)
def test_each_level_keeps_its_promises(tmp_path, level):
    require_level(level)
    root = os.geteuid() == 0
    drops_user = root and level in ("namespaces", "user")
    own_network = level in ("namespaces", "user")
    host_name = socket.gethostname()
    host_uts = os.readlink("/proc/self/ns/uts")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    try:
        # Renaming the host is tried only where the level promises it cannot reach the host's
        # name: at `rlimits` as root the worker is root in the host's UTS namespace.
        seen = _grade_probe(tmp_path, level, listener.getsockname()[1], rename=own_network)
        never_connected = _never_connected(listener)
    finally:
        listener.close()
        if socket.gethostname() != host_name and root:
            socket.sethostname(host_name)    # a broken sandbox renamed this machine: undo
    assert socket.gethostname() == host_name, "the worker renamed the host"

    # All levels: rlimits on file size, open files and POSIX message queues, as configured.
    from autograder.sandbox.limits import MSGQUEUE_BYTES

    assert seen["fsize"] == [FILE_MB * 2**20] * 2, seen
    assert seen["nofile"] == [OPEN_FILES] * 2, seen
    assert seen["mq"] == [MSGQUEUE_BYTES] * 2, seen

    host_ifs = sorted(name for _, name in socket.if_nameindex())
    if own_network:
        # No network: the listener on the host's loopback was never reached, and the worker
        # has no interface but a loopback.
        assert seen["connect"] != "connected" and never_connected, seen
        assert seen["ifs"] == ["lo"], seen
        assert seen.get("sethostname") != "done", seen
    else:
        # `rlimits` has the network (README): the same probe reaches the listener, so the
        # checks above can see a network when there is one.
        assert seen["connect"] == "connected" and not never_connected, seen
        assert seen["ifs"] == host_ifs, seen
    if level == "namespaces":
        assert seen["uts"] != host_uts, f"the worker shares the host's UTS namespace: {seen}"
    if drops_user:
        # An unprivileged user without the grader's supplementary groups.
        assert 0 not in seen["ids"] and seen["groups"] == [], seen
    elif root:
        # `rlimits` as root keeps the grader's user and groups (README: only for trusted
        # code): what the probe shows there proves the grader had groups to drop.
        assert seen["ids"] == [0, 0, 0, 0] and seen["groups"] == EXTRA_GROUPS, seen
