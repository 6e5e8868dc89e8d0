"""The instructor's term around a class run: who the students are, grading them all, and the
files the instructor reads and imports.

| module | what it does |
| --- | --- |
| `classlist.py` | a folder of submissions (files, repositories, a Gradescope export) into one entry per student |
| `roster.py` | the class roster, joined with the students found |
| `git_history.py` | a student's file as it was at the due time, read from their repository's git history |
| `gradebook.py` | due dates, late policy, roster columns and the gradebook file an LMS imports |
| `batch.py` | grading the whole class: parallel workers, a progress bar, a resumable cache |
| `repository_flags.py` | whether a cloned repository still carries what was shipped to it |
| `report.py` | grades.csv, grades.json, feedback/*.md and report.html (`templates/`) |
| `feedback_delivery.py` | `--deliver`: the `feedback` branch of each clone, the Feedback pull request comments, the mail-merge file |
| `branch_guard.py` | whether writing one branch of a student's repository changes that branch and nothing else |
| `benchmark.py` | `autograder benchmark`: a class's grading speed and memory, against peers in the same run |
"""
