"""The words of every problem, made from its kind and facts: the one place a check's message is
written. A new kind of problem gets its wording here (`@says("kind")`); a reworded message
changes here only.

Each wording returns `Said`: the message for public cases, the one for hidden cases where it
differs (it never quotes a hidden expected value), and further lines (a library error's). The
problem's advice goes between the first line and the further ones (`Problem.text`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..sandbox.evidence import refusal_message
from .formatting import fmt_num, fmt_shape

# Facts that hold an author's own words (`Problem(kind, message, hidden)`).
GIVEN = "message"
GIVEN_HIDDEN = "hidden_message"


@dataclass(frozen=True)
class Said:
    public: str
    hidden: str | None = None
    more: str = ""


_WORDINGS: dict[str, Callable[[Mapping[str, Any]], Said]] = {}


def says(kind: str):
    """Register the wording of one kind of problem."""
    def register(fn: Callable[[Mapping[str, Any]], Said]):
        _WORDINGS[kind] = fn
        return fn
    return register


def say(kind: str, facts: Mapping[str, Any]) -> Said:
    if GIVEN in facts:
        return Said(str(facts[GIVEN]), facts.get(GIVEN_HIDDEN))
    wording = _WORDINGS.get(kind)
    if wording is None:
        raise KeyError(f"no wording for problems of kind {kind!r}")
    return wording(facts)


def same(text: str) -> Said:
    return Said(text, text)


# ------------------------------------------------------------------ the student's file

@says("missing")
def _missing(f: Mapping[str, Any]) -> Said:
    if f["case"] == "undefined":
        return same(f"`{f['function']}` is not defined in your file: define it with the "
                    f"signature {f['signature']}")
    if f["case"] == "not_a_function":
        return same(f"`{f['function']}` in your file is a {f['type']}, not a function")
    # an answer variable
    return same(f"`{f['name']}` is not defined in your file: keep the line `{f['name']} = ...` "
                f"from the template and put your answer there")


@says("not_attempted")
def _not_attempted(f: Mapping[str, Any]) -> Said:
    if f["case"] == "stub":
        return same(f"`{f['function']}` is not implemented yet (it raises NotImplementedError)")
    return same(f"`{f['name']}` is still None: replace None with your answer ({f['form']})")


@says("dependency")
def _dependency(f: Mapping[str, Any]) -> Said:
    if f.get("chained"):
        return same(f"this case passes the output of your `{f['culprit']}` to "
                    f"{f['function']}, and `{f['culprit']}` is not implemented yet{f['where']}")
    return same(f"{f['function']} calls your `{f['culprit']}`, which is not implemented "
                f"yet{f['where']}")


# ------------------------------------------------------------------ the call

@says("forbidden")
def _forbidden(f: Mapping[str, Any]) -> Said:
    """A routine the question forbids, reached: named as the assignment names it, in the words
    of `autograder grade` (`refusal_message`), or the autograd nodes it left in the result."""
    if f.get("shown"):
        return same(refusal_message(f["function"], f["shown"], f.get("how", "routine"),
                                    f["noun"], f.get("explain", "")))
    names = ", ".join(
        f"a library routine (`{n[len('autograd.'):]}` in the autograd graph of your result)"
        if n.startswith("autograd.") else f"`{n}`" for n in f["routines"])
    return same(f"{f['function']} called {names}, which this question asks you to write "
                f"yourself; implement it with basic {f['noun']} operations")


@says("memory")
def _memory(f: Mapping[str, Any]) -> Said:
    return same(f"{f['function']} ran out of memory{f['where']}: {f['message']}")


@says("error")
def _error(f: Mapping[str, Any]) -> Said:
    """The student's exception: its type and first line, where it was raised; the further
    lines of the library's message come after the advice."""
    subject = f["function"]
    if f.get("chained"):
        subject = (f"your `{f['chained']}`, whose output this case passes to "
                   f"{f['function']},")
    head = f"{subject} raised {f['type']}: {f['first']}{f.get('where', '')}"
    return Said(head, head, f.get("rest", ""))


# ------------------------------------------------------------------ the output's structure

@says("type")
def _type(f: Mapping[str, Any]) -> Said:
    """A value of the wrong kind: `form` says how the sentence goes."""
    form, what = f["form"], f.get("what", "")
    if form == "returned":
        return same(f"{what} should be {f['expected']}, but you returned {f['got']}"
                    f"{f.get('tail', '')}")
    if form == "length":
        return same(f"{what} should be {f['expected']}, but yours has {f['length']} "
                    f"item{'s' if f['length'] != 1 else ''}")
    if form == "keys":
        return _keys(f)
    if form == "fields":
        return _fields(f)
    if form == "chained":
        return same(f"this case passes `{f['culprit']}(...){f['item']}` to {f['function']}, "
                    f"but the output of your `{f['culprit']}` has no such item")
    if form == "roundtrip":
        return same(f"{what} should {f['verb']} {f['expected']}, got {f['got']}")
    if form == "answer":
        return same(f"`{f['name']}` should be {f['expected']}, but it is {f['got']}")
    raise KeyError(f"no wording for a type problem of form {form!r}")


