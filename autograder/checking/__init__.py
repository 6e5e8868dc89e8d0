"""Checking one case: the inputs a case makes (`inputs`), the reference's expected outcome
(`expected`), the comparisons and the problems they find (`checks`), knowledge-check answers
(`answers`), and `Question.check`, which calls the student's function and judges its outcome
(`question`). Question files reach all of it through `autograder.cases`."""
