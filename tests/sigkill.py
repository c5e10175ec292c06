"""A worker SIGKILLed a moment after its command's last act, for the exactly-once tests (unit
and integration): the moment is watched from a thread, not an event loop, whose turns take
longer than the delays tried."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path


def kill_after(path: Path, proc: subprocess.Popen[bytes], delay: float) -> threading.Thread:
    """A thread that SIGKILLs ``proc`` ``delay`` seconds after ``path`` appears (watched every
    0.2 ms); it gives up after 120 s or once ``proc`` has ended."""

    def watch() -> None:
        deadline = time.monotonic() + 120
        while not path.exists():
            if time.monotonic() > deadline or proc.poll() is not None:
                return
            time.sleep(0.0002)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread
