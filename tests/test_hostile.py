"""Hostile submissions, graded in one batch beside honest ones, as an instructor would.

Each test asserts an outcome a user depends on: the batch finishes, every submission has a row,
cheats gain nothing, honest submissions keep their exact scores, nothing is left running, no
secret leaks, and nothing outside the sandbox is written or deleted.
"""
import json
import os
import shutil
import time

import pytest

from helpers import (AUTOGRADED_MAX, GRADED, MAX_SCORE, QUESTIONS, SUBMISSIONS, autograded,
                     cases_of, max_points, own_processes, points_before, points_without,
                     require_level, run_cli, settled)
from autograder.feedback.contract import submission_json

HOSTILE = SUBMISSIONS / "hostile"
SECRET = "s3cr3t-grader-token-4711"
MARKERS = ("hostile_", "HOSTILE_SUBMISSION_DETACHED_MARKER", "sleep 1000")
FULL = {q: "full" for q in QUESTIONS}
ZERO = {q: 0 for q in QUESTIONS}

# What each file must score, per question: "full" or an exact score. A partial score is derived
# from the question files: the points of the cases the attack leaves alone (`points_without`),
# or of those run before the case that ended the question (`points_before`).
# The corpus runs only at `namespaces` or `user` (test below): the worker is the first process
# of its own PID namespace there, so the signals it sends itself are ignored and it goes on.
EXPECTED = {
    "honest.py": FULL,
    "delete_other_submissions.py": FULL,
    "output_flood.py": FULL,
    "privilege_escalation_probe.py": FULL,
    "socket_probe_localhost.py": FULL,
    "thread_runs_forever.py": FULL,
    "kill_parent_and_process_group.py": FULL,
    "fake_score_output.py": ZERO,
    "filesystem_and_sys_modules_reference_search.py": ZERO,
    "forge_worker_channel.py": ZERO,
    "forged_reply_bad_floats.py": ZERO,
    "forged_reply_malformed_types.py": ZERO,
    "forged_reply_non_string_params.py": ZERO,
    "forged_reply_shared_buffer.py": ZERO,
    "forged_reply_trusted_side_exception.py": ZERO,
    "gc_object_scan.py": ZERO,
    "monkeypatch_numpy.py": ZERO,
    "monkeypatch_otter.py": ZERO,
    "monkeypatch_torch.py": ZERO,
    "monkeypatch_unittest_pytest.py": ZERO,
    "overwrite_grader_output_paths.py": ZERO,
    "pickle_rce_return_values.py": ZERO,
    "stack_frame_snooping.py": ZERO,
    "write_customize_and_conftest_files.py": ZERO,
    "write_fake_results_files.py": ZERO,
    "sys_exit_at_import.py": ZERO,
    "import_hang_ignoring_signals.py": ZERO,
    # causal_mask is left correct; every other function returns something unusable.
    "huge_and_weird_return_values.py": {
        **ZERO, "mask": points_without("mask", {"scaled_dot_product_attention"})},
    "lying_tensor_subclass_softmax.py": {**FULL, "softmax": 0},
    "forbidden_call_bypass.py": {**FULL, "softmax": 0},
    "lying_ndarray_subclass_softmax.py": {**FULL, "softmax": 0},
    "os_exit_in_softmax.py": {**FULL, "softmax": 0},
    "infinite_loop_softmax.py": {**FULL, "softmax": 0},
    # The spin is a timeout, which ends the question: mask keeps only what ran before it.
    "signal_ignoring_spin_attention.py": {
        **FULL, "attention": 0,
        "mask": points_before("mask", {"scaled_dot_product_attention"})},
    "deep_recursion_split_heads.py": {
        **FULL, "split_heads": points_without("split_heads", {"split_heads"})},
    "memory_hog_layer_norm.py": {**FULL, "block": 0},
    # Every function but scaled_dot_product_attention raises (merge_heads is left correct).
    "base_exceptions_and_evil_messages.py": {
        **ZERO, "attention": "full", "mask": points_without("mask", {"causal_mask"}),
        "split_heads": points_without("split_heads", {"split_heads"})},
}
# Files whose source stores into the engine's own modules (resolved statically: the scan's
# proof) are flagged and, by default, get no points (status "integrity") on every question: the
# store runs at import. Their rows keep what the checks gave without the penalty.
PROVEN = {
    "patch_engine_hides_forbidden_call.py": (AUTOGRADED_MAX - max_points("softmax"),
                                             AUTOGRADED_MAX),   # the engine via sys.modules
    "forge_missing_gradients.py": (AUTOGRADED_MAX - max_points("softmax"),),
    # They patch the worker through sys.modules, and their reply is noted as malformed too.
    **{f"forged_reply_{kind}.py": (0,)

       for kind in ("bad_floats", "malformed_types", "non_string_params", "shared_buffer",
                    "trusted_side_exception")},
}
# Files whose source the scan only doubts (frames, gc scans, ctypes, sys.modules scans, the
# worker's channel, patched library modules, code built at run time, a shortcut the run-time
# check did not report, a scan cut short): flagged for review, graded on run-time evidence,
# no points taken for the doubt. What run time gives them is in EXPECTED.
REVIEW = {
    "detached_background_processes_at_import.py": FULL,         # ctypes (prctl)
    "fork_bomb_bounded.py": FULL,                               # ctypes (prctl)
    "fork_child_lingers.py": FULL,                              # ctypes (prctl)
    "proc_mem_read_other_processes.py": FULL,                   # ctypes (ptrace, vm_readv)
    "close_all_fds_softmax.py": {**FULL, "softmax": 0},         # os.closerange: the channel
    # Only causal_mask takes no random input (it is correct); patches torch.* in place.
    "patch_random_generators.py": {
        **ZERO, "mask": points_without("mask", {"scaled_dot_product_attention"})},
    "filesystem_and_sys_modules_reference_search.py": ZERO,     # sys.modules scan
    "forge_worker_channel.py": ZERO,                            # the channel, gc, sys.modules
    "gc_object_scan.py": ZERO,
    "monkeypatch_numpy.py": ZERO,
    "monkeypatch_otter.py": ZERO,
    "monkeypatch_torch.py": ZERO,
    "monkeypatch_unittest_pytest.py": ZERO,
    "overwrite_grader_output_paths.py": ZERO,                   # ctypes, fds it did not open
    "pickle_rce_return_values.py": ZERO,                        # eval as a value, sys.modules
    "stack_frame_snooping.py": ZERO,
    # The engine patch padded past 100,000 syntax nodes: the scan is cut short, the row is
    # graded on run-time evidence and flagged; the dispatcher refuses the library softmax
    # the patch meant to hide.
    "scan_budget_padded_engine_patch.py": {**FULL, "softmax": 0},
}
EXPECTED.update({name: ZERO for name in PROVEN})
EXPECTED.update(REVIEW)
EXPECTED["scan_dos_constant_formatting.py"] = FULL      # dead code never counts; no flag
# Routes to a library routine that no name list can enumerate: torch's dispatcher refuses the
# operator itself while the question that forbids it runs (sandbox/guard.py).
ROUTES = {
    **{f"route_{n}_softmax.py": {**FULL, "softmax": 0}
       for n in ("vars_runtime_key", "reduce_getattr", "torch_dict_private", "attrgetter_fstring",
                 "list_and_getattr_fstring", "custom_function", "custom_backward_only",
                 "sdpa_as")},
    "route_native_layer_norm.py": {**FULL, "block": 0},
    "route_group_norm_as_layer_norm.py": {**FULL, "block": max_points("block") - sum(
        c.points for c in cases_of("block") if c.name.startswith("layer_norm"))},
    "route_mha_need_weights_attention.py": {**FULL, "multi_head": 0},
}
EXPECTED.update(ROUTES)
STATUS_ROUTES = {(name, q): "forbidden call" for name, want in ROUTES.items()
                 for q, score in want.items() if score != "full"}
