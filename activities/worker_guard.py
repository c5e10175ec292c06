"""The worker's guard: a stopped or stuck worker takes no more tasks (activities/sandbox/cutoff.py).

``worker.py`` runs its workers inside :func:`guarding`: a small process of its own watches a
pipe the worker's pulse thread feeds while the worker's event loop runs, and closes the
worker's connections to Temporal once it has been silent for :data:`QUIET` seconds (a stopped
process: at once; a stuck event loop: after :data:`STALL` seconds more), so the polls it left
open at the server go, and their tasks to other workers.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from activities.sandbox import cutoff
from activities.sandbox.liveness import PULSE_THREAD

log = logging.getLogger("xsky.worker")

QUIET = 3.0  # seconds of silence before the worker's connections are closed
STALL = 5.0  # seconds the event loop may be stuck before the pulse stops
CUTOFF = Path(cutoff.__file__)
PR_SET_PTRACER = 0x59616D61  # Yama: let this process (only) take the worker's sockets


def server_addresses(address: str) -> list[str]:
    """``host:port`` of the Temporal frontend as every ``ip:port`` it resolves to."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (OSError, ValueError):
        return []
    return sorted({str(info[4][0]) + ":" + port for info in infos})


@contextlib.asynccontextmanager
async def guarding(address: str) -> AsyncIterator[None]:
    """Run the body with the cut-off process watching this worker (where it can run)."""
    targets = server_addresses(address)
    if not targets or not hasattr(os, "pidfd_open"):
        log.warning(
            "no cut-off for %s: a stopped worker's polls stay open until they expire", address
        )
        yield
        return
    with PULSE_THREAD.pipe(stall=STALL) as fed:
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    str(CUTOFF),
                    str(fed),
                    f"{QUIET:g}",
                    str(os.getpid()),
                    *targets,
                ],
                pass_fds=(fed,),
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # not stopped with the worker's process group (^Z)
            )
        finally:
            os.close(fed)
        _name_tracer(proc.pid)
        try:
            yield
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def _name_tracer(pid: int) -> None:
    """Under Yama's ptrace_scope 1 only a process's ancestors may take its descriptors: name
    the cut-off as this worker's tracer (best effort: elsewhere it is not needed)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PTRACER, pid, 0, 0, 0)
