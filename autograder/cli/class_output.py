"""What a class run says on the terminal, from the outputs of its stages
(`course/class_run.py`), and the exit status that says whether it needs the instructor."""
from __future__ import annotations

import sys

from ..model.safetext import shown_path, visible


def print_run(run, args) -> int:
    """What a class run says on the terminal, from the stages' outputs; its exit status."""
    from ..course import needs_instructor
    from ..course.batch import sandbox_description
    from ..feedback.terminal import submission_text, summary_table

    for line in run.overrides:
        print(f"autograder: {visible(line)}", file=sys.stderr)
    term, results = run.term, run.results
    qids = [q.id for q in run.assignment.questions if not args.question or q.id in args.question]
    print(summary_table(results, qids, [term.standing(g) for g in run.graded],
                        term.late_policy_text()))
    cached = sum(g.cached for g in run.graded)
    level = sandbox_description(run.graded)
    if level:
        print(f"\nsandbox: {level}")
    if cached:
        print(f"{cached} of {sum(g.student.file is not None for g in run.graded)} submissions "
              "unchanged since the last run (cached)")
    if args.feedback:
        for r in results:
            print()
            print(submission_text(r))
    if run.reports:
        files = run.reports
        print(f"wrote {shown_path(files['csv'])}, {shown_path(files['json'])}, "
              f"{shown_path(files['html'])} and {len(results)} feedback files (.md, and .html "
              f"for a browser) in {shown_path(files['feedback'])}")
    if run.gradebook is not None:
        print(f"wrote {shown_path(run.gradebook)} (for the LMS gradebook import)")
    if run.delivery is not None:
        print_delivery(run.delivery)
    for line in term.summary():
        print(line)
    for line in run.hand_grades:
        print(line)
    if run.json is not None:
        print(f"wrote {shown_path(run.json)}")
    if run.missing:
        print(f"autograder: not found: {', '.join(shown_path(m) for m in run.missing)} (graded "
              "0, with a row saying so)", file=sys.stderr)
        return 2
    attention = needs_instructor.summary(results, [more.get("status")
                                                   for more in run.term_columns])
    if attention:
        print(f"autograder: {attention}", file=sys.stderr)
        return needs_instructor.NEEDS_INSTRUCTOR
    return 0


def print_delivery(done: dict) -> None:
    """`--deliver`: feedback commits, Feedback-PR comments, the mail-merge file."""
    from ..course.feedback_delivery import BRANCH

    commits = done["commits"]
    made = [d for d in commits if d.status == "committed"]
    same = [d for d in commits if d.status == "unchanged"]
    print(f"feedback branch `{BRANCH}`: {len(made)} commit(s) made, {len(same)} unchanged, in "
          f"{len(commits)} repositories (push them: see docs/instructors.md)")
    for d in commits:
        if d.status == "skipped":
            print(f"  {visible(d.student)}: not written: {visible(d.detail)}")
    print(f"wrote {shown_path(done['comments'])} (one Feedback pull request comment per "
          "student)")
    if done["mail"] is not None:
        print(f"wrote {shown_path(done['mail'])} (email,subject,body_file)")
        if done["no_email"]:
            print(f"  no email in the roster for: "
                  + ", ".join(visible(n) for n in done["no_email"][:20]))
