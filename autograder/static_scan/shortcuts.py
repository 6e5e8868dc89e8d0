"""Forbidden library shortcuts: does a library reference found in the source name a question's
forbidden routine, by any route (another path to the same routine, a Tensor method, torch's
decompositions, switching off torch-function modes, a name computed at run time)?"""
from __future__ import annotations

import re

from .vocabulary import Finding, root_of


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in spaced.lower().split("_") if w]


def _subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(any(w == x for x in it) for w in short)


def names_same_routine(component: str, forbidden_short: str, also: tuple[str, ...] = ()) -> bool:
    """Does a library name (`_norm`, `Norm`, `_fused_norm_kernel`) name the forbidden routine
    (`norm`)? `also`: other library words for the routine (the assignment's `also_named`)."""
    want = _words(forbidden_short)
    if want and want[-1] == "forward" and len(want) > 1:
        want = want[:-1]
    have = _words(component)
    if not want or not have:
        return False
    joined_want, joined_have = "".join(want), "".join(have)
    if joined_want in joined_have or _subsequence(want, have):
        return True
    return any("".join(_words(eq)) in joined_have for eq in also)


def disables_function_modes(path: str) -> bool:
    flat = path.replace("_", "").lower()
    # `DisableTorchFunctionSubclass` is what a tensor subclass's own `__torch_function__`
    # uses to call the default implementation; it leaves modes (the grader's) in place.
    if flat.endswith("disabletorchfunctionsubclass"):
        return False
    return root_of(path) == "torch" and ("torchfunction" in flat or "pythondispatch" in flat
                                       or path.startswith("torch.overrides"))


def matches_forbidden(finding: Finding, entry: str, also: tuple[str, ...] = ()) -> bool:
    """Is a reference found in the source the forbidden entry, by any route? `also`: other
    library words for the routine."""
    if entry.startswith("autograd.") or "." not in entry:
        return False        # autograd nodes are seen only in the worker's graph
    short = entry.rsplit(".", 1)[1]
    target = finding.target
    if finding.rule == "library":
        if target == entry:
            return True
        return any(names_same_routine(c, short, also) for c in target.split(".")[1:])
    if finding.rule == "method":
        return entry.startswith(("torch.Tensor.", "numpy.ndarray.")) and \
            names_same_routine(target, short, also)
    if finding.rule in ("computed-name", "decomposition", "mode-off"):
        return root_of(target) == root_of(entry)
    return False


def forbidden_why(f: Finding, entry: str) -> str:
    if f.rule == "method":
        return f"calls the library's `{f.target}` method"
    if f.rule == "computed-name":
        return f"looks up a library function of `{f.target}` by a name built at run time"
    if f.rule == "decomposition":
        return "uses torch's decomposition modules (library implementations)"
    if f.rule == "mode-off":
        return "switches off the grader's detection of library calls"
    return f"reaches `{f.target}`" if f.code != f.target else ""
