"""`autograder new NAME`: a new assignment's files in the three places, for either track, that
lint clean as they are, record nothing new when snapshotted again, grade their reference at
every autograded point and their template at none, build, and are found by `check` in the
author's own course folder; a name that cannot be one, or files already there, are refused."""
import subprocess
import sys

import pytest

from helpers import ROOT, cli_in_process, load_json, run_cli

from autograder.authoring.scaffold import planned_files


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course folder with one new assignment per track, made by the command as an author
    runs it (from the folder, no path given)."""
    folder = tmp_path_factory.mktemp("course")
    for name, track in (("rescale", "torch"), ("rescale_np", "numpy")):
        r = run_cli("new", name, "--track", track, "--title", f"Rescaling ({track})",
                    cwd=folder)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"autograder lint -a {name}" in r.stdout
    return folder


@pytest.mark.parametrize("name", ["rescale", "rescale_np"])
def test_the_new_assignment_lints_clean_and_snapshots_unchanged(course, name):
    for place in (f"student_template/{name}.py", f"student_template/{name}.ipynb",
                  f"reference/{name}.py", f"assignments/{name}/assignment.toml",
                  f"assignments/{name}/tests/scale.py", f"assignments/{name}/mistakes.py",
                  f"assignments/{name}/notebook.md", f"assignments/{name}/snapshots/scale.json",
                  f"assignments/{name}/snapshots/mistake-outcomes.bin"):
        assert (course / place).is_file(), place
    assert not (course / "assignments" / name / "written.toml").exists()
    r = run_cli("lint", "-a", name, cwd=course)
    assert r.returncode == 0 and f"assignments/{name}: no authoring problems found" in r.stdout, \
        r.stdout + r.stderr
    r = run_cli("snapshot", "-a", name, cwd=course)
    assert r.returncode == 0 and r.stdout.count("unchanged ") == 2, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "autograder.platforms.notebook", name, "--check"],
                       cwd=course, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "up to date" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("name", ["rescale", "rescale_np"])
def test_its_reference_takes_every_autograded_point_and_its_template_none(course, name):
    out = course / f"{name}.json"
    r = cli_in_process("grade", "-a", str(course / "assignments" / name),
                       str(course / "reference" / f"{name}.py"),
                       str(course / "student_template" / f"{name}.py"), "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    reference, template = load_json(out)["submissions"]
    assert reference["score"] == reference["max_score"] == 2
    assert template["score"] == 0
    assert template["questions"]["scale"]["status"] == "not attempted"


def test_check_finds_it_in_the_course_folder_and_names_its_mistake(course, tmp_path):
    mine = course / "mine.py"
    mine.write_text((course / "reference" / "rescale.py").read_text().replace(
        "x * factor", "x + factor"))
    r = run_cli("check", "mine.py", cwd=course)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Rescaling (torch): public checks of mine.py" in r.stdout
    assert "likely mistake: the factor added instead of multiplied" in r.stdout
    (course / "nothing.py").write_text("x = 1\n")
    r = run_cli("check", "nothing.py", cwd=course)
    assert r.returncode == 2 and "give the assignment" in r.stderr
    assert "-a rescale_np" in r.stderr


def test_it_builds(course, tmp_path):
    r = run_cli("build", "-a", "rescale_np", "--out", str(tmp_path), "--no-otter", cwd=course)
    assert r.returncode == 0, r.stdout + r.stderr
    student = tmp_path / "rescale_np-student"
    assert (student / "rescale_np.py").is_file() and not (student / "reference").exists()


def test_nothing_is_overwritten_and_bad_names_are_refused(course, tmp_path):
    before = (course / "reference" / "rescale.py").read_text()
    r = run_cli("new", "rescale", cwd=course)
    assert r.returncode == 2 and "not overwriting what is there" in r.stderr
    assert "reference/rescale.py" in r.stderr and str(course) not in r.stderr
    assert (course / "reference" / "rescale.py").read_text() == before
    for bad in ("2d", "Rescale", "class", "re-scale"):
        r = run_cli("new", bad, "--project", str(tmp_path))
        assert r.returncode == 2 and "cannot name an assignment" in r.stderr, bad
    r = run_cli("new", "attention", "--project", str(tmp_path))
    assert r.returncode == 2 and "already has an assignment 'attention'" in r.stderr
    assert not any(tmp_path.iterdir())


def test_it_writes_the_three_places_only():
    files = planned_files(ROOT / "x", "demo", "Demo", "torch")
    tops = {p.relative_to(ROOT / "x").parts[0] for p in files}
    assert tops == {"assignments", "reference", "student_template"}
