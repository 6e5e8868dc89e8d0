"""How every command line of the engine ends: as an interpreter's exit would, but without its
teardown of torch's modules, which costs about 0.4 s of CPU for nothing once the command is done
(`python -c "import torch"` takes 1.2 s, 0.85 s when it ends this way)."""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def end(status: int | None) -> NoReturn:
    """Exit with `status` (a command's return value). What an exit does for others runs first,
    in the interpreter's order: threads that are not daemons are joined (a pool's management
    thread, with what `threading` runs at its exit), the `atexit` functions run, and output is
    flushed. Only the freeing of modules, which nobody reads, is skipped."""
    if "torch" not in sys.modules:
        sys.exit(status)
    shutdown = getattr(threading, "_shutdown", None)   # what the interpreter itself calls
    if shutdown is None:
        sys.exit(status)
    shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass    # a closed pipe or stream: nothing more can reach it
    os._exit(status if isinstance(status, int) else 0 if status is None else 1)
