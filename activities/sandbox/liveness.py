"""A command's processes live only while its worker does: not past a kill, not through a stop.

A worker killed (SIGKILL, a crash) takes its sandboxes along by itself: every process a
command starts lives in the sandbox's PID namespace, and the namespace's init dies with the
worker (``--die-with-parent``), which kills everything in it — double-forked, ``setsid``,
``nohup`` and disowned children alike. A worker *stopped* (SIGSTOP, a frozen VM, a debugger)
is another matter: its children are not stopped with it, and a command that keeps running
while the server hands its attempt to another worker would do its side effect twice.

So each command gets a watchdog between the worker and the sandbox (``watchdog.c``, compiled
once per worker by :mod:`.native`, or its Python form ``watchdog.py`` where no compiler is): it runs the
command and reads a pipe the worker writes a byte to every ``PULSE`` seconds from a thread of
its own — while the event loop that sends the attempt's heartbeats still runs (a loop stuck
for ``stall`` seconds sends no heartbeats, so the server will give the attempt away: the
thread stops too). End of file (the worker died) or silence for ``quiet`` seconds (the worker
is stopped, or its loop stuck) and it kills the command — its sandbox's namespace with it —
and exits with :data:`LOST_EXIT`. ``quiet`` and ``stall`` are each a quarter of the heartbeat
timeout (``quiet`` at most ``QUIET_MAX``; the server's last heartbeat is at most a quarter of
it old, :mod:`activities.beat`), so the stale command is gone before the server gives the
attempt to another worker. The watchdog also writes a command's end durably before it
reports it (see its module): a worker lost just after its command ended loses nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import activity

from activities.sandbox import native, watchdog

PULSE = 0.25  # seconds between the worker's bytes
QUIET_MIN = 1.5  # seconds: never less (a loaded machine may not run the pulse thread on time)
QUIET_MAX = 5.0
QUIET_DEFAULT = 5.0  # outside an activity (no heartbeat timeout to go by)
LOST_EXIT = watchdog.LOST_EXIT  # the watchdog's status when it killed the command


@dataclass
class _Loop:
    """When an event loop last ran its ticker (a loop that does not run sends no heartbeats)."""

    seen: float = field(default_factory=time.monotonic)
    users: int = 0
    task: asyncio.Task[None] | None = None


class Pulse:
    """The worker's side: one thread writes a byte to every open pipe while the event loop the
    pipe was opened from still runs.

    The bytes come from a thread, so a synchronous call that holds the loop for a moment does
    not kill commands; but they stop once the loop has not run for the pipe's ``stall``
    seconds: the heartbeats come from that loop, so the server gives the attempt away when it
    stalls, and the command must be gone before (a stalled loop, like a stopped worker)."""

    def __init__(self) -> None:
        self._writers: dict[int, tuple[_Loop, float]] = {}
        self._loops: dict[asyncio.AbstractEventLoop, _Loop] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def pipe(self, stall: float | None = None) -> Iterator[int]:
        """A pipe fed while this thread's event loop runs (at most ``stall`` seconds stuck,
        default :func:`stall_after`): yields its read end, which the caller passes to the
        watchdog and then closes (once); the write end is fed until the block ends."""
        loop = self._ticking(asyncio.get_running_loop())
        read, write = os.pipe()  # both close-on-exec: only the watchdog gets the read end
        os.set_blocking(write, False)
        with self._lock:
            self._writers[write] = (loop, stall_after() if stall is None else stall)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="xsky-pulse", daemon=True)
                self._thread.start()
        try:
            yield read
        finally:
            with self._lock:
                del self._writers[write]
            os.close(write)
            self._done(loop)

    def _ticking(self, running: asyncio.AbstractEventLoop) -> _Loop:
        loop = self._loops.get(running)
        if loop is None or loop.task is None or loop.task.done():
            loop = self._loops[running] = _Loop()
            loop.task = running.create_task(self._tick(loop))
        loop.users += 1
        return loop

    def _done(self, loop: _Loop) -> None:
        loop.users -= 1
        if loop.users == 0 and loop.task is not None:
            loop.task.cancel()
            self._loops = {k: v for k, v in self._loops.items() if v is not loop}

    @staticmethod
    async def _tick(loop: _Loop) -> None:
        while True:
            loop.seen = time.monotonic()
            await asyncio.sleep(PULSE)

    def _run(self) -> None:
        while True:
            now = time.monotonic()
            with self._lock:
                for fd, (loop, stall) in self._writers.items():
                    if now - loop.seen > stall:
                        continue  # that loop is stuck: its commands' watchdogs hear nothing
                    with contextlib.suppress(OSError):  # full (the watchdog is behind) or closed
                        os.write(fd, b".")
            time.sleep(PULSE)


PULSE_THREAD = Pulse()


def quiet_after() -> float:
    """Seconds of silence after which a command's watchdog kills it: a quarter of the
    activity's heartbeat timeout, between ``QUIET_MIN`` and ``QUIET_MAX``."""
    try:
        timeout = activity.info().heartbeat_timeout
    except RuntimeError:  # not in an activity
        return QUIET_DEFAULT
    if not timeout:
        return QUIET_DEFAULT
    return min(QUIET_MAX, max(QUIET_MIN, timeout.total_seconds() / 4))


def stall_after() -> float:
    """Seconds the event loop may be stuck before the pulse stops: the watchdog's quiet, so
    the command is gone two quiets after the loop stalled — half the heartbeat timeout, and
    at most ¾ of it for the shortest — before the server gives the attempt away."""
    return quiet_after()


# The watchdog's spare place for the command's record (watchdog.c, watchdog.py read it, and
# take it out of the command's environment).
SPARE_ENV = "XSKY_RECORD_SPARE"


def watched(
    argv: list[str], fd: int, quiet: float, record: Path | None = None, limit: int = 0
) -> list[str]:
    """``argv`` under the watchdog (compiled, else the worker's own Python: :mod:`.native`),
    fed by pipe ``fd``; with ``record``, the command's end is written there before the
    watchdog exits (at most ``limit`` bytes of each output stream)."""
    return [
        *native.watchdog_command(),
        str(fd),
        f"{quiet:g}",
        str(record) if record is not None else "-",
        str(limit or 1024 * 1024),
        *argv,
    ]


def own_namespace(argv: list[str]) -> list[str]:
    """``argv`` in a PID namespace of its own without the sandbox (``"sandbox": "off"``), so
    that killing it (the watchdog, or the worker's death) kills every process it started:
    util-linux ``unshare``, for a root worker; anyone else runs it as it is (its process
    group is killed when its attempt ends, but a ``setsid`` child can outlive the worker)."""
    exe = shutil.which("unshare")
    if exe is None or os.geteuid() != 0:
        return argv
    return [exe, "--pid", "--fork", "--kill-child", "--", *argv]


def stale_wait() -> float:
    """Seconds a command killed by its watchdog waits for the server to reject its attempt
    (its next heartbeat is refused, and the attempt is cancelled) before failing it."""
    try:
        timeout = activity.info().heartbeat_timeout
    except RuntimeError:
        return 0.0
    return timeout.total_seconds() + 5 if timeout else 0.0