def _quoted(keys: list[str]) -> str:
    shown = [f'"{k}"' for k in keys[:5]] + (["..."] if len(keys) > 5 else [])
    return ", ".join(shown)


def _keys(f: Mapping[str, Any]) -> Said:
    """A dict with keys missing or extra (key names are the contract: said in hidden cases
    too)."""
    what, missing, extra = f["what"], list(f["missing"]), list(f["extra"])
    parts = []
    if missing:
        parts.append(f"has no key{'s' if len(missing) > 1 else ''} {_quoted(missing)}")
    if extra:
        parts.append(f"has {'keys' if len(extra) > 1 else 'a key'} {_quoted(extra)} the "
                     f"contract does not have")
    return same(f"{what} {' and '.join(parts)}; expected the keys {_quoted(f['expected'])}")


def _fields(f: Mapping[str, Any]) -> Said:
    what, missing, extra = f["what"], list(f["missing"]), list(f["extra"])
    parts = []
    if missing:
        parts.append(f"has no field{'s' if len(missing) > 1 else ''} "
                     f"{', '.join(f'`{k}`' for k in missing[:5])}")
    if extra:
        parts.append(f"has {'fields' if len(extra) > 1 else 'a field'} "
                     f"{', '.join(f'`{k}`' for k in extra[:5])} the contract does not have")
    return same(f"{what} {' and '.join(parts)}")


@says("shape")
def _shape(f: Mapping[str, Any]) -> Said:
    what, exp, got = f["what"], f["expected"], f["got"]
    pub = f"{what}: expected shape {fmt_shape(exp)}, got {fmt_shape(got)}"
    hid = f"{what} has the wrong shape {fmt_shape(got)}"
    if f.get("same_count"):
        extra = " (the same numbers of elements: a transpose or reshape in the wrong order?)"
        pub += extra
        hid += extra
    return Said(pub, hid)


_DTYPE_WHY = {
    "lowered": " (something converted the float64 input to float32: keep the input's dtype)",
    "promoted": (" (something promoted the float32 input to float64, e.g. a float64 array "
                 "or a NumPy float64 scalar such as np.sqrt(d) in the arithmetic: keep the "
                 "input's dtype)"),
}


@says("dtype")
def _dtype(f: Mapping[str, Any]) -> Said:
    exp, got, why = f["expected"], f["got"], f.get("why")
    msg = f"{f['what']}: expected dtype {exp}, got {got}"
    if why == "no_input":
        msg += (f" (no {exp} input is passed to this function, so the result's dtype is not "
                f"inherited: create it as {exp}, as the contract says)")
    elif why == "bool":
        msg += f" (return a bool {f['noun']})"
    elif why in _DTYPE_WHY:
        msg += _DTYPE_WHY[why]
    return same(msg)


# ------------------------------------------------------------------ values

def _values_pair(f: Mapping[str, Any], subject: str, verb: str) -> Said:
    """The words of values that differ: `subject` and `verb` ("..: values differ" for an
    output, " differs" for a gradient)."""
    if f.get("exact"):
        n, numel, idx = f.get("n"), f.get("numel"), f.get("index")
        if f.get("scalar"):
            pub = f"{subject} is {f['got']}, expected {f['expected']}"
            hid = f"{subject} differs from the reference"
        else:
            pub = (f"{subject} differs at {n} of {numel} positions, first at {idx}: "
                   f"expected {f['expected']}, got {f['got']}")
            hid = f"{subject} differs from the reference at {n} of {numel} positions"
    else:
        max_diff, n, numel = fmt_num(f["max_diff"]), f["n"], f["numel"]
        if f.get("index") is not None:
            where = f" (at index {f['index']}: expected {f['expected']}, got {f['got']})"
        else:
            where = f" (expected {f['expected']}, got {f['got']})"
        if f.get("scalar"):
            # One number: its difference would give a hidden case's expected value away.
            pub = f"{subject} differs by {max_diff}{where}"
            hid = f"{subject} differs from the reference"
        else:
            pub = f"{subject}{verb} by up to {max_diff}{where}; {n} of {numel} values are off"
            hid = (f"{subject}{verb} from the reference by up to {max_diff} ({n} of {numel} "
                   f"values are off)")
    also = f.get("also")
    if also:
        pub, hid = f"{pub}; {also}", f"{hid}; {also}"
    return Said(pub, hid)


@says("values")
def _values(f: Mapping[str, Any]) -> Said:
    return _values_pair(f, f["what"], ": values differ")


