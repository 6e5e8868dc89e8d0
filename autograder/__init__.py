"""An autograder for transformer exercises: otter-format questions, sandboxed student code."""
import sys as _sys

__version__ = "0.1.0"

# Kept parseable by old Pythons, and checked before any module that needs 3.11 is imported, so
# an old interpreter gets one sentence instead of a traceback.
if _sys.version_info < (3, 11):
    raise SystemExit(
        "autograder needs Python 3.11 or newer, and this is Python %d.%d: install a newer "
        "Python (python.org, or your package manager), or in Colab use the default runtime."
        % _sys.version_info[:2])

# Entry points that moved into packages: `python -m autograder.OLD` says where each went, in one
# line, instead of "No module named". (While `-m` looks its module up, sys.argv[0] is "-m" and
# the package is imported first: this runs then, and only then.)
_MOVED = {"notebook": "python -m autograder.platforms.notebook",
          "actions": "python -m autograder.platforms.actions",
          "classroom50": "python -m autograder.platforms.classroom50",
          "gradescope": "python -m autograder.platforms.gradescope",
          "authoring.notebook": "python -m autograder.platforms.notebook"}


def _module_run_by_dash_m():
    argv = getattr(_sys, "orig_argv", [])
    for i, arg in enumerate(argv[1:], 1):
        if arg == "-m":
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("-m"):
            return arg[2:]
    return None


if _sys.argv[:1] == ["-m"]:
    _old = (_module_run_by_dash_m() or "").partition("autograder.")[2]
    if _old in _MOVED:
        raise SystemExit("python -m autograder.%s: moved; run %s instead" % (_old, _MOVED[_old]))
