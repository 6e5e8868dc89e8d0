"""What `autograder mutants` prints and writes (`mutants.Analysis`): the summary, a line per
function of the reference, the mutants grouped by what the author should do about them, the
catalogue variant that would name an unnamed one, and the JSON of every result; and the
command itself (`command`), which runs the analysis and prints all that."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from ..diagnose.catalogue import catalogue_path
from ..model.assignment import Assignment
from ..model.safetext import shown_path
from .mutants import (EQUIVALENT, HIDDEN, NOT_CAUGHT, OUTCOMES, PUBLIC, STOPPED, Analysis,
                      MutantResult, analyse, require_reference)


def _where(analysis: Analysis, r: MutantResult) -> str:
    return f"{shown_path(analysis.assignment.reference_path)}:{r.mutant.line} " \
           f"{r.mutant.function}: {r.mutant.describe()}"


def _failing_text(r: MutantResult, verbose: bool = False) -> str:
    """The cases a mutant fails, per question: counted (with the kinds of failure), or with
    `verbose` named one by one."""
    by_question: dict[str, list[dict]] = {}
    for c in r.failing:
        by_question.setdefault(c["question"], []).append(c)
    parts = []
    for q, cases in by_question.items():
        if verbose:
            parts.append(f"{q}: " + ", ".join(
                f"{c['case']!r}{' [hidden]' if c['hidden'] else ''} ({c['kind']})"
                for c in cases))
            continue
        public = sum(not c["hidden"] for c in cases)
        kinds = ", ".join(sorted({c["kind"] for c in cases}))
        parts.append(f"{q} {public} public + {len(cases) - public} hidden ({kinds})")
    return "; ".join(parts)


def variant_code(analysis: Analysis, r: MutantResult) -> str:
    """The catalogue entry that would name the mutant: a variant computing it, with the
    reference's other functions called through `ref`, as `mistakes.py` writes them."""
    tree = ast.parse(Path(analysis.assignment.reference_path).read_text())
    top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    # The reference's import of each module name, as it is written there.
    imports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                imports[(a.asname or a.name).split(".")[0]] = ast.unparse(ast.Import([a]))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                imports[a.asname or a.name] = ast.unparse(
                    ast.ImportFrom(node.module, [a], node.level))
    function = r.mutant.changed

    class ThroughRef(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in top and isinstance(node.ctx, ast.Load):
                return ast.copy_location(ast.Attribute(ast.Name("ref", ast.Load()), node.id,
                                                       ast.Load()), node)
            return node

    variant = ThroughRef().visit(ast.parse(ast.unparse(function)).body[0])
    body = variant.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                             ast.Constant):
        body = body[1:] or [ast.Pass()]
    variant.body = body
    variant.name = "_"
    variant.args.posonlyargs = []
    variant.args.args = [ast.arg("ref")] + [ast.arg(a.arg) for a in
                                            function.args.posonlyargs + function.args.args]
    variant.returns = None
    for a in variant.args.kwonlyargs:
        a.annotation = None
    mistake_id = r.mutant.id.replace(":", "_")
    variant.decorator_list = [ast.parse(
        f"catalogue.variant({mistake_id!r}, {r.mutant.function!r}, name='...', hint='...')",
        mode="eval").body]
    used = sorted({n.id for n in ast.walk(variant) if isinstance(n, ast.Name)} & set(imports))
    code = ast.unparse(ast.fix_missing_locations(variant))
    needs = "".join(f"{imports[name]}   # at the top of mistakes.py\n" for name in used)
    return needs + code


def summary(analysis: Analysis) -> str:
    f = analysis.figures()
    a = analysis.assignment
    return "\n".join([
        f"{shown_path(a.root)}: {f['mutants']} mutants of {shown_path(a.reference_path)}, "
        f"graded on {analysis.public_cases} public and {analysis.hidden_cases} hidden cases "
        f"in {analysis.seconds:.0f} s ({analysis.jobs} jobs)",
        f"  caught by public cases:        {f[PUBLIC]}",
        f"  caught only by hidden cases:   {f[HIDDEN]}",
        f"  not caught by any case:        {f[NOT_CAUGHT]}",
        f"  equivalent to the reference:   {f[EQUIVALENT]}",
        f"  stopped by a limit:            {f[STOPPED]}",
        f"  named by the catalogue:        {f['named']} of {f['caught']} caught"
        + ("" if catalogue_path(a) else " (the assignment has no catalogue)"),
    ])


