"""How a check runs: its context (`context.py`), handed to `Question.check` as an argument."""