# Escapes the worker's audit hook refuses (sandbox/audit.py): hard evidence from how the worker
# ended; at import they cost every question (status "integrity").
ESCAPES = {
    "leak_secret_env_and_proc.py": "/proc",
    "privilege_escalation_probe.py": "/proc",
    "socket_probe_localhost.py": "/proc",
    "route_pickle_loads_softmax.py": "unpickling",
    "escape_import_module_ctypes.py": "ctypes",
    "escape_proc_self_mem.py": "/proc",
    "escape_frames_in_softmax.py": "frames",
}
# The probe of everything reachable without an audited call finds nothing of the engine (its
# softmax would fail, naming it): what it would score is full marks but for the source scan.
EXPECTED.update({
    "reachability_probe.py": ZERO,
    "route_pickle_loads_softmax.py": ZERO,
    "escape_import_module_ctypes.py": ZERO,
    "escape_proc_self_mem.py": ZERO,
    "escape_frames_in_softmax.py": ZERO,
    # The engine package is not importable in the sandbox's file view (an import error), and
    # at a level where it is, importing it again is refused.
    "escape_import_module_engine.py": ZERO,
    "escape_sys_modules_next_engine_patch.py": ZERO,
    "route_compile_softmax.py": ZERO,
    "route_rebind_registration_softmax.py": ZERO,
})
STATUS = {
    ("infinite_loop_softmax.py", "softmax"): "timeout",
    ("signal_ignoring_spin_attention.py", "attention"): "timeout",
    ("import_hang_ignoring_signals.py", "softmax"): "timeout",
    ("memory_hog_layer_norm.py", "block"): "memory limit",
    ("sys_exit_at_import.py", "softmax"): "error",
    ("os_exit_in_softmax.py", "softmax"): "error",
    ("forbidden_call_bypass.py", "softmax"): "forbidden call",
    # Wrong values: the lie never reaches the comparison. (Its `DisableTorchFunctionSubclass`
    # is what a subclass's own __torch_function__ uses; it switches no mode off.)
    ("lying_tensor_subclass_softmax.py", "softmax"): "failed",
}
STATUS.update({(name, q): "integrity" for name in PROVEN for q in QUESTIONS})
REVIEW_NOTE = "integrity: "
STATUS.update(STATUS_ROUTES)

