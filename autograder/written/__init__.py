"""Written questions: answers in the student's own words, collected with the grade and graded
by hand.

`spec` reads an assignment's `written.toml` (prompts, points, rubrics) and the hidden model
answers; `collect` takes each answer's text from a submission without trusting it beyond being
text; `answer` is one answer's place in a result (pending until a grader decides); `store` keeps
answers, grades, the rubric and the audit log in `review.sqlite` beside a class run's outputs;
`apply` puts the stored grades into the results every output is written from; `groups` finds
identical and near-identical answers; `server` is the graders' page (`autograder review`);
`sheet` the CSV export and import; `outputs` rewrites a class run's files after grades change.
"""
