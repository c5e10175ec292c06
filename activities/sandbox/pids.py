"""Whether a process id still names a live process on this machine."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True while ``pid`` exists (another user's process included: signal 0 is only refused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
