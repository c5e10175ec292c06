"""A worker's cut-off: when the worker stops answering, its connections to Temporal are closed,
so its open task polls take no more work (stdlib only; run as a process of its own).

A worker polls the server with long polls (up to a minute). Stopped — SIGSTOP, a debugger, a
frozen machine — or stuck in its event loop, those polls stay open at the server, which goes
on handing them tasks: each is lost until its timeout (an agent's heartbeat timeout, a
workflow task's 10 s), and a retry may land on the same stopped worker again. A stopped
process can do nothing about it, so this process does it from outside. Started by the worker
(``worker.py``, :func:`activities.worker_guard.guarding`) as
``python -I -S cutoff.py FD QUIET PID HOST:PORT...``, it reads pipe ``FD``, which the
worker's pulse thread feeds while its event loop runs (activities/sandbox/liveness.py). After
``QUIET`` seconds of silence it shuts down every TCP connection of process ``PID`` to the
given server addresses — taking each socket from the worker with ``pidfd_getfd`` and calling
``shutdown`` on it — and does so again every quarter second while the silence lasts: the
server sees the polls go, and gives their tasks to other workers. When the worker answers
again, its client connects anew by itself. End of file on the pipe: the worker has exited,
and so does this process.

``pidfd_getfd`` needs the right to trace the worker: the worker's own uid without Yama's
``ptrace_scope`` 2 or 3 (the worker names this process its tracer, ``PR_SET_PTRACER``, for
scope 1), or ``CAP_SYS_PTRACE``. Without it, this process says so once and cuts nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import socket
import sys
import time

PIDFD_GETFD = 438  # the syscall's number, the same on every architecture (Linux 5.6+)
TICK = 0.25


def _hex_address(text: str) -> tuple[str, int]:
    """An address of /proc/net/tcp{,6} ("0100007F:1F90") as (ip, port)."""
    ip_hex, port_hex = text.split(":")
    raw = bytes.fromhex(ip_hex)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port_hex, 16)
    # IPv6: four 32-bit words, each in host (little-endian) order
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    ip = socket.inet_ntop(socket.AF_INET6, words)
    if ip.startswith("::ffff:") and "." in ip:
        ip = ip[7:]  # an IPv4-mapped address: the IPv4 one
    return ip, int(port_hex, 16)


def server_sockets(pid: int, targets: set[tuple[str, int]]) -> list[int]:
    """The worker's descriptors of established TCP connections to one of ``targets``."""
    inodes: dict[str, int] = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = open(f"/proc/{pid}/net/{name}", encoding="ascii").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "01":  # 01: established
                continue
            with contextlib.suppress(ValueError):
                if _hex_address(fields[2]) in targets:
                    inodes[fields[9]] = 0
    found = []
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    found.append(int(fd))
    return found


class Cutter:
    def __init__(self, pid: int, targets: set[tuple[str, int]]):
        self.pid = pid
        self.targets = targets
        self.pidfd = os.pidfd_open(pid)
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.refused: str | None = None

    def cut(self) -> int:
        """Shut down the worker's connections to the server; how many there were."""
        done = 0
        for fd in server_sockets(self.pid, self.targets):
            copy = self.libc.syscall(PIDFD_GETFD, self.pidfd, fd, 0)
            if copy < 0:
                err = ctypes.get_errno()
                if self.refused is None:
                    self.refused = os.strerror(err)
                    say(
                        f"cannot close the worker's connections to Temporal ({self.refused}): "
                        "a stopped worker's task polls stay open until they expire"
                    )
                continue
            try:
                with socket.socket(fileno=copy) as s:
                    s.shutdown(socket.SHUT_RDWR)
                done += 1
            except OSError:
                continue
        return done


def say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"xsky cut-off: {text}\n".encode())


def main(args: list[str]) -> None:
    pulse, quiet, pid = int(args[0]), float(args[1]), int(args[2])
    targets = set()
    for item in args[3:]:
        host, _, port = item.rpartition(":")
        targets.add((host.strip("[]"), int(port)))
    cutter = Cutter(pid, targets)
    last = time.monotonic()
    cut_since: float | None = None
    while True:
        if select.select([pulse], [], [], TICK)[0]:
            try:
                data = os.read(pulse, 4096)
            except BlockingIOError:
                data = b"."
            if not data:
                return  # the worker has exited
            last = time.monotonic()
            if cut_since is not None:
                say(f"the worker answers again after {time.monotonic() - cut_since + quiet:.1f}s")
                cut_since = None
        elif time.monotonic() - last > quiet:
            closed = cutter.cut()
            if cut_since is None and closed:
                cut_since = time.monotonic()
                say(
                    f"the worker stopped answering for {quiet:g}s: closed its {closed} "
                    "connection(s) to Temporal, so its task polls take no more work"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
