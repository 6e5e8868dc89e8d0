"""`python -m autograder.platforms.notebook`: writes the student notebook (`build.main`)."""
from ...console.ending import end
from .build import main

end(main())
