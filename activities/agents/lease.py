"""One attempt of a dispatch at a time: a lease beside its ledger, renewed by the attempt's
event loop, that a later attempt waits out before it runs anything.

The server gives an attempt to another worker when its heartbeats stop reaching it. Mostly its
worker is gone by then — killed (its commands die with it), stopped or stuck (their watchdogs
kill them, activities/sandbox/liveness.py) — but not always: while the server is down, or the
worker is cut off from it, the attempt goes on working, and once the server is back it retries
the attempt elsewhere before the first one hears (at its next heartbeat) that it was given up.
Running the two side by side would do a command's work twice. So the running attempt holds
this lease, renewed from the same event loop that sends its heartbeats and at their cadence (a
quarter of the heartbeat timeout, :func:`activities.beat.interval`), and the next attempt waits
while the lease is alive: until the first attempt ends (it keeps its outcome first: the next
returns that, activities/agents/ledger.py) or is cancelled (its command killed with it), or the
lease lapses (its worker died or stopped).

A lease lapses ``ttl`` seconds after its last renewal (half the heartbeat timeout: two
renewals fit in it, and a renewal that fails is tried again after :data:`POLL` seconds, then
at pauses doubling up to the cadence), by the server's clock as each attempt knows it (its ``started_time``, the time the server gave
it out, carried on by the worker's monotonic clock: :attr:`Lease.anchor`) — the workers' own
wall clocks need not agree (before 0.12.6 they were compared, and a holder 30 s behind had its
live lease read as lapsed); one renewed on this machine is timed by its monotonic clock, which no step of the wall clock moves — or
at once when its holder ran on this machine and its process is gone. A worker that dies or stops renews nothing: its lease
has lapsed before the server gives its attempt to another (after the whole heartbeat timeout).

What it costs: each write is a request to the store (a PUT on S3), so the lease is written
when a later attempt could first be looking for it, and renewed at the heartbeat cadence, not
more often. The server starts another attempt of a running one only when the running one's
heartbeats have been missing for a whole heartbeat timeout, or its start-to-close timeout has
passed: the lease is first written a quarter of the shorter of the two into the attempt
(:func:`first_write_after`: the heartbeat cadence, 2.5 s for the default 10 s), three quarters
of it before a retry can exist (counted from the attempt's own start). An attempt shorter than
that — most commands, an instant tool — writes no lease and has none to release; one that lasts
writes it then and at every heartbeat. An attempt that waited for an earlier one writes it at
once: another may have been waiting beside it. A first write that meets a full or slow store
waits for it as any of the attempt's writes does (activities/agents/storage.py), on the board.
A dispatch's first attempt takes the lease without reading it (nothing came before it). An
attempt that kept its outcome leaves its lease as it is (:meth:`Lease.settled`): the next
attempt returns the kept outcome before it ever looks at a lease, and a dead holder's lease
lapses by itself; one that failed releases it (:meth:`Lease.let_go`) once its error is
written and its command's record cleared, so its retry does not wait it out and reads them.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import activity

from activities import beat as beats
from activities.agents.beat import Beat
from activities.agents.storage import stored
from activities.sandbox.pids import alive as process_alive
from activities.storage.local import LocalStore
from xsky.storage import ObjectStore

log = logging.getLogger("xsky.agents")

# Seconds between renewals outside an activity, or in one without a heartbeat timeout (a
# quarter of the default 10 s); in one, a quarter of its heartbeat timeout.
RENEW = 2.5
POLL = 0.25  # seconds between looks while waiting for another attempt's lease (or retries)


def _boot_id() -> str:
    """This machine's boot (Linux): monotonic times compare only within one."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


_BOOT = _boot_id()


@dataclass(frozen=True)
class Holder:
    attempt: int
    host: str
    pid: int
    age: float  # seconds since its last renewal (this machine's clock)
    reroute: int = 0  # its activity's place among those of the dispatch (ledger.reroute_of)

    @property
    def order(self) -> tuple[int, int]:
        return (self.reroute, self.attempt)

    @property
    def here(self) -> bool:
        return self.host == socket.gethostname()

    def alive(self, ttl: float) -> bool:
        if self.here and not process_alive(self.pid):
            return False
        return self.age < ttl


