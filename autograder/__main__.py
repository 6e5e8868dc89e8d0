from .console.ending import end
from .cli import main

end(main())
