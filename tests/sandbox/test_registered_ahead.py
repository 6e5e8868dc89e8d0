"""Refusals registered ahead in the fork server (`guard.register_ahead`) and inherited by forks.

The fork server registers, dormant, the kernels of the arming most workers get (every
question's routines). What a worker refuses must still be exactly its own arming:

* a worker armed the same way keeps the inherited kernels: its library runs until its refusals
  hold, and is refused from then on;
* a worker armed for fewer routines, or for none, drops them first: a routine outside its
  arming runs, armed or not, with torch's own result, and one inside it is refused;
* the fork server itself, never armed, still computes with torch's kernels;
* once a worker's refusals are installed, nothing of the registrations made ahead, the builds or
  torch's own kernels is left in the engine's module globals for the student's code to find.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, os, sys
import torch
torch.set_num_threads(1)      # as in the fork server: a fork keeps no thread pool
from autograder.model.assignment import load_assignment
from autograder.sandbox import armed, guard
from autograder.sandbox.routines import table_for

table = table_for(load_assignment("attention").routines)
SOFTMAX = ["torch.softmax", "torch.nn.functional.softmax"]
ATTENTION = ["torch.nn.functional.scaled_dot_product_attention"]
def code_of(kind, i):
    return 100 + i
def on_hit(code):
    os._exit(code)
def plans(names):
    return [table.plan(n) for n in names]

everything = SOFTMAX + ATTENTION
guard.prepare([o for n in everything for o in table.plan(n).ops], [])
guard.prebuild(everything, plans(everything), on_hit, code_of)
assert guard.register_ahead(guard.arming_key(everything, plans(everything)))
x = torch.randn(2, 3, 4)
expected = torch.softmax(x, -1)
# The fork server itself: dormant kernels, torch's results.
assert torch.equal(torch.softmax(x, -1), expected)

def child(names, then):
    failed = guard.install(names, plans(names), on_hit, code_of)[0]
    if failed is not None:
        os._exit(90)
    before = torch.equal(torch.softmax(x, -1), expected)   # not armed yet: the library runs
    left = [len(guard._AHEAD), len(guard._PREBUILT), len(guard._TORCH_KERNELS)]
    os.write(1, json.dumps({"before": before, "left": left}).encode() + b"\n")
    armed.arm()
    if then == "softmax":
        same = torch.equal(torch.softmax(x, -1), expected)
    else:
        same = torch.nn.functional.scaled_dot_product_attention(x, x, x).shape == x.shape
    os.write(1, json.dumps({"same": same}).encode() + b"\n")
    os._exit(0)

for label, names, then in [("same", everything, "softmax"),
                           ("fewer: softmax allowed", ATTENTION, "softmax"),
                           ("fewer: attention refused", ATTENTION, "attention"),
                           ("none", [], "softmax"),
                           ("same again", everything, "attention")]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.dup2(write, 1)
            child(names, then)
        finally:
            os._exit(99)
    os.close(write)
    out = b""
    while chunk := os.read(read, 4096):
        out += chunk
    os.close(read)
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    said = {}
    for line in out.splitlines():
        said.update(json.loads(line))
    print(json.dumps({"label": label, "code": status, "said": said}), flush=True)
print(json.dumps({"label": "server after", "code": 0,
                  "said": {"same": torch.equal(torch.softmax(x, -1), expected)}}))
"""


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return {row.pop("label"): row for row in map(json.loads, r.stdout.splitlines())}


def test_a_worker_armed_as_registered_ahead_refuses_once_armed(rows):
    # The library runs until the refusals hold, then the call ends the worker with the code
    # of the first name whose routine computes it (softmax's includes attention's kernels).
    for label in ("same", "same again"):
        assert rows[label] == {"code": 100, "said": {"before": True, "left": [0, 0, 0]}}, \
            rows[label]


def test_a_worker_armed_for_fewer_runs_what_it_does_not_refuse(rows):
    assert rows["fewer: softmax allowed"] == {
        "code": 0, "said": {"before": True, "left": [0, 0, 0], "same": True}}
    # ... and refuses its own (attention is its first name).
    assert rows["fewer: attention refused"] == {
        "code": 100, "said": {"before": True, "left": [0, 0, 0]}}


def test_a_worker_armed_for_nothing_refuses_nothing(rows):
    assert rows["none"] == {"code": 0, "said": {"before": True, "left": [0, 0, 0],
                                                "same": True}}


def test_the_fork_server_keeps_torch_results(rows):
    assert rows["server after"]["said"]["same"] is True