@dataclass
class Lease:
    store: ObjectStore
    key: str
    attempt: int
    ttl: float
    # The attempt's activity among those of its dispatch: one sent again to another host
    # counts its attempts from 1 again, and comes after every attempt of the ones before it.
    reroute: int = 0
    kept: bool = False  # the attempt kept its outcome: the lease is left as it is (settled)
    taken: bool = False  # written at least once (or its first write under way): let_go releases it
    # Held while the lease is written or released: a release waits for a write under way (one
    # landing after the release would leave a lease nobody renews, waited out by the retry).
    # (the server's time as the attempt started, this machine's monotonic time then): the
    # attempt's view of the server's clock, which every worker shares — a renewal is stamped,
    # and another host's renewal aged, by it rather than by this machine's wall clock (an
    # attempt on a host whose clock was 30 s behind read a live lease as lapsed and ran the
    # command beside it; one an hour ahead kept a dead one alive for an hour: chaos15). None
    # outside an activity: the wall clock, as before.
    anchor: tuple[float, float] | None = None
    _busy: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _released: bool = field(default=False, init=False, repr=False)  # no write after a release

    @property
    def order(self) -> tuple[int, int]:
        return (self.reroute, self.attempt)

    @classmethod
    def at(cls, path: Path, attempt: int, ttl: float) -> Lease:
        """A lease file in a local folder (tests, tools)."""
        return cls(LocalStore(path.parent), path.name, attempt, ttl)

    def holder(self) -> Holder | None:
        """Who holds the lease now (None: nobody, or an unreadable object)."""
        try:
            data = json.loads(self.store.get(self.key))
            host = str(data["host"])
            # renewed at "at" by its holder's clock (an object store keeps no mtime to touch);
            # by this machine's monotonic clock when it was renewed here, in this boot — a step
            # of the wall clock (NTP, a person) lapsed a live lease, or kept a dead one alive
            mono = data.get("mono")
            here = bool(_BOOT) and host == socket.gethostname() and data.get("boot") == _BOOT
            if here and mono is not None:
                age = time.monotonic() - float(mono)
            elif data.get("server") and self.anchor is not None:
                # both stamped on the server's clock (each attempt's start, then its monotonic
                # clock): hosts' wall clocks need not agree
                age = self._server_now() - float(data["server"])
            else:
                age = time.time() - float(data["at"])
            return Holder(
                int(data["attempt"]),
                host,
                int(data["pid"]),
                age,
                int(data.get("reroute", 0)),
            )
        except OSError as e:
            if e.errno == errno.EAGAIN:  # a store that fails (storage/s3.py): not "no lease"
                raise
            return None
        except (ValueError, KeyError, TypeError):
            return None

    def _write(self) -> None:
        holder = {
            "attempt": self.attempt,
            "reroute": self.reroute,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "at": time.time(),
            "mono": time.monotonic(),
            # the server's time now as this attempt knows it (Lease.anchor), when it does
            **(
                {"server": self._server_now()} if self.anchor is not None else {}
            ),  # (system-wide on Linux: read by attempts of this boot)
            "boot": _BOOT,
        }
        with self._busy:
            if self._released:  # a write that reached its thread after the release: dropped
                return
            self.store.put(self.key, json.dumps(holder).encode())

    def _server_now(self) -> float:
        """The server's time now, from the attempt's start (:attr:`anchor`): its ``started_time``
        plus what this machine's monotonic clock has counted since."""
        assert self.anchor is not None
        return self.anchor[0] + (time.monotonic() - self.anchor[1])

    def _take(self) -> None:
        self._write()

    def _renew(self) -> bool:
        try:
            self._write()
        except Exception:  # noqa: BLE001 - a missed renewal is tried again at once
            return False
        return True

    def settled(self) -> None:
        """The attempt kept its outcome: its lease need not be released (one write less); the
        next attempt returns the outcome without looking at the lease."""
        self.kept = True

    def _release(self) -> None:
        with self._busy:
            self._released = True
            holder = self.holder()
            if holder is not None and holder.order == self.order and holder.here:
                with contextlib.suppress(Exception):
                    self.store.delete(self.key)

    def _release_quietly(self) -> None:
        """:meth:`_release`, its store's errors logged: it runs as an attempt ends (in a
        ``finally``), where one would take the place of the attempt's own end — its error, and
        whether that error may be retried (a store failing there: the lease lapses anyway)."""
        try:
            self._release()
        except Exception as e:  # noqa: BLE001 - any store's error (S3's are not all OSErrors)
            log.warning("could not release the lease %s: %s", self.key, e)

    async def let_go(self, beat: Beat) -> None:
        """Released, if it was written and its attempt kept no outcome: called once the attempt
        has written how it ended (its error, its command's record cleared), so an attempt that
        waited for it reads that, not what was there before. Heartbeating, and for at most its
        ``ttl`` (a store that hangs: the lease lapses by itself then anyway)."""
        if self.taken and not self.kept:
            self.kept = True  # (released once)
            async with beat.running():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        asyncio.shield(asyncio.to_thread(self._release_quietly)), self.ttl
                    )

    @contextlib.asynccontextmanager
    async def held(
        self,
        beat: Beat,
        settled: Callable[[], bool],
        *,
        first: bool = False,
        after: float = 0.0,
    ) -> AsyncIterator[Lease]:
        """Wait while an earlier attempt holds a live lease (heartbeating, and saying so on
        the board) or until ``settled`` says an attempt kept its outcome; then hold the lease
        while the body runs. ``first``: the dispatch's first attempt, with no earlier one to
        wait for (nothing is read). ``after``: seconds before its first write (0: before the
        body; for an attempt, what is left of :func:`first_write_after` since it began, as no
        later one can look sooner) — at once after waiting for an earlier attempt (another
        may be waiting beside this one). Renewed until the body ends; released by
        :meth:`let_go`, once the attempt has written how it ended."""
        began = time.monotonic()
        waited = None if first else await self._wait(beat, settled)
        if waited == "settled":
            # the attempt it waited for kept its outcome, which this one returns: no lease
            self.kept = True
        elif after <= 0 or waited == "ended":
            # a dispatch's first attempt writes nothing before this: a full store is waited
            # out here
            self.taken = True
            await stored(beat, self.store.where, "the attempt's lease", self._take)
        # (what the wait took counts: the first write is due ``after`` seconds from the call)
        due = 0.0 if self.taken else max(0.01, after - (time.monotonic() - began))
        renewing = asyncio.create_task(self._renewing(beat, due)) if not self.kept else None
        try:
            yield self
        finally:
            if renewing is not None:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewing

    async def _wait(self, beat: Beat, settled: Callable[[], bool]) -> str | None:
        """Wait while an earlier attempt holds a live lease: None (there was none to wait
        for), "settled" (an attempt kept its outcome) or "ended" (the lease went or lapsed)."""
        holder = await stored(beat, self.store.where, "the lease", self.holder, verb="read")
        if holder is None or holder.order >= self.order or not holder.alive(self.ttl):
            return None
        where = f"{holder.host} (pid {holder.pid})"
        beat.progress(
            f"waiting for attempt {holder.attempt} on {where} to end first: it still runs "
            "(its worker lost the server, not its work); nothing runs twice"
        )
        async with beat.running():
            while True:
                await asyncio.sleep(POLL)
                if await stored(beat, self.store.where, "the lease", settled, verb="read"):
                    return "settled"
                holder = await stored(beat, self.store.where, "the lease", self.holder, verb="read")
                if holder is None or holder.order >= self.order or not holder.alive(self.ttl):
                    return "ended"

    async def _renewing(self, beat: Beat, after: float = 0.0) -> None:
        every = _cadence()
        if after > 0:
            await asyncio.sleep(after)
            # Marked before the write: a write under way when the body ends is waited for by
            # the release (the lock in _write and _release).
            self.taken = True
            said = beat.note
            try:
                # as the write before the body was: a full or slow store waited out, on the board
                await stored(beat, self.store.where, "the attempt's lease", self._take)
                if "the attempt's lease" in beat.note:  # its wait's note, not the agent's
                    beat.note = said
            except Exception as e:  # noqa: BLE001 - the work has begun: it goes on, said
                note = (
                    f"the attempt's lease cannot be written ({e}); it is tried again at every "
                    "heartbeat — until it is, a retry would not wait for this attempt"
                )
                log.warning(note)
                beat.progress(note)
        while True:
            await asyncio.sleep(every)
            pause = POLL
            # a renewal that fails is tried again soon, then less often (each try is a request)
            while not await asyncio.to_thread(self._renew):
                await asyncio.sleep(pause)
                pause = min(every, pause * 2)


def first_write_after() -> float:
    """Seconds into an attempt before its lease is first written: a quarter of the sooner of
    the two ways the server can start another attempt of a running one — a heartbeat timeout
    without heartbeats, or its start-to-close timeout — so the lease is there three quarters
    of that before any later attempt can look for it. 0 outside an activity (written at once)."""
    try:
        info = activity.info()
    except RuntimeError:  # not in an activity (tests, tools)
        return 0.0
    limits = [
        t.total_seconds()
        for t in (info.heartbeat_timeout, info.start_to_close_timeout)
        if t is not None and t.total_seconds() > 0
    ]
    return min(limits) / 4 if limits else 0.0


def _cadence() -> float:
    """Seconds between renewals: the heartbeats' (a quarter of the heartbeat timeout, half
    the lease's ttl), or :data:`RENEW` where there is none."""
    try:
        every = beats.interval()
    except RuntimeError:  # not in an activity (tests, tools)
        return RENEW
    return every if every is not None else RENEW
