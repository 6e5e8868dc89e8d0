"""`python -m autograder.platforms.actions`: runs `run.main` (the command deployed scripts call)."""
import sys

from .run import main

sys.exit(main())
