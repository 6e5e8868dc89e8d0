"""What every command line of the engine shares (`arguments`): the `-a` argument, a parser
whose errors are one line, and the wrapper that turns a user's mistake into one line on stderr
(`autograder ...`, and each platform's `python -m autograder.platforms.X`)."""
