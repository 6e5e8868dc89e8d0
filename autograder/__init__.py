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
