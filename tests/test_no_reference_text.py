"""No output of the engine quotes the reference: warnings raised while the trusted side runs
the reference (or a known mistake's variant made from it) are not printed, since Python prints
a warning with the file's path and its source line. A fresh process, so that no earlier warning
of the same line was already shown and silenced."""
import re

from helpers import ROOT, SUBMISSIONS, run_cli

# Wrong NumPy submissions whose diagnosis runs the reference's softmax on rows it overflows or
# masks in full (NumPy's "invalid value encountered in subtract").
WRONG = ["softmax_no_max_subtraction.py", "split_heads_no_transpose.py"]


def test_numpy_grading_prints_nothing_of_the_reference():
    r = run_cli("grade", "-a", "attention_numpy",
                *(str(SUBMISSIONS / "numpy" / "wrong" / f) for f in WRONG), "--jobs", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    reference = (ROOT / "reference" / "attention_numpy.py").read_text().splitlines()
    code = [line.strip() for line in reference if len(line.strip()) > 25
            and not line.strip().startswith(("#", '"""', "def ", "return", "import", "from"))]
    assert "reference/" not in out and "attention_numpy.py" not in out
    assert not re.search(r"RuntimeWarning|Warning:", out)
    assert not [line for line in code if line in out]
