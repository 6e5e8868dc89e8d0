"""The values every floor of the engine shares, at the bottom: an assignment as data
(`assignment`), its limits (`limits`), the routines its questions may forbid (`routines`), the
results of grading (`results`) and their statuses (`status`), the written questions and their
answers (`written_spec`, `written_answer`), where the project's files are (`project`), and how
text anyone may have written is shown (`safetext`). Nothing here imports another package of the
engine."""
