"""Limits live in one place and can be overridden; the sandbox says which level it uses."""
import pytest

from autograder.model.limits import Limits, parse_cli_limits
from helpers import run_cli


def test_defaults_overridden_by_assignment_then_cli(assignment):
    assert Limits().question_seconds == 10.0
    assert assignment.limits.submission_seconds == 60
    cli = assignment.limits.override(parse_cli_limits(["question_seconds=2", "memory-mb=2048"]))
    assert cli.question_seconds == 2.0 and cli.memory_mb == 2048
    assert cli.submission_seconds == assignment.limits.submission_seconds


def test_unknown_limit_is_refused():
    with pytest.raises(ValueError, match="unknown limit 'speed'"):
        Limits().override({"speed": 3})
    r = run_cli("grade", "-a", "attention", "nothing.py", "--limit", "speed=3")
    assert r.returncode == 2 and "unknown limit" in r.stderr


def test_sandbox_command_reports_the_level():
    r = run_cli("sandbox")
    assert r.returncode == 0
    assert r.stdout.startswith("level: ")
    r = run_cli("sandbox", "--sandbox", "rlimits")
    assert "level: rlimits" in r.stdout


def test_rlimits_level_is_always_available_by_name():
    from autograder.sandbox import choose_level

    assert choose_level("rlimits") == "rlimits"


def test_auto_never_runs_student_code_as_root(monkeypatch):
    import autograder.sandbox.levels as sb

    monkeypatch.setattr(sb, "bwrap_works", lambda root: False)
    monkeypatch.setattr(sb, "_world_readable_python", lambda: False)
    monkeypatch.setattr(sb.os, "geteuid", lambda: 0)
    with pytest.raises(sb.SandboxError, match="student code would run as root"):
        sb.choose_level("auto")
    monkeypatch.setattr(sb.os, "geteuid", lambda: 1000)
    assert sb.choose_level("auto") == "rlimits"
