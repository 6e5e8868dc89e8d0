"""`python -m autograder.platforms.classroom50`: runs `run.main` (the command deployed scripts call)."""
import sys

from .run import main

sys.exit(main())
