"""A command's watchdog: runs between the worker and the command (one per command), stdlib only.

Its compiled form, ``watchdog.c``, is the same program and the one used wherever the worker's
machine has a C compiler (:mod:`activities.sandbox.native`): this one costs a Python start
(~20 ms) per command.

Started as ``python -I -S watchdog.py FD QUIET RECORD LIMIT COMMAND...`` (see
:func:`activities.sandbox.liveness.watched`). It runs the command with pipes of its own and
passes its output on to the worker, and it reads pipe ``FD``, which the worker's pulse thread
writes a byte to every quarter second while the worker's event loop answers:

- end of file (the worker died; a command that ends by itself within :data:`DYING_GRACE`
  is recorded instead) or ``QUIET`` seconds of silence (the worker is stopped, its
  event loop is stuck, its machine is frozen): the command is killed — its sandbox's
  namespace with it — and the watchdog exits with :data:`LOST_EXIT`, so nothing a lost worker
  started runs beside the attempt the server gives another worker;
- the command ended by itself: its status and the head of its output (at most ``LIMIT`` bytes
  of each stream) are written durably to ``RECORD`` (unless it is ``-``) *before* the watchdog
  exits. The worker learns of the end only from the watchdog's exit, so whenever a command
  ended, its record is on disk: a worker killed a millisecond after its command finished
  leaves the record behind, and the next attempt returns it instead of running the command
  again (activities/tools/shell.py).

The watchdog never blocks on the worker: its output goes on through non-blocking writes with
a bounded buffer (a stopped worker reads nothing; the command then waits on its own output,
and the watchdog still watches the pulse).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import select
import signal
import sys
import time

LOST_EXIT = 199  # the watchdog's status when it killed the command
# When the worker dies, a command that is already ending (its last act done, its sandbox going
# away) is given this long to end by itself and have its end recorded: on a busy machine a
# sandbox takes tens of milliseconds to go, and a command that ended must not run again.
DYING_GRACE = 0.5
TICK = 0.25  # seconds between looks at the pulse when nothing else happens
BUFFERED = 1024 * 1024  # bytes of output held for a worker that does not read, per stream
DRAIN_SECONDS = 0.5  # after the command's exit: how long its last output may take to arrive


class Stream:
    """One of the command's output streams: read from the command, passed on to the worker,
    its head kept for the record."""

    def __init__(self, source: int, target: int, limit: int):
        self.source: int | None = source
        self.target = target
        self.limit = limit
        self.head = bytearray()
        self.dropped = 0
        self.pending = bytearray()

    def read(self) -> bool:
        """Read what is there; False at end of file."""
        assert self.source is not None
        try:
            data = os.read(self.source, 65536)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            os.close(self.source)
            self.source = None
            return False
        room = self.limit - len(self.head)
        if room > 0:
            self.head += data[:room]
        self.dropped += max(0, len(data) - max(room, 0))
        self.pending += data
        return True

    def flush(self) -> None:
        """Pass on what the worker can take now (nothing is lost: the rest waits)."""
        while self.pending:
            try:
                n = os.write(self.target, self.pending)
            except BlockingIOError:
                return
            except OSError as e:  # the worker is gone: nobody reads any more
                if e.errno in (errno.EPIPE, errno.EBADF):
                    self.pending.clear()
                return
            del self.pending[:n]

    @property
    def readable(self) -> bool:
        return self.source is not None and len(self.pending) < BUFFERED


def write_record(path: str, status: int, out: Stream, err: Stream, seconds: float) -> bool:
    """The command's end, durably: a temporary file synced, then renamed (a reader sees the
    whole record or none); whether it was written (a full or read-only disk leaves no record
    there: the caller tries the spare place)."""
    record = {  # the heads as bytes (base64), as the compiled form writes them (watchdog.c)
        "status": status,
        "stdoutB64": base64.b64encode(out.head).decode("ascii"),
        "stdoutDropped": out.dropped,
        "stderrB64": base64.b64encode(err.head).decode("ascii"),
        "stderrDropped": err.dropped,
        "seconds": round(seconds, 3),
    }
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps(record).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return os.path.isfile(path)  # (written, and only its folder's sync failed)
    return True


def start(argv: list[str], pulse: int, limit: int) -> tuple[int, Stream, Stream, int]:
    """Fork the command with pipes of its own; (pid, stdout, stderr, its pidfd or -1)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(pulse)
        os.close(out_r)
        os.close(err_r)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # Python ignores it; the command must not
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    os.close(out_w)
    os.close(err_w)
    for fd in (out_r, err_r, 1, 2):
        os.set_blocking(fd, False)
    try:
        pidfd = os.pidfd_open(child)
    except (OSError, AttributeError):
        pidfd = -1
    return child, Stream(out_r, 1, limit), Stream(err_r, 2, limit), pidfd


def _ended_within(child: int, pidfd: int, seconds: float) -> tuple[int, int]:
    """``os.waitpid``'s answer once ``child`` ends by itself within ``seconds``, else (0, 0)."""
    deadline = time.monotonic() + seconds
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        left = deadline - time.monotonic()
        if pid or left <= 0:
            return pid, status
        if pidfd >= 0:
            select.select([pidfd], [], [], left)
        else:
            time.sleep(min(left, 0.01))


def main(args: list[str]) -> None:
    pulse, quiet, record, limit = int(args[0]), float(args[1]), args[2], int(args[3])
    # Where the record goes when ``record`` cannot take it (the store's disk full or read-only):
    # the worker's own disk. Not the command's business: taken out of its environment.
    spare = os.environ.pop("XSKY_RECORD_SPARE", "")
    argv = args[4:]
    began = time.monotonic()
    child, out, err, pidfd = start(argv, pulse, limit)
    streams = (out, err)
    last, lost, status = time.monotonic(), None, 0
    while True:
        watch = [pulse] + ([pidfd] if pidfd >= 0 else [])
        watch += [s.source for s in streams if s.readable and s.source is not None]
        writes = [s.target for s in streams if s.pending]
        ready, writable, _ = select.select(watch, writes, [], TICK)
        for s in streams:
            if s.source is not None and s.source in ready:
                s.read()
            if s.target in writable:
                s.flush()
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break  # ended by itself: this wins over a pulse that ended at the same moment
        if pulse in ready:
            try:
                alive = bool(os.read(pulse, 4096))
            except BlockingIOError:
                alive = True
            if not alive:
                lost = "the worker died"
                break
            last = time.monotonic()
        if time.monotonic() - last > quiet:
            lost = f"the worker stopped answering for {quiet:g}s"
            break
    if lost == "the worker died":
        pid, status = _ended_within(child, pidfd, DYING_GRACE)
        if pid:
            lost = None
    if lost is not None:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        for s in streams:
            s.flush()
        os.write(2, f"xsky: {lost}: the command was killed\n".encode())
        os._exit(LOST_EXIT)
    # Its last output: what is in the pipes now, and what its namespace's last processes write
    # while they go (a sandbox's processes die with its init; a stray one is not waited for).
    deadline = time.monotonic() + DRAIN_SECONDS
    while any(s.source is not None for s in streams) and time.monotonic() < deadline:
        sources = [s.source for s in streams if s.source is not None]
        ready = select.select(sources, [], [], 0.05)[0]
        for s in streams:
            if s.source is not None and s.source in ready:
                s.read()
    if record != "-":
        code, seconds = os.waitstatus_to_exitcode(status), time.monotonic() - began
        if not write_record(record, code, out, err, seconds) and spare:
            write_record(spare, code, out, err, seconds)
    for s in streams:
        os.set_blocking(s.target, True)
        s.flush()
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
