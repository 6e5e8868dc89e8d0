"""What diagnosis keeps of a submission's outcomes is bounded (README: "capped at 64 MiB"), seen
through a real grading: the outcomes come back from the sandbox's worker and reach
the diagnosis session of the checks' context from the question's checks, as in every
grading."""
from __future__ import annotations

import pytest

from helpers import SUBMISSIONS

from autograder import diagnose
from autograder.diagnose import session as diagnosis_session

DIVIDES_BY_DK = SUBMISSIONS / "wrong" / "attention_divides_by_dk.py"

# Every function returns a float32 tensor of `@N@` zeros: wrong everywhere, of a known size.
SAME_SIZE_EVERYWHERE = '''
import torch


def _out():
    return torch.zeros(@N@)


def softmax(x, dim=-1):
    return _out()


def causal_mask(T):
    return _out()


def scaled_dot_product_attention(q, k, v, mask=None):
    return _out(), _out()


def split_heads(x, n_heads):
    return _out()


def merge_heads(x):
    return _out()


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _out()


def layer_norm(x, gamma, beta, eps=1e-5):
    return _out()


def transformer_block(x, params, n_heads, mask=None):
    return _out()
'''


@pytest.fixture
def sessions(monkeypatch):
    """The diagnosis sessions the gradings in a test open, to look at what they kept."""
    opened = []

    class Recorded(diagnose.Session):
        def __init__(self, assignment):
            super().__init__(assignment)
            opened.append(self)

    monkeypatch.setattr(diagnose, "Session", Recorded)
    return opened


def _returning(tmp_path, floats: int):
    path = tmp_path / f"returns_{floats}.py"
    path.write_text(SAME_SIZE_EVERYWHERE.replace("@N@", str(floats)))
    return path


def _kept(session) -> list:
    return [r for rs in session.passed.values() for r in rs] + [r for r, _ in session.failed]


def _verdict(result) -> dict:
    return {qid: (q.score, q.status, [c.status for c in q.cases])
            for qid, q in result.questions.items()}


def test_the_documented_cap():
    assert diagnose.KEPT_BYTES == 64 * 2**20


def test_what_diagnosis_keeps_of_real_outcomes_stays_within_the_cap(grade, sessions, tmp_path,
                                                                      monkeypatch):
    at_floor = _returning(tmp_path, diagnose.RECORD_FLOOR // 4)     # one record: the floor
    full = grade(at_floor)
    [everything] = sessions
    records = len(everything.failed)
    assert records > 8 and everything.kept_bytes == records * diagnose.RECORD_FLOOR
    assert all(diagnose.outcome_bytes(r.got) == diagnose.RECORD_FLOOR for r in _kept(everything))

    # With room for five of them, five are kept and the rest are let go; the grade is the same.
    cap = 5 * diagnose.RECORD_FLOOR
    monkeypatch.setattr(diagnosis_session, "KEPT_BYTES", cap)
    capped = grade(at_floor)
    assert len(sessions) == 2 and sessions[1].kept_bytes == cap
    assert len(_kept(sessions[1])) == 5 and len(sessions[1].failed) == 5
    assert _verdict(capped) == _verdict(full) and capped.score == full.score == 0


def test_an_outcome_far_larger_than_the_references_is_not_kept(grade, sessions, tmp_path):
    grade(_returning(tmp_path, diagnose.RECORD_FLOOR // 4 + 1))       # just over the floor
    [session] = sessions
    assert session.kept_bytes == 0 and _kept(session) == []


def test_a_case_whose_outcome_is_not_kept_gets_no_named_mistake(grade, sessions, monkeypatch):
    named = grade(DIVIDES_BY_DK)
    diagnosed = [c.diagnosis for q in named.questions.values() for c in q.cases if c.diagnosis]
    assert diagnosed and sessions[0].kept_bytes > 0
    monkeypatch.setattr(diagnosis_session, "KEPT_BYTES", 0)       # nothing fits
    unnamed = grade(DIVIDES_BY_DK)
    assert sessions[1].kept_bytes == 0
    assert not [c.diagnosis for q in unnamed.questions.values() for c in q.cases if c.diagnosis]
    assert _verdict(unnamed) == _verdict(named) and unnamed.score == named.score
