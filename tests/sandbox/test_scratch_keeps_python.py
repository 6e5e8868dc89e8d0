"""A worker's scratch tmpfs covers /tmp; a Python installation or checkout that lies under /tmp
(a CI clone, a venv made there) must stay visible, or the worker's lazy imports fail (an honest
`torch.broadcast_shapes` imports torch.fx submodules on first use)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

CHILD = r"""
import ctypes, os, sys
sys.path.insert(0, sys.argv[1])
from autograder.sandbox import mounts
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) != 0:          # CLONE_NEWNS
    sys.exit(3)
mounts.make_private()
kept, hidden = sys.argv[2], sys.argv[3]
mounts.scratch("/tmp/work", 1 << 20, None, keep=[kept])
print(open(os.path.join(kept, "module.py")).read().strip())
print(os.path.exists(hidden))
try:
    open(os.path.join(kept, "new.py"), "w")
    print("writable")
except OSError:
    print("read-only")
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root here")
def test_scratch_keeps_folders_under_tmp_read_only_and_hides_the_rest():
    engine_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory(dir="/tmp") as kept, \
            tempfile.TemporaryDirectory(dir="/tmp") as other:
        with open(os.path.join(kept, "module.py"), "w") as f:
            f.write("VALUE = 42\n")
        hidden = os.path.join(other, "secret.txt")
        with open(hidden, "w") as f:
            f.write("secret\n")
        r = subprocess.run([sys.executable, "-c", CHILD, engine_root, kept, hidden],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["VALUE = 42", "False", "read-only"]