# With the dispatcher and the audit hook in the worker, run time decides these (measured with
# both in place; the scan's part is only the review flag or, for a proven store, the penalty).
for _name in ("gc_object_scan.py", "stack_frame_snooping.py", "overwrite_grader_output_paths.py"):
    REVIEW.pop(_name, None)
ESCAPES.update({"gc_object_scan.py": "objects", "stack_frame_snooping.py": "frames",
                "overwrite_grader_output_paths.py": "/proc"})
# An escape at import costs every question; one inside softmax costs softmax.
ESCAPE_COSTS = {name: ZERO for name in ESCAPES}
ESCAPE_COSTS["escape_frames_in_softmax.py"] = {**FULL, "softmax": 0}
EXPECTED.update(ESCAPE_COSTS)
STATUS.update({(name, q): "integrity" for name, want in ESCAPE_COSTS.items()
               for q, score in want.items() if score != "full"})
# The scan proves the store into the engine; the engine is not importable in the worker, so
# without the penalty it would have scored nothing either.
PROVEN["escape_import_module_engine.py"] = (0,)
# The forged replies no longer find the worker's channel to patch (the engine is out of
# sys.modules): their run alone would give full marks; the proven store costs them everything.
PROVEN.update({f"forged_reply_{kind}.py": (AUTOGRADED_MAX,) for kind in (
    "bad_floats", "malformed_types", "non_string_params", "shared_buffer",
    "trusted_side_exception")})
STATUS.update({(name, q): "integrity" for name in PROVEN for q in QUESTIONS})
# Routes whose source the scan cannot check (sys.modules, compile, rebinding a registration):
# the dispatcher refuses the library softmax as it runs, and the row is flagged for review.
RUN_TIME_ROUTES = ("escape_sys_modules_next_engine_patch.py", "route_compile_softmax.py",
                   "route_rebind_registration_softmax.py")
