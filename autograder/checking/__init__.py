"""Checking one case: the inputs a case makes (`inputs`), the reference's expected outcome
(`expected`), the comparisons (`checks`, and `outputs` for outputs of any structure, whose
places `paths` names), the problems they find as values (`problems`) and their words
(`words`), knowledge-check answers (`answers`), and `Question.check` (`question`), which calls
the student's function in the context it is handed (`context`) and keeps the check as a
`record` for naming mistakes. Question files reach all of it through `autograder.cases`."""
