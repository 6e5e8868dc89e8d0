"""The instructor's term around class grading: rosters, gradebooks, due dates, repository checks."""