REVIEW.update({name: {**FULL, "softmax": 0} for name in RUN_TIME_ROUTES})
STATUS.update({(name, "softmax"): "forbidden call" for name in RUN_TIME_ROUTES})
# The probe walked everything reachable without an audited call and found nothing of the
# engine (its softmax fails when it finds something): full marks, flagged for its reflection.
REVIEW["reachability_probe.py"] = FULL
# The getattr strings reach F.softmax; the dispatcher sees the operator: a forbidden call.
EXPECTED["getattr_strings_hidden_softmax.py"] = {**FULL, "softmax": 0}
STATUS[("getattr_strings_hidden_softmax.py", "softmax")] = "forbidden call"
STATUS[("scan_budget_padded_engine_patch.py", "softmax")] = "forbidden call"
STATUS.update({
    ("huge_and_weird_return_values.py", "mask"): "partial",
    ("patch_random_generators.py", "mask"): "partial",
    ("signal_ignoring_spin_attention.py", "mask"): "timeout",
    ("deep_recursion_split_heads.py", "split_heads"): "partial",
    ("base_exceptions_and_evil_messages.py", "mask"): "partial",
    ("base_exceptions_and_evil_messages.py", "split_heads"): "partial",
    ("base_exceptions_and_evil_messages.py", "softmax"): "error",
    ("base_exceptions_and_evil_messages.py", "multi_head"): "error",
    ("kill_parent_and_process_group.py", "softmax"): "passed",
})
# block: layer_norm raises at once, transformer_block builds 64 MB messages: "error", or
# "timeout" when building them outlasts the question's time on a loaded machine.
STATUSES = {("base_exceptions_and_evil_messages.py", "block"): {"error", "timeout"}}
EXPECTED.update({name: ZERO for name in PROVEN})
EXPECTED.update(REVIEW)


# Refusals installed before the student's code and never removed, and no process besides the
# worker: a process started (at import, or while a question runs) is hard evidence; rewriting
# what the worker reads, disarming through frames that library code hands back, or a warnings
# filter that breaks arming code change nothing (the worker armed before the file ran).
for _name in ("fork_bomb_bounded.py", "fork_child_lingers.py",
              "detached_background_processes_at_import.py"):
    REVIEW.pop(_name, None)
PROCESS_ESCAPES = {
    "second_process_forked_helper_softmax.py": ZERO,
    "second_process_multiprocessing_softmax.py": {**FULL, "softmax": 0},
    "fork_child_lingers.py": ZERO,
    "detached_background_processes_at_import.py": ZERO,
    "fork_bomb_bounded.py": {**FULL, "softmax": 0},
}
ESCAPES.update({name: "another process" for name in PROCESS_ESCAPES})
EXPECTED.update(PROCESS_ESCAPES)
STATUS.update({(name, q): "integrity" for name, want in PROCESS_ESCAPES.items()
               for q, score in want.items() if score != "full"})
ARMED_BEFORE = ("rewrite_arming_input_subclasses_softmax.py",
                "frames_from_library_disarm_softmax.py", "warnings_filter_breaks_arming_softmax.py")
EXPECTED.update({name: {**FULL, "softmax": 0} for name in ARMED_BEFORE})
STATUS.update({(name, "softmax"): "forbidden call" for name in ARMED_BEFORE})
# The scan doubts `__subclasses__`/`__globals__` and frame reads: a review flag, no points taken.
REVIEW.update({name: {**FULL, "softmax": 0} for name in ARMED_BEFORE[:2]})
# Library implementations built from basic operators (torch's decomposition table and Python
# references, SciPy's softmax on the torch track) are refused as routines: forbidden calls.
LIBRARY_ROUTES = {
    "route_decomposition_table_softmax.py": {**FULL, "softmax": 0, "attention": 0},
    "route_refs_softmax.py": {**FULL, "softmax": 0},
    "route_scipy_softmax_torch_track.py": {**FULL, "softmax": 0},
    # Its own kernel over the refusal reaches nothing below it but the refusal.
    "route_own_kernel_over_refusal_softmax.py": {**FULL, "softmax": 0},
}
EXPECTED.update(LIBRARY_ROUTES)
STATUS.update({(name, q): "forbidden call" for name, want in LIBRARY_ROUTES.items()
               for q, score in want.items() if score != "full"})
