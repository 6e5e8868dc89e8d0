"""`python -m autograder.platforms.gradescope`: runs `run.main` (the command deployed scripts call)."""
from ...console.ending import end
from .run import main

end(main())
