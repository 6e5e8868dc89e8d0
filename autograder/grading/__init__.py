"""Grading one submission: every question file's cases against the student's functions
(`questions`), the notes across questions (`runner`), the sandboxed run and the student's own
check in-process (`grade`), and what the source scan's findings cost (`integrity`)."""