def _non_finite(f: Mapping[str, Any]) -> str:
    if f.get("scalar"):
        return f"{f['what']} is {f['got']} where a finite number is expected"
    return (f"{f['what']} contains {f['kinds']} in {f['n']} of {f['numel']} values (first at "
            f"{f['index']}) where finite values are expected")


@says("nan")
def _nan(f: Mapping[str, Any]) -> Said:
    return same(_non_finite(f))


@says("property")
def _property(f: Mapping[str, Any]) -> Said:
    if f["case"] == "rows_sum":
        return same(f"rows of your {f['name']} sum to {fmt_num(f['value'])}, not 1")
    return same(f"your {f['name']} put up to {fmt_num(f['leak'])} of weight on blocked "
                f"positions, which must get exactly 0")


@says("answer")
def _answer(f: Mapping[str, Any]) -> Said:
    return same(f"`{f['name']}` = {f['shown']} is not right: {f['why']}")


# ------------------------------------------------------------------ gradients

_RIGHT_BUT = "your output is right, but "


@says("gradient")
def _gradient(f: Mapping[str, Any]) -> Said:
    case, fn = f["case"], f.get("function", "")
    if case == "detached":
        return same(f"no gradient flows back through {fn}: its output is not connected to the "
                    "inputs' autograd graph (.detach(), .numpy(), .item() or torch.tensor() on a "
                    "tensor cut it)")
    if case == "detached_part":
        return same(f"no gradient flows back through {f['what']}: it is not connected to the "
                    "inputs' autograd graph, as it must be (.detach(), .numpy(), .item() or "
                    "torch.tensor() on a tensor cut it)")
    if case == "failed":
        msg = f"computing gradients through {fn} failed ({f['error']})"
        if "in-place" in f["error"] or "inplace" in f["error"]:
            msg += ": an in-place operation overwrote a value autograd needs"
        return same(msg)
    if case == "none_back":
        return same(f"no gradients came back from {fn}, so the gradient check could not be "
                    "made; it counts as failed")
    if case == "key_missing":
        return same(f"no gradient came back for {f['input']}, so the gradient check could not "
                    "be made")
    if case == "unreached":
        return same(f"no gradient reaches {f['input']}: something in your code detached it")
    if case == "shape":
        return same(f"the gradient with respect to {f['input']} has the wrong shape")
    # case == "values": the gradient's values, worded as an output's, after "your output is
    # right, but"
    inner = f["inner"]
    subject = f"the gradient with respect to {f['input']}"
    if f["inner_kind"] == "nan":
        return same(_RIGHT_BUT + _non_finite({**inner, "what": subject}))
    said = _values_pair({**inner, "what": subject}, subject, " differs")
    return Said(_RIGHT_BUT + said.public, _RIGHT_BUT + (said.hidden or said.public))


# ------------------------------------------------------------------ changed inputs

_HOW_WORDS = {
    "rebound": "replaced {name} in the {container} it was given",
    "removed": "removed {keys} from its input {name}",
    "added": "added {keys} to its input {name}",
    "resized": "changed the length of its input {name} (from {before} to {after} items)",
}


@says("mutated")
def _mutated(f: Mapping[str, Any]) -> Said:
    changes = f["changes"]
    in_place = [c for c in changes if c["how"] == "in_place"]
    if len(in_place) == len(changes):
        names = ", ".join(c["name"] for c in in_place[:3])
        return same(f"your function changed its input {names} in place; work on new "
                    f"{f['noun']} instead (e.g. `x = x - m`, not `x -= m`)")
    first = next(c for c in changes if c["how"] != "in_place")
    how, owner = first["how"], first.get("owner", first["name"])
    # The changes of the same kind to the same input are said together.
    alike = [c for c in changes if c["how"] == how and c.get("owner", c["name"]) == owner]
    keys = first.get("keys") or []
    key_words = f"the key{'s' if len(keys) > 1 else ''} {_quoted(keys)}" if keys else "keys"
    said = _HOW_WORDS[how].format(name=", ".join(c["name"] for c in alike[:3]),
                                  container=first.get("container", "dict"), keys=key_words,
                                  before=first.get("before"), after=first.get("after"))
    var = first["var"]
    if first.get("container", "dict") == "list":
        fix = (f"the caller's {owner} changes too (`.append()`, `.pop()`, `+=` and item "
               f"assignment change the list itself); build a new list instead (e.g. "
               f"`{var} = {var} + [...]`, or `{var} = list({var})` first)")
    else:
        fix = (f"the caller's {owner} changes too (item assignment, `del`, `.pop()`, "
               f"`.update()` and `.clear()` change the dict itself); build a new dict instead "
               f"(e.g. `new = dict({var})`, then change `new`, or `{{k: ... for k in {var}}}`)")
    more = len(changes) - len(alike)
    also = f" ({more} more input{'s' if more > 1 else ''} changed too)" if more > 0 else ""
    return same(f"your function {said}{also}: {fix}")
