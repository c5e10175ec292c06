"""A run's event stream, watched: a picture of the run each time its history moves (a
long-poll on the workflow's history, never a timer), compared with the last one
(xsky/leader/run_events.py), the differences kept in the run's :class:`EventLog`.

The `ui` page's server and `starter.py events` both read runs through this; the log is kept
on disk by the server so that a client reconnecting with the last id it saw — after a
network blip or a restart of the server itself — gets exactly what it missed."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from temporalio.api.enums.v1 import EventType
from temporalio.service import RPCError

from activities.fsio import atomic_write
from client._consts import TRANSIENT
from client.run import Run
from xsky.errors import ConnectError, NoWorkerError, RunEndedError, XSkyError
from xsky.leader.ledger import LedgerEntry
from xsky.leader.run_events import RunEvent, RunPicture, diff_pictures

log = logging.getLogger("xsky.events")

# History events after which the run's queries may answer differently: its workflow task
# completed (every state change is made in one), or it closed.
MOVES = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)
RETRY_SECONDS = 1.0  # after a refused or unanswered look (no worker yet, a server restarting)


# A file name's bytes, with room for ".picture.json" under the filesystems' 255.
_NAME_BYTES = 200


def _file_name(run_id: str) -> str:
    """The run's event files' name: its id quoted, or, for an id too long for a file name (a
    workflow id may have 1,000 characters), its start and a hash of the whole."""
    name = quote(run_id, safe="")
    if len(name) <= _NAME_BYTES:
        return name
    return f"{name[:120]}-{hashlib.sha256(run_id.encode()).hexdigest()[:20]}"


class EventLog:
    """One run's events, in order, with the picture they lead to; on disk when given a
    folder (``<folder>/<run id>.jsonl`` and ``.picture.json``), so ids survive a restart."""

    def __init__(self, run_id: str, folder: Path | None = None):
        self.run_id = run_id
        self.events: list[RunEvent] = []
        self.picture: RunPicture | None = None
        self._changed = asyncio.Event()
        self._lines = self._picture_file = None
        if folder is not None:
            # The page's logs hold what agents asked and answered: its owner's alone, as the
            # home `starter.py up` makes (a home made otherwise may be 0755).
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            name = _file_name(run_id)
            self._lines = folder / f"{name}.jsonl"
            self._picture_file = folder / f"{name}.picture.json"
            if self._lines.exists():
                self.events = [
                    RunEvent.model_validate_json(line)
                    for line in self._lines.read_text("utf-8").splitlines()
                    if line.strip()
                ]
            if self._picture_file.exists():
                self.picture = RunPicture.model_validate_json(self._picture_file.read_text("utf-8"))

    @property
    def last_id(self) -> int:
        return self.events[-1].id if self.events else 0

    def add(self, changes: list[tuple[str, dict[str, Any]]]) -> list[RunEvent]:
        now = datetime.now(UTC)
        new = [
            RunEvent(id=self.last_id + i, run=self.run_id, at=now, type=kind, data=data)
            for i, (kind, data) in enumerate(changes, start=1)
        ]
        self.events += new
        if self._lines is not None and new:
            fd = os.open(self._lines, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            with open(fd, "a", encoding="utf-8") as f:
                f.writelines(e.line() + "\n" for e in new)
        if new:
            self._changed.set()
            self._changed = asyncio.Event()
        return new

    def keep(self, picture: RunPicture) -> None:
        """The picture the events so far lead to (what the next one is compared with)."""
        self.picture = picture
        if self._picture_file is not None:
            atomic_write(self._picture_file, picture.model_dump_json(), sync=False)

    def after(self, last_id: int) -> list[RunEvent]:
        """The events a client that saw ``last_id`` has not seen (all of them for an id from
        another stream, e.g. a log that was removed: a client then starts again)."""
        if last_id > self.last_id:
            return list(self.events)
        return [e for e in self.events if e.id > last_id]

    async def wait(self, timeout: float, after: int | None = None) -> None:
        """Until an event is added, or ``timeout`` seconds; at once when there is one after
        ``after`` already (one added while a reader of the events up to it was busy sending
        them: it would have waited on for the next, or for its timeout)."""
        if after is not None and self.last_id > after:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)


async def take_picture(run: Run, before: RunPicture | None) -> tuple[RunPicture, list[LedgerEntry]]:
    """The run now, and the leader's decisions since ``before``."""
    status = await run.temporal_status()
    summary = None
    if status != "running":
        try:
            summary = (await run.result()).summary
        except RunEndedError as e:  # terminated, timed out: no result to read
            summary = str(e)
    board = await run.board(limit=2000)
    requests = await run.requests() if status == "running" else []
    history = await run.plan_history()
    seen = before.decisions if before is not None else 0
    ledger = await run.ledger(offset=seen, limit=200)
    picture = RunPicture.of(
        run.id, status, board, requests, history, seen + len(ledger.entries), summary
    )
    return picture, list(ledger.entries)


async def _history_length(run: Run) -> int:
    described = await run.handle.describe()
    return described.raw_description.workflow_execution_info.history_length


async def _history_moves(run: Run, seen: int) -> AsyncIterator[None]:
    """Once each time the run's state may have changed (long-polling its history) after its
    first ``seen`` events, until it closes."""
    async for event in run.handle.fetch_history_events(wait_new_event=True, skip_archival=True):
        if event.event_id > seen and event.event_type in MOVES:
            yield


async def watch(
    run: Run, events: EventLog, on_event: Callable[[RunEvent], None] | None = None
) -> None:
    """Keep ``events`` up to date with ``run`` until it has ended (its last events told). A
    server that goes away is waited for (``watch.lost``, then ``watch.back``)."""
    lost: str | None = None

    def tell(changes: list[tuple[str, dict[str, Any]]]) -> None:
        for event in events.add(changes):
            if on_event is not None:
                on_event(event)

    async def look() -> bool:
        """Take a picture and tell what changed; True once the run has ended."""
        picture, decisions = await take_picture(run, events.picture)
        tell(diff_pictures(events.picture, picture, decisions))
        events.keep(picture)
        return picture.status != "running"

    while True:
        try:
            # The history's length before the look, not after it: what moves while the look's
            # queries are made is looked at again (live12: a question raised between the look
            # and a length read after it was in neither, and a run waiting on its answer never
            # moved again — the page never listed it).
            seen = await _history_length(run)
            if await look():
                return
            if lost is not None:
                tell([("watch.back", {"after": lost})])
                lost = None
            async for _ in _history_moves(run, seen):
                if await look():
                    return
        except (RPCError, ConnectError) as e:
            if isinstance(e, RPCError) and e.status not in TRANSIENT:
                raise
            if lost is None:
                lost = e.message if isinstance(e, RPCError) else str(e)
                tell([("watch.lost", {"why": lost})])
        except NoWorkerError:
            pass  # no worker answers yet (one restarting, or busy): look again in a moment
        except XSkyError:
            if events.picture is not None and events.picture.status != "running":
                return
            raise
        await asyncio.sleep(RETRY_SECONDS)
