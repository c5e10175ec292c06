"""A command's processes live only while its worker does: not past a kill, not through a stop.

A worker killed (SIGKILL, a crash) takes its sandboxes along by itself: every process a
command starts lives in the sandbox's PID namespace, and the namespace's init dies with the
worker (``--die-with-parent``), which kills everything in it — double-forked, ``setsid``,
``nohup`` and disowned children alike. A worker *stopped* (SIGSTOP, a frozen VM, a debugger)
is another matter: its children are not stopped with it, and a command that keeps running
while the server hands its attempt to another worker would do its side effect twice.

So each command gets a watchdog between the worker and the sandbox (:data:`WATCHDOG`, a
few lines of the worker's own Python, stdlib only): it runs the command and reads a pipe the
worker writes a byte to every ``PULSE`` seconds from a thread of its own (not the event
loop, which a long synchronous call may hold). End of file (the worker died) or silence for
``quiet`` seconds (the worker is stopped) and it kills the command — its sandbox's namespace
with it — and exits with :data:`LOST_EXIT`. ``quiet`` is under the time the server takes to
give the attempt to another worker (a quarter of the heartbeat timeout, at most
``QUIET_MAX``; the server's last heartbeat is at most a quarter of it old,
:mod:`activities.beat`), so the stale command is gone before its replacement starts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator

from temporalio import activity

PULSE = 0.25  # seconds between the worker's bytes
QUIET_MIN = 1.5  # seconds: never less (a loaded machine may not run the pulse thread on time)
QUIET_MAX = 5.0
QUIET_DEFAULT = 5.0  # outside an activity (no heartbeat timeout to go by)
LOST_EXIT = 199  # the watchdog's status when it killed the command

# argv: the pipe's fd, quiet seconds, the command. Exits with the command's status (or its
# signal), or LOST_EXIT when it killed the command.
WATCHDOG = r"""
import os, select, signal, sys, time
fd, quiet, argv = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
child = os.fork()
if child == 0:
    os.close(fd)
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
try:
    watch = [fd, os.pidfd_open(child)]
except OSError:
    watch = [fd]
last, lost, status = time.monotonic(), None, 0
while True:
    ready = select.select(watch, [], [], 0.25)[0]
    pid, status = os.waitpid(child, os.WNOHANG)
    if pid:
        break
    if fd in ready:
        if not os.read(fd, 4096):
            lost = "the worker died"
            break
        last = time.monotonic()
    if time.monotonic() - last > quiet:
        lost = f"the worker stopped answering for {quiet:g}s"
        break
if lost is not None:
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    os.write(2, f"xsky: {lost}: the command was killed\n".encode())
    os._exit(LOST_EXIT)
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
os._exit(os.waitstatus_to_exitcode(status))
""".replace("LOST_EXIT", str(LOST_EXIT))


class Pulse:
    """The worker's side: one thread writes a byte to every open command's pipe."""

    def __init__(self) -> None:
        self._writers: set[int] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def pipe(self) -> Iterator[int]:
        """A pipe for one command: yields its read end, which the caller passes to the
        watchdog and then closes (once); the write end is fed until the block ends."""
        read, write = os.pipe()  # both close-on-exec: only the watchdog gets the read end
        os.set_blocking(write, False)
        with self._lock:
            self._writers.add(write)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="xsky-pulse", daemon=True)
                self._thread.start()
        try:
            yield read
        finally:
            with self._lock:
                self._writers.discard(write)
            os.close(write)

    def _run(self) -> None:
        while True:
            with self._lock:
                for fd in self._writers:
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


def watched(argv: list[str], fd: int, quiet: float) -> list[str]:
    """``argv`` under the watchdog (the worker's own Python, isolated), fed by pipe ``fd``."""
    return [sys.executable, "-I", "-S", "-c", WATCHDOG, str(fd), f"{quiet:g}", *argv]


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
