"""When the artifact store cannot take a write: say why, wait for it, and never pass for a lost worker.

An attempt writes its ledger, its lease, its result and its outcome to the artifact store. A
full (or read-only, or failing) store is not the agent's failure and usually passes — someone
frees space, a cleanup job runs — so each of those writes waits for the store
(:func:`stored`): it tries again with a growing pause, heartbeating, with the cause on the
board ("no space left on the artifact store at /srv/xsky/artifacts: …"), for as long as the
attempt's start-to-close timeout leaves room. Only then does the attempt fail, with that cause,
as a transient error (retried after its backoff like any other). Every write the attempt
waits for is one it needs: its ledger (a retry must know how the attempt before it ended), its
lease (one attempt at a time), its result, and the outcome it keeps before reporting (what
makes a retry return instead of redo); its log lines are best effort and never wait.

A write that does not return (an object store that is slow or paused) is waited for with
heartbeats and its cause on the board (:func:`patiently`): without them the server would take
the attempt for lost after its heartbeat timeout and run it again elsewhere.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import beat as beats
from activities.agents.beat import Beat

T = TypeVar("T")

# What each error number means for a store, said to a person.
PROBLEMS = {
    errno.ENOSPC: "no space left on {where}",
    errno.EDQUOT: "{where} is over its disk quota",
    errno.EROFS: "{where} is read-only",
    errno.EIO: "{where} gives I/O errors",
    errno.EAGAIN: "{where} fails or does not answer",  # an object store (storage/s3.py)
}
FIRST_PAUSE = 1.0  # seconds before the first retry of a write; doubled each time
LONGEST_PAUSE = 15.0
MARGIN = 30.0  # seconds of the start-to-close timeout left for the rest of the attempt
DEFAULT_WAIT = 300.0  # without a start-to-close timeout (a local activity, a test)
SLOW_WRITE = 1.0  # seconds a write may take before the attempt heartbeats through it
SLOW_NOTE_EVERY = 2.0  # seconds between the board's notes while a write is waited for


def storage_problem(error: BaseException, where: str) -> str | None:
    """What is wrong with the store, for a person; None for an error that is not about space
    or the disk (a missing file, a permission: the code's or the setup's, not the disk's)."""
    if not isinstance(error, OSError) or error.errno not in PROBLEMS:
        return None
    return PROBLEMS[error.errno].format(where=where)


def storage_error(problem: str, what: str, error: OSError) -> ApplicationError:
    """The attempt's failure once the store stayed unusable: transient (retried, with backoff)."""
    fix = (
        "check the store (XSKY_STORE, AWS_ENDPOINT_URL)"
        if error.errno == errno.EAGAIN
        else "free space there or point XSKY_ARTIFACTS at a larger store"
    )
    return ApplicationError(
        f"{problem} while writing {what} ({error.strerror}); {fix} — the agent is tried again",
        {"storage": problem},
        type="StorageError",
        non_retryable=False,
    )


def deadline() -> float:
    """The monotonic time until which a write may wait: the attempt's start-to-close timeout
    less :data:`MARGIN` (the rest of the attempt must still fit)."""
    return beats.deadline(MARGIN, DEFAULT_WAIT)


async def stored(
    beat: Beat, where: str, what: str, write: Callable[[], T], *, verb: str = "write"
) -> T:
    """``write()`` (run in a thread), tried again while the store is full or failing, until
    the attempt's :func:`deadline`; then a StorageError saying why. ``verb``: what the board
    says it waits to do ("read" for a read)."""
    until = deadline()
    pause = FIRST_PAUSE
    while True:
        try:
            return await patiently(beat, where, what, write, verb=verb)
        except OSError as e:
            problem = storage_problem(e, where)
            if problem is None:
                raise
            if time.monotonic() + pause > until:
                raise storage_error(problem, what, e) from None
            activity.logger.warning("%s (%s): waiting %gs to %s %s", problem, e, pause, verb, what)
            hint = "" if e.errno == errno.EAGAIN else " — free space there"
            beat.progress(f"{problem}: waiting {pause:g}s to {verb} {what}{hint}")
            async with beat.running():
                await beat.flush()
                await asyncio.sleep(pause)
            pause = min(LONGEST_PAUSE, pause * 2)


async def patiently(
    beat: Beat, where: str, what: str, write: Callable[[], T], *, verb: str = "write"
) -> T:
    """``write()`` in a thread; one that has not returned within :data:`SLOW_WRITE` seconds
    (a slow or paused object store) is waited for heartbeating, with the cause on the board,
    so the server does not take a slow store for a lost worker and run the attempt again.
    ``verb``: what the board says it waits to do ("read" for a read)."""
    task = asyncio.ensure_future(_in_store_thread(write))
    try:
        return await _waited(task, beat, where, what, verb)
    except asyncio.CancelledError:
        # The attempt is stopped (paused, timed out) while its write goes on in the thread: it
        # is waited for, a while, so that it does not land after the attempt ended — over a
        # later attempt's checkpoint, which that attempt then reads back as older.
        await asyncio.wait({task}, timeout=CANCELLED_WAIT)
        raise


# How long a stopped attempt waits for the write its thread is making (see patiently).
CANCELLED_WAIT = 30.0

# The threads the store's calls are made in: their own, not the event loop's default executor
# (min(32, CPUs + 4) threads: 6 on two cores). A paused or hung store holds a thread per call
# until it answers; in the default executor a handful of them held every other use of it in the
# worker — each DNS lookup (loop.getaddrinfo: a model's, http_get's, an MCP server's connection)
# waited for the store (chaos12).
STORE_THREADS = 64
_store_io = ThreadPoolExecutor(max_workers=STORE_THREADS, thread_name_prefix="xsky-store")


def _in_store_thread(call: Callable[[], T]) -> asyncio.Future[T]:
    """``call()`` in a store thread, with the caller's context (as asyncio.to_thread)."""
    context = contextvars.copy_context()
    return asyncio.get_running_loop().run_in_executor(_store_io, context.run, call)


async def _waited(task: asyncio.Future[T], beat: Beat, where: str, what: str, verb: str) -> T:
    done, _ = await asyncio.wait({task}, timeout=SLOW_WRITE)
    if done:
        return task.result()
    began = time.monotonic() - SLOW_WRITE
    async with beat.running():
        while True:
            done, _ = await asyncio.wait({task}, timeout=SLOW_NOTE_EVERY)
            if done:
                return task.result()
            waited = time.monotonic() - began
            note = (
                f"{where} has not answered for {waited:.0f}s: waiting to {verb} {what} "
                "(a slow store, not a lost worker)"
            )
            activity.logger.warning(note)
            beat.progress(note)
            await beat.flush()