# What is computed is refused, whoever computes it in the worker: torch's TensorExpr compiler
# lowering softmax into loops of its own, a library module of torch.ao driven with the
# student's weights (named, or found by walking vars()), a private helper of torch's
# references named otherwise, SciPy's zscore on a NumPy copy (each with a hand-written
# backward where it has none): forbidden calls, and no flag needed to lose the points.
COMPUTED = {
    "route_tensorexpr_softmax.py": {**FULL, "softmax": 0},
    "route_quantizable_mha_attention.py": {**FULL, "multi_head": 0},
    "route_module_walk_attention.py": {**FULL, "multi_head": 0},
    "route_refs_private_normalize_layer_norm.py": {**FULL, "block": 0},
    "route_scipy_zscore_layer_norm.py": {**FULL, "block": 0},
    # ... also when the file never names the package (imported at run time, refused as it is)
    "route_hidden_import_zscore_layer_norm.py": {**FULL, "block": 0},
    # ... also when a tensor subclass of the student's performs each of the library's calls
    "route_torch_function_launders_library_attention.py": {**FULL, "multi_head": 0},
}
EXPECTED.update(COMPUTED)
STATUS.update({(name, q): "forbidden call" for name, want in COMPUTED.items()
               for q, score in want.items() if score != "full"})
# The refusals hold once the import is over, read by the fork server from outside the worker:
# a file whose top level serves the graded calls itself, before they hold, gets nothing graded
# where a routine is forbidden (not graded, flagged); a question that forbids nothing is graded
# in a worker that refuses nothing.
UNARMED_BY_IMPORT = {"arming_skipped_serving_from_import.py":
                     {**ZERO, "split_heads": "full"}}
EXPECTED.update(UNARMED_BY_IMPORT)
REVIEW.update(UNARMED_BY_IMPORT)
STATUS.update({("arming_skipped_serving_from_import.py", q): "error"
               for q in QUESTIONS if q != "split_heads"})


def check_flag(name: str, row: dict) -> None:
    """A file with proof carries its findings and what it would have scored; a file the scan
    only doubts is flagged for review and lost nothing for it; no other is flagged."""
    if name in ESCAPES:
        # Hard evidence from how the worker ended: every question given nothing, the escape named.
        assert any(ESCAPES[name] in e for e in row["integrity_review"]["escapes"]), name
        review = row["integrity_review"]
        assert review["evidence"] == "hard" and review["questions"], name
        assert all(row["questions"][q]["status"] == "integrity" for q in review["questions"])
        return
    if name in PROVEN:
        assert row["integrity"][0]["kind"] == "tamper" and any(n.startswith(
            "integrity: this submission modifies the grader; flagged for review")
            for n in row["notes"]), name
        review = row["integrity_review"]
        assert review["on_tamper"] == "zero" and review["questions"] == QUESTIONS
        assert review["evidence"] == "hard"
        assert review["score_without_penalty"] in PROVEN[name], (name, review)
        return
    if name in REVIEW:
        assert row["integrity"] and {f["kind"] for f in row["integrity"]} == {"review"}, name
        assert any(n.startswith(REVIEW_NOTE) for n in row["notes"]), name
        review = row["integrity_review"]
        assert review["evidence"] == "review" and review["questions"] == [], (name, review)
        assert review["score_without_penalty"] == row["score"]
        assert "integrity" not in {q["status"] for q in row["questions"].values()}
        return
    assert "integrity" not in row, (name, row.get("integrity"))


def leftover_processes() -> list[str]:
    """This run's processes of the sandbox users or with the hostile markers, once dying ones
    are gone (other checkouts grading on this machine are not looked at)."""
    return settled(_leftovers, polls=50)


def _leftovers() -> list[str]:
    return [f"{p['uid']} {p['pid']} {p['args']}" for p in own_processes()
            if 61000 <= p["uid"] < 61100 or any(m in p["args"] for m in MARKERS)]


