"""Which differences between a student's function signature and the contract a call can trip
over: too few positional parameters, extra required ones, a contract parameter with a default
that is missing (a call passing it by name fails) or has no default (a call leaving it out
fails), a keyword-only parameter the contract passes by position, and parameters in another
order. A renamed required parameter is harmless (calls pass it by position) and not reported.

The worker describes each parameter as "name", "name=default", "*name", "**name",
"kw:name[=default]" or "pos:name[=default]" (`sandbox.worker.describe_param`); older
descriptions (bare names, "*args") read the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.assignment import Signature


@dataclass
class Param:
    name: str
    kind: str            # "normal", "kw", "pos", "var", "varkw"
    default: str | None  # the default as the student wrote it, or None

    def render(self) -> str:
        star = {"var": "*", "varkw": "**"}.get(self.kind, "")
        return star + self.name + (f"={self.default}" if self.default is not None else "")


def parse_param(text: str) -> Param:
    if text.startswith("**"):
        return Param(text[2:], "varkw", None)
    if text.startswith("*"):
        return Param(text[1:], "var", None)
    kind = "normal"
    for prefix, k in (("kw:", "kw"), ("pos:", "pos")):
        if text.startswith(prefix):
            kind, text = k, text[len(prefix):]
    name, eq, default = text.partition("=")
    return Param(name, kind, default if eq else None)


def render_params(params: list[Param]) -> str:
    """The student's parameter list as Python would print it (with `*` and `/` markers)."""
    parts: list[str] = []
    star_done = any(p.kind == "var" for p in params)
    for i, p in enumerate(params):
        if p.kind == "kw" and not star_done:
            parts.append("*")
            star_done = True
        parts.append(p.render())
        if p.kind == "pos" and (i + 1 == len(params) or params[i + 1].kind != "pos"):
            parts.append("/")
    return ", ".join(parts)


def call_problems(contract: Signature, described: list[str]) -> list[str]:
    """What a call made by the contract would trip over in the student's signature."""
    params = [parse_param(t) for t in described]
    positional = [p for p in params if p.kind in ("normal", "pos")]
    by_name = {p.name: p for p in params if p.kind in ("normal", "kw")}
    var_args = any(p.kind == "var" for p in params)
    var_kw = any(p.kind == "varkw" for p in params)
    problems: list[str] = []
    n = len(contract.params)
    if len(positional) < n and not var_args:
        short = contract.params[len(positional):]
        kw_only = [p for p in short if p in by_name and by_name[p].kind == "kw"]
        if kw_only:
            problems.append(f"{', '.join(f'`{p}`' for p in kw_only)} "
                            f"{'is' if len(kw_only) == 1 else 'are'} keyword-only in yours, so "
                            "a call that passes it by position fails")
        if len(kw_only) < len(short):
            problems.append(f"yours takes {len(positional)} positional argument(s), the "
                            f"contract {n}: a call with all {n} fails")
    for p in positional[n:]:
        if p.default is None:
            problems.append(f"your extra parameter `{p.name}` has no default, so a call that "
                            "follows the contract fails")
    for i, name in enumerate(contract.params):
        if name not in contract.defaults:
            continue   # required: passed by position, its name does not matter
        mine = by_name.get(name)
        if mine is None:
            if not var_kw:
                problems.append(f"yours has no parameter `{name}`, so a call that passes "
                                f"`{name}=` by name fails")
            continue
        if mine.default is None:
            problems.append(f"your `{name}` has no default, so a call that leaves it out "
                            f"fails (the contract's default is {contract.defaults[name]})")
        j = positional.index(mine) if mine in positional else None
        if j is not None and j != i:
            problems.append(f"`{name}` is parameter {j + 1} in yours but {i + 1} in the "
                            "contract, so a call that passes it by position mixes them up")
    return problems


def signature_note(contract: Signature, described: list[str]) -> str | None:
    """A note for the student when a call could trip over their signature, else None."""
    problems = call_problems(contract, described)
    if not problems:
        return None
    params = render_params([parse_param(t) for t in described])
    return (f"note: your `{contract.name}` takes ({params}); the contract is "
            f"{contract.render()}: " + "; ".join(problems))
