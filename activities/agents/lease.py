"""One attempt of a dispatch at a time: a lease beside its ledger, renewed by the attempt's
event loop, that a later attempt waits out before it runs anything.

The server gives an attempt to another worker when its heartbeats stop reaching it. Mostly its
worker is gone by then — killed (its commands die with it), stopped or stuck (their watchdogs
kill them, activities/sandbox/liveness.py) — but not always: while the server is down, or the
worker is cut off from it, the attempt goes on working, and once the server is back it retries
the attempt elsewhere before the first one hears (at its next heartbeat) that it was given up.
Running the two side by side would do a command's work twice. So the running attempt holds
this lease, renewed every :data:`RENEW` seconds from the same event loop that sends its
heartbeats, and the next attempt waits while the lease is alive: until the first attempt ends
(it keeps its outcome first: the next returns that, activities/agents/ledger.py) or is
cancelled (its command killed with it), or the lease lapses (its worker died or stopped).

A lease lapses ``ttl`` seconds after its last renewal (half the heartbeat timeout), by the
clock of the attempt that reads it — workers' clocks must agree to within a second or so, as
they must for the heartbeat timeout itself — or at once when its holder ran on this machine
and its process is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from activities.agents.beat import Beat
from activities.storage.local import LocalStore
from xsky.storage import ObjectStore

RENEW = 1.0  # seconds between renewals
POLL = 0.25  # seconds between looks while waiting for another attempt's lease


@dataclass(frozen=True)
class Holder:
    attempt: int
    host: str
    pid: int
    age: float  # seconds since its last renewal (this machine's clock)

    @property
    def here(self) -> bool:
        return self.host == socket.gethostname()

    def alive(self, ttl: float) -> bool:
        if self.here and not _process_exists(self.pid):
            return False
        return self.age < ttl


@dataclass
class Lease:
    store: ObjectStore
    key: str
    attempt: int
    ttl: float

    @classmethod
    def at(cls, path: Path, attempt: int, ttl: float) -> Lease:
        """A lease file in a local folder (tests, tools)."""
        return cls(LocalStore(path.parent), path.name, attempt, ttl)

    def holder(self) -> Holder | None:
        """Who holds the lease now (None: nobody, or an unreadable object)."""
        try:
            data = json.loads(self.store.get(self.key))
            return Holder(
                int(data["attempt"]),
                str(data["host"]),
                int(data["pid"]),
                # renewed at "at" by its holder's clock (an object store keeps no mtime to touch)
                time.time() - float(data["at"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write(self) -> None:
        holder = {
            "attempt": self.attempt,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "at": time.time(),
        }
        self.store.put(self.key, json.dumps(holder).encode())

    def _take(self) -> None:
        self._write()

    def _renew(self) -> None:
        with contextlib.suppress(Exception):  # a missed renewal is the next one's job
            self._write()

    def _release(self) -> None:
        holder = self.holder()
        if holder is not None and holder.attempt == self.attempt and holder.here:
            with contextlib.suppress(Exception):
                self.store.delete(self.key)

    @contextlib.asynccontextmanager
    async def held(self, beat: Beat, settled: Callable[[], bool]) -> AsyncIterator[None]:
        """Wait while an earlier attempt holds a live lease (heartbeating, and saying so on
        the board) or until ``settled`` says an attempt kept its outcome; then hold the lease
        while the body runs."""
        await self._wait(beat, settled)
        await asyncio.to_thread(self._take)
        renewing = asyncio.create_task(self._renewing())
        try:
            yield
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            await asyncio.to_thread(self._release)

    async def _wait(self, beat: Beat, settled: Callable[[], bool]) -> None:
        holder = await asyncio.to_thread(self.holder)
        if holder is None or holder.attempt >= self.attempt or not holder.alive(self.ttl):
            return
        where = f"{holder.host} (pid {holder.pid})"
        beat.progress(
            f"waiting for attempt {holder.attempt} on {where} to end first: it still runs "
            "(its worker lost the server, not its work); nothing runs twice"
        )
        async with beat.running():
            while True:
                await asyncio.sleep(POLL)
                if await asyncio.to_thread(settled):
                    return
                holder = await asyncio.to_thread(self.holder)
                if holder is None or holder.attempt >= self.attempt or not holder.alive(self.ttl):
                    return

    async def _renewing(self) -> None:
        while True:
            await asyncio.sleep(RENEW)
            await asyncio.to_thread(self._renew)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
