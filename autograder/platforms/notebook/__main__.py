"""`python -m autograder.platforms.notebook`: writes the student notebook (`build.main`)."""
import sys

from .build import main

sys.exit(main())
