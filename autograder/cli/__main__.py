from ..console.ending import end
from . import main

end(main())