def test_the_corpus_runs_only_under_a_separating_sandbox():
    """The corpus kills processes and deletes files: at the `rlimits` level as root it would
    reach the machine, so the grader must refuse that level unless asked for it by name."""
    from autograder.sandbox import choose_level

    assert choose_level("auto") in ("namespaces", "user"), "run `make system-deps` (bubblewrap)"


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Grade the hostile corpus together with honest copies, from a class folder."""
    from autograder.sandbox import choose_level

    level = choose_level("auto")  # raises rather than let the corpus loose at `rlimits` as root
    assert level in ("namespaces", "user"), level
    root = tmp_path_factory.mktemp("class")
    cls = root / "submissions"
    cls.mkdir()
    for f in HOSTILE.glob("*.py"):
        shutil.copy(f, cls / f.name)
    honest = sorted((SUBMISSIONS / "correct").glob("*.py"))[:3]
    for f in honest:
        shutil.copy(f, cls / f"zz_honest_{f.name}")
    before = sorted(p.name for p in cls.iterdir())
    out = root / "out" / "results.json"
    out.parent.mkdir()
    r = run_cli("grade", "-a", "attention", str(cls), "--json", str(out), "--feedback",
                "--limit", "question_seconds=5", "--limit", "import_seconds=5",
                "--limit", "memory_mb=1536",
                cwd=root, env={"AUTOGRADER_TEST_SECRET": SECRET}, timeout=1200)
    time.sleep(0.5)
    return {"proc": r, "out": out, "dir": cls, "root": root, "before": before,
            "honest": [f"zz_honest_{f.name}" for f in honest]}


@pytest.mark.slow
def test_batch_finishes_with_a_row_for_every_submission(batch):
    r = batch["proc"]
    # Graded to the end; the hostile rows need the instructor (tampering flagged): status 4.
    assert r.returncode == 4, r.stderr[-3000:]
    assert "row(s) need you" in r.stderr
    data = json.loads(batch["out"].read_text())
    names = sorted(os.path.basename(s["path"]) for s in data["submissions"])
    assert names == batch["before"]
    for s in data["submissions"]:
        assert list(autograded(s["questions"])) == QUESTIONS
        for q in autograded(s["questions"]).values():
            assert q["status"] in {"passed", "partial", "failed", "not attempted", "error",
                                   "timeout", "memory limit", "forbidden call", "integrity"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_attack_gains_nothing(batch, name):
    data = json.loads(batch["out"].read_text())
    sub = next(s for s in data["submissions"] if os.path.basename(s["path"]) == name)
    for qid, want in EXPECTED[name].items():
        q = sub["questions"][qid]
        if want == "full":
            assert q["score"] == q["max_score"], f"{qid}: {q['feedback']}"
        else:
            assert q["score"] == want, f"{qid}: {q['feedback']}"
        if (name, qid) in STATUS:
            assert q["status"] == STATUS[(name, qid)], f"{qid}: {q['feedback']}"
        if (name, qid) in STATUSES:
            assert q["status"] in STATUSES[(name, qid)], f"{qid}: {q['feedback']}"
        assert len(q["feedback"]) < 20_000
    check_flag(name, sub)


def test_every_hostile_file_has_an_expectation():
    assert sorted(f.name for f in HOSTILE.glob("*.py")) == sorted(EXPECTED)
    # Exact scores only: a bound would pass on a file that lost more than its attack explains.
    assert all(want == "full" or isinstance(want, (int, float))
               for per_file in EXPECTED.values() for want in per_file.values())


@pytest.mark.slow
def test_honest_submissions_keep_their_exact_scores(batch):
    data = json.loads(batch["out"].read_text())
    for s in data["submissions"]:
        if os.path.basename(s["path"]).startswith("zz_honest_"):
            assert s["score"] == AUTOGRADED_MAX and s["max_score"] == MAX_SCORE, s


@pytest.mark.slow
def test_nothing_is_left_running(batch):
    assert leftover_processes() == []


@pytest.mark.slow
def test_no_secret_in_any_output(batch):
    r = batch["proc"]
    assert SECRET not in r.stdout and SECRET not in r.stderr
    for f in batch["root"].rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


@pytest.mark.slow
def test_nothing_outside_the_sandbox_was_written_or_deleted(batch):
    assert sorted(p.name for p in batch["dir"].iterdir()) == batch["before"]
    assert sorted(p.name for p in batch["out"].parent.iterdir()) == ["results.json"]
    assert sorted(p.name for p in batch["root"].iterdir()) == ["out", "submissions"]
    for name in ("conftest.py", "sitecustomize.py", "usercustomize.py", "results.json"):
        assert not (SUBMISSIONS.parent / name).exists() or name == "conftest.py"
    assert not (SUBMISSIONS.parent.parent / "results.json").exists()
    assert not os.path.exists("/autograder/results/results.json")
    assert "HOSTILE_CUSTOMIZE_EXECUTED" not in batch["proc"].stderr
    assert "HOSTILE_PICKLE_RCE_EXECUTED" not in batch["proc"].stderr + batch["proc"].stdout


@pytest.mark.slow
def test_printed_fake_scores_have_no_effect(batch):
    out = batch["proc"].stdout
    assert "100/100" not in out and '"score": 100' not in out


@pytest.mark.slow
def test_the_sandbox_level_is_reported(batch):
    assert "sandbox: namespaces" in batch["proc"].stdout or \
        "sandbox: user" in batch["proc"].stdout or "sandbox: rlimits" in batch["proc"].stdout
    data = json.loads(batch["out"].read_text())
    assert all(s["sandbox"] for s in data["submissions"])


# A weaker level still kills leftovers, enforces time limits and survives exits. Only attacks
# whose defence does not rest on a separate user or namespaces are run here: at this level the
# worker runs as the grader's own user.
DEGRADED = ["honest.py", "detached_background_processes_at_import.py", "fork_child_lingers.py",
            "thread_runs_forever.py", "infinite_loop_softmax.py", "os_exit_in_softmax.py",
            "sys_exit_at_import.py", "output_flood.py", "memory_hog_layer_norm.py"]


@pytest.mark.slow
def test_rlimits_level_still_contains_processes_and_time(tmp_path):
    for name in DEGRADED:
        shutil.copy(HOSTILE / name, tmp_path / name)
    out = tmp_path / "r.json"
    r = run_cli("grade", "-a", "attention", str(tmp_path), "--json", str(out), "--sandbox",
                "rlimits", "--limit", "question_seconds=5", "--jobs", "1", timeout=900)
    assert r.returncode in GRADED, r.stderr[-2000:]
    assert "sandbox: rlimits" in r.stdout
    time.sleep(0.5)
    assert leftover_processes() == []
    data = {os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]}
    assert sorted(data) == sorted(DEGRADED)
    for name in DEGRADED:
        for qid, want in EXPECTED[name].items():
            q = data[name]["questions"][qid]
            if want == "full":
                assert q["score"] == q["max_score"], (name, qid, q["feedback"])
            else:
                assert q["score"] == want, (name, qid, q["feedback"])
        check_flag(name, data[name])


@pytest.mark.slow
@pytest.mark.parametrize("level", ["namespaces", "rlimits"])
def test_without_pid_namespaces_the_fork_server_kills_what_workers_leave(level):
    """Where a worker cannot have a PID namespace of its own, the fork server, a subreaper,
    kills every process the worker left (and, with a worker user, every process of it)."""
    from autograder.model.assignment import load_assignment
    from autograder.grading.grade import grade_submission
    from autograder.sandbox import Sandbox

    require_level(level)
    assignment = load_assignment("attention")
    limits = assignment.limits.override({"question_seconds": 5})
    sandbox = Sandbox(level, pid_namespaces=False)
    try:
        assert not sandbox.pidns
        for name in DEGRADED:
            result = submission_json(grade_submission(assignment, HOSTILE / name, sandbox, limits))
            for qid, want in EXPECTED[name].items():
                q = result["questions"][qid]
                assert q["score"] == (q["max_score"] if want == "full" else want), \
                    (name, qid, q["feedback"])
            check_flag(name, result)
    finally:
        sandbox.close()
    assert leftover_processes() == []