def by_function(analysis: Analysis) -> str:
    """One line per function of the reference: where its mutants landed."""
    names = list(dict.fromkeys(r.mutant.function for r in analysis.results))
    width = max([len(n) for n in names] + [8])
    lines = [f"  {'function':{width}}  mutants  public  hidden only  not caught  equivalent  "
             "stopped  named"]
    for name in names:
        rs = [r for r in analysis.results if r.mutant.function == name]
        count = {o: sum(r.outcome == o for r in rs) for o in OUTCOMES}
        named = sum(bool(r.named) for r in rs if r.caught)
        lines.append(f"  {name:{width}}  {len(rs):7}  {count[PUBLIC]:6}  {count[HIDDEN]:11}  "
                     f"{count[NOT_CAUGHT]:10}  {count[EQUIVALENT]:10}  {count[STOPPED]:7}  "
                     f"{named:5}")
    return "\n".join(lines)


def report(analysis: Analysis, verbose: bool = False) -> str:
    """The summary and a line per function, then each mutant an author should look at,
    grouped by what to do."""
    lines = [summary(analysis), "", "by function of the reference:", by_function(analysis)]
    # (title, members, the line under each, whether to print the variant that would name it)
    groups = [
        ("not caught by any case: a case is missing (add one whose input shows the change)",
         [r for r in analysis.results if r.outcome == NOT_CAUGHT],
         lambda r: f"passes every case; on fresh inputs shaped like a check of "
                   f"`{r.differs['function']}` in question '{r.differs['question']}' "
                   f"({r.differs['inputs']}), {r.differs['how']}", False),
        ("caught only by hidden cases: a student's check passes them",
         [r for r in analysis.results if r.outcome == HIDDEN],
         lambda r: f"fails {_failing_text(r, verbose)}"
                   + (f"; named {', '.join(r.named)}" if r.named else ""), False),
        ("caught, but the catalogue names no mistake: a variant computing the mutant would "
         "name it on the checks it fails" + ("" if verbose else " (-v prints the variant)"),
         [r for r in analysis.caught if not r.named],
         lambda r: f"fails {_failing_text(r, verbose)}" if r.failing
         else f"does not load: {r.detail}", verbose),
        ("stopped by a limit or a crash of its worker (grading stops such code too)",
         [r for r in analysis.results if r.outcome == STOPPED], lambda r: r.detail, False),
    ]
    if verbose:
        groups.append(("equivalent to the reference (they pass every case and agree with it "
                       "on fresh inputs)",
                       [r for r in analysis.results if r.outcome == EQUIVALENT],
                       lambda r: "", False))
        groups.append(("caught and named",
                       [r for r in analysis.caught if r.named],
                       lambda r: f"named {', '.join(r.named)}", False))
    for title, members, detail, variants in groups:
        if not members:
            continue
        lines += ["", f"{title}:"]
        for r in members:
            lines.append(f"  {_where(analysis, r)}")
            text = detail(r)
            if text:
                lines.append(f"      {text}")
            if variants and r.failing:
                lines += [f"      {line}" for line in variant_code(analysis, r).splitlines()]
    return "\n".join(lines)


def as_json(analysis: Analysis) -> dict:
    return {
        "assignment": analysis.assignment.name,
        "reference": shown_path(analysis.assignment.reference_path),
        "public_cases": analysis.public_cases, "hidden_cases": analysis.hidden_cases,
        "jobs": analysis.jobs, "seconds": round(analysis.seconds, 1),
        "figures": analysis.figures(),
        "mutants": [{"id": r.mutant.id, "function": r.mutant.function, "line": r.mutant.line,
                     "operator": r.mutant.operator, "before": r.mutant.before,
                     "after": r.mutant.after, "outcome": r.outcome, "named": r.named,
                     "failing": r.failing, "differs": r.differs, "detail": r.detail,
                     "seconds": r.seconds}
                    for r in analysis.results],
    }


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():
        print(f"\rmutants graded: {done}/{total}", end="" if done < total else "\n",
              file=sys.stderr, flush=True)


def command(name_or_path: str, *, jobs: int = 0, seconds: float | None = None,
            functions: list[str] | None = None, json_path: str | None = None,
            verbose: bool = False) -> int:
    """`autograder mutants`: print the report (and write JSON); 1 when some mutant that
    differs from the reference is caught by no case, else 0."""
    from ..model.assignment import load_assignment

    assignment = load_assignment(name_or_path)
    require_reference(assignment)
    unknown = sorted(set(functions or ()) - set(_functions_of(assignment)))
    if unknown:
        raise ValueError(f"the reference defines no function {', '.join(unknown)}")
    analysis = analyse(assignment, jobs=jobs, seconds=seconds,
                       functions=set(functions) if functions else None, progress=_progress)
    print(report(analysis, verbose=verbose))
    if json_path:
        Path(json_path).write_text(json.dumps(as_json(analysis), indent=1) + "\n")
    return 1 if analysis.count(NOT_CAUGHT) else 0


def _functions_of(assignment: Assignment) -> list[str]:
    tree = ast.parse(Path(assignment.reference_path).read_text())
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
