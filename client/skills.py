"""The skill pipeline from Python: its transcript sources, the watch schedule, a scan now,
what it has done (:class:`SkillsStatus`) and a trajectory's atoms.

    async with XSky.connect() as x:
        skills = x.skills
        skills.add_source("codex", "~/work/codex-sessions")
        await skills.watch(timedelta(seconds=30))
        status = await skills.status()

``starter.py skills …`` renders what this returns; nothing here prints.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.service import RPCError, RPCStatusCode

from activities.fsio import atomic_write
from activities.skills.scan import read_atoms
from activities.skills.store import RecordCount, SkillStore, TrajRow
from client._consts import PICKUP_WAIT
from client.connect import connect_client
from client.workers import picked_up, queue_pollers, unserved_error
from workflows.skills.watch import SkillsScanWorkflow
from xsky.config import Settings, former_skills_home, moved_note
from xsky.errors import ConnectError, NoWorkerError, UsageError
from xsky.settings_files import (
    SettingsError,
    load_layers,
    parse_settings,
    settings_paths,
    skill_sources,
)
from xsky.skills.atoms import AtomTask
from xsky.skills.runs import ScanInput, SkillsScanInput, SkillsScanResult
from xsky.skills.sources import Source, default_root, expand, resolve
from xsky.skills.transcripts import SOURCE_KINDS


def schedule_id(settings: Settings) -> str:
    """``xsky-skills-watch``; with a non-default task queue, suffixed by it (one per deployment)."""
    return (
        "xsky-skills-watch"
        if settings.task_queue == "xsky"
        else f"xsky-skills-watch-{settings.task_queue}"
    )


def watch_schedule(settings: Settings, every: timedelta) -> Schedule:
    """The Temporal Schedule of the watcher: a scan every ``every``, overlapping ticks skipped."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            SkillsScanWorkflow.run,
            SkillsScanInput(),
            id=f"xsky-skills-scan-{settings.task_queue}",
            task_queue=settings.skills_queue,
            static_summary="skills watcher tick: scan transcripts → delta workflows",
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
        state=ScheduleState(
            note=f"xsky skills watcher: every {every.total_seconds():g}s; `starter.py skills unwatch` stops it"
        ),
    )


@dataclass(frozen=True)
class SourceChange:
    """What add_source / remove_source did to a settings file."""

    file: Path
    changed: bool
    """False when it was already so (added: registered before)."""
    defaults_kept: bool = False
    """Adding to the defaults kept them registered beside the new source."""


@dataclass
class SkillsStatus:
    """What the transcript watcher has done; ``as_json()`` is the ``skills status --json`` shape."""

    home: str
    sources: list[dict[str, Any]]
    cursors: dict[str, Any]
    atoms: dict[str, int]
    schedule: dict[str, Any]
    in_flight: list[str]
    trajs: list[TrajRow]
    last_scan: dict[str, Any] | None = None
    ingested: bool = False
    """Something was ingested (the state database exists)."""
    records: list[RecordCount] = field(default_factory=list)
    """Every record type the adapters met, per source: counted, interpreted or opaque."""
    former_home: str | None = None
    """The default skills home, when XSKY_HOME moved this one away from it and only it holds
    what was ingested (xsky.config.former_skills_home)."""

    def as_json(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"home": self.home, "sources": self.sources}
        if self.former_home:
            facts["formerHome"] = self.former_home
        if self.ingested:
            facts["lastScan"] = self.last_scan
        facts |= {
            "cursors": self.cursors,
            "atoms": self.atoms,
            "schedule": self.schedule,
            "inFlight": self.in_flight,
            "records": [r.wire() for r in self.records],
        }
        return facts


class Skills:
    """The skill pipeline of one deployment (its settings; a client when one is connected)."""

    def __init__(self, settings: Settings, client: Client | None = None) -> None:
        self.settings = settings
        self._client = client

    async def _connected(self) -> Client:
        if self._client is None:
            self._client = await connect_client(self.settings)
        return self._client

    # -- sources -------------------------------------------------------------------------------

    def sources(self) -> list[Source]:
        """The transcript folders that feed the pipeline (settings layers, else the defaults)."""
        try:
            return resolve(skill_sources(load_layers()), os.environ)
        except SettingsError as e:
            raise UsageError(str(e)) from None

    def add_source(self, kind: str, path: str | None = None, user: bool = False) -> SourceChange:
        """Register a transcript folder (``path`` None: the kind's usual place) in the
        project's settings file (``./.xsky/settings.json``), or with ``user`` the user's."""
        _check_kind(kind)
        file = _settings_file(user)
        data = _load_settings_json(file)
        skills = data.setdefault("skills", {})
        listed = skills.get("sources")
        defaults_kept = listed is None  # the defaults were in effect: keep them, and add this one
        if listed is None:
            listed = [{"kind": k} for k in SOURCE_KINDS]
        if any(_same(e, kind, path) for e in listed):
            return SourceChange(file, changed=False)
        entry = {"kind": kind, **({"path": path} if path else {})}
        skills["sources"] = [*listed, entry]
        _write(file, data)
        return SourceChange(file, changed=True, defaults_kept=defaults_kept)

    def remove_source(self, kind: str, path: str | None = None, user: bool = False) -> Path:
        """Unregister a transcript folder from the project's settings file, or with ``user``
        the user's (what was ingested from it stays)."""
        _check_kind(kind)
        file = _settings_file(user)
        data = _load_settings_json(file)
        listed = (data.get("skills") or {}).get("sources")
        if listed is None:
            listed = [{"kind": k} for k in SOURCE_KINDS]
        kept = [e for e in listed if not _same(e, kind, path)]
        if len(kept) == len(listed):
            registered = (
                ", ".join(f"{e['kind']} {e.get('path') or '(default)'}" for e in listed) or "none"
            )
            raise UsageError(
                f"{kind} {path or '(default place)'} is not registered in {file}; registered there: {registered}"
                + (
                    ""
                    if user
                    else " (a source in your user settings file: add --user; user=True in Python)"
                )
            )
        skills = data.setdefault("skills", {})
        if kept == [{"kind": k} for k in SOURCE_KINDS]:
            # back to the defaults exactly (what add_source wrote beside them, taken away):
            # the list goes, so the defaults stay the product's, not a copy of this version's
            del skills["sources"]
            if not skills:
                del data["skills"]
        else:
            skills["sources"] = kept
        _write(file, data)
        return file

    # -- the watch schedule --------------------------------------------------------------------

    async def watch(self, every: timedelta) -> Literal["created", "updated"]:
        """Create, or update, the Schedule that scans every ``every``."""
        if every < timedelta(seconds=1):
            raise UsageError("the watch interval must be at least 1 second")
        client = await self._connected()
        sid, schedule = schedule_id(self.settings), watch_schedule(self.settings, every)
        try:
            await client.create_schedule(sid, schedule)
            return "created"
        except ScheduleAlreadyRunningError:

            async def update(_: ScheduleUpdateInput) -> ScheduleUpdate:
                return ScheduleUpdate(schedule=schedule)

            await client.get_schedule_handle(sid).update(update)
            return "updated"

    async def unwatch(self) -> bool:
        """Delete the watch schedule; False when there was none (ingested atoms stay)."""
        client = await self._connected()
        try:
            await client.get_schedule_handle(schedule_id(self.settings)).delete()
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return True

    async def worker_serves(self) -> bool:
        """Does a live worker serve the pipeline's queue? (True when the server cannot tell.)"""
        client = await self._connected()
        try:
            # live pollers only: a dead worker stays listed by the server for minutes
            return bool(
                await queue_pollers(
                    client,
                    self.settings,
                    self.settings.skills_queue,
                    TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
                )
            )
        except RPCError:
            return True  # cannot tell; do not cry wolf

    def no_worker(self) -> NoWorkerError:
        if self.settings.store:
            # With an object store only the worker started with --skills serves the pipeline
            # (`up` and a plain worker.py do not): saying `up` would send people in a circle.
            return NoWorkerError(
                f"no worker is serving the skill pipeline (queue '{self.settings.skills_queue}')",
                "with an object store (XSKY_STORE) only a worker started with --skills serves "
                "it: start `python worker.py --skills` on the one host that keeps the skills "
                "home, where the transcripts are",
                topic="skills-worker-store",
            )
        return NoWorkerError(
            f"no worker is serving the skill pipeline (queue '{self.settings.skills_queue}')",
            "start one with `python worker.py` on the machine with the transcripts",
            topic="skills-worker",
        )

    # -- a scan now ----------------------------------------------------------------------------

    async def start_scan(self, pickup: float = PICKUP_WAIT) -> str:
        """Start one tick now, without the schedule; its workflow id. A NoWorkerError when no
        worker serves the pipeline (nothing is started); an UnservedRunError when none took
        the scan within ``pickup`` seconds (the workers the server lists have stopped; the
        scan stays started and runs once a worker polls)."""
        client = await self._connected()
        if not await self.worker_serves():
            raise self.no_worker()
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        wid = f"xsky-skills-scan-once-{stamp}-{uuid.uuid4().hex[:4]}"
        await client.start_workflow(
            SkillsScanWorkflow.run,
            SkillsScanInput(scan=ScanInput()),
            id=wid,
            task_queue=self.settings.skills_queue,
            static_summary="skills scan --once",
        )
        # The server lists a worker that stopped a moment ago like a live one: only a worker
        # taking the scan's first task proves one polls.
        if not await picked_up(client, wid, pickup):
            error = unserved_error(self.settings, self.settings.skills_queue, wid, "the scan")
            error.topic = "skills-unserved-store" if self.settings.store else "skills-unserved"
            raise error
        return wid

    async def scan_result(self, workflow_id: str, timeout: float) -> SkillsScanResult:
        """The tick's result; a UsageError if it is still running after ``timeout`` seconds
        (it goes on durably)."""
        if not timeout > 0:
            raise UsageError(f"timeout {timeout:g}: give a number of seconds above 0")
        client = await self._connected()
        handle = client.get_workflow_handle(workflow_id, result_type=SkillsScanResult)
        try:
            return await asyncio.wait_for(handle.result(), timeout)
        except TimeoutError:
            link = self.settings.ui_link(workflow_id)
            raise UsageError(
                f"the scan is still running after {timeout:.1f}s; it goes on durably",
                f"see Skills.status() or {link}",
                topic="skills-scan-running",
                subject=link,
            ) from None

    # -- what it has done ----------------------------------------------------------------------

    def _store(self) -> SkillStore | None:
        if not (self.settings.skills_home / "state.db").exists():
            return None
        return SkillStore(self.settings.skills_home)

    async def status(self) -> SkillsStatus:
        """Sources, cursors, lag, the schedule, deltas in flight and atoms per trajectory. The
        server's part says why it is missing when Temporal cannot be reached."""
        sources = [
            {"kind": s.kind, "path": str(s.root), "exists": s.root.is_dir()} for s in self.sources()
        ]
        store = self._store()
        files: list[Any] = []
        trajs: list[TrajRow] = []
        records: list[RecordCount] = []
        last_scan = None
        if store is not None:
            try:
                files = list(store.files().values())
                trajs = store.trajs()
                last_scan = store.get_meta("last_scan")
                records = store.record_counts()
            finally:
                store.close()
        status = SkillsStatus(
            home=str(self.settings.skills_home),
            sources=sources,
            cursors=_cursors(files, time.time()),
            atoms={t.traj_id: t.atoms for t in trajs},
            schedule={},
            in_flight=[],
            trajs=trajs,
            last_scan=last_scan,
            ingested=store is not None,
            records=records,
            former_home=str(former) if (former := former_skills_home(self.settings)) else None,
        )
        try:
            client = await self._connected()
            status.schedule = await _schedule_facts(client, self.settings)
            status.in_flight = await _in_flight(client, self.settings)
        except (UsageError, ConnectError) as e:
            # what went wrong and its fix apart: the CLI words the fix its own way (cli/hints.py)
            status.schedule = {
                "error": e.fact.splitlines()[0],
                "fix": e.fix or "",
                "topic": e.topic or "",
            }
        return status

    def atoms(self, traj: str) -> tuple[str, list[AtomTask]]:
        """The atoms of one trajectory, by its id or a unique part of one."""
        store = self._store()
        if store is None:
            former = former_skills_home(self.settings)
            raise UsageError(
                f"nothing ingested yet in {self.settings.skills_home}",
                f"{moved_note(former)}; or scan first"
                if former
                else "scan first (Skills.start_scan())",
                topic="skills-moved" if former else "skills-empty",
            )
        try:
            ids = [t.traj_id for t in store.trajs()]
        finally:
            store.close()
        matches = [t for t in ids if t == traj] or [t for t in ids if traj in t]
        if not matches:
            raise UsageError(
                f"no trajectory matches {traj!r}",
                "Skills.status() lists them",
                topic="skills-traj",
            )
        if len(matches) > 1:
            raise UsageError(
                f"{traj!r} matches {len(matches)} trajectories ({', '.join(matches[:5])}…); give more of the id"
            )
        return matches[0], read_atoms(self.settings.skills_home, matches[0])


# -- settings files ---------------------------------------------------------------------------


def _settings_file(user: bool) -> Path:
    return dict(settings_paths())["user" if user else "project"]


def _load_settings_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    try:
        parse_settings(text, str(path))  # a broken file is reported, never overwritten
    except SettingsError as e:
        raise UsageError(f"{e}\n  fix the file first; nothing was changed") from None
    loaded: dict[str, Any] = json.loads(text) if text.strip() else {}
    return loaded


def _check_kind(kind: str) -> None:
    if kind not in SOURCE_KINDS:
        raise UsageError(f"unknown source kind {kind!r}; kinds: {', '.join(SOURCE_KINDS)}")


def _same(entry: dict[str, Any], kind: str, path: str | None) -> bool:
    if entry.get("kind") != kind:
        return False
    # a source registered without a path is its kind's usual place: naming that place is
    # naming it (`remove-source claude-code ~/.claude/projects`)
    mine = expand(path, os.environ) if path else default_root(kind, os.environ)
    given = entry.get("path")
    theirs = expand(given, os.environ) if given else default_root(kind, os.environ)
    if not path or not given:  # the usual place and a folder named for it are the same source
        return mine.resolve() == theirs.resolve()
    return mine == theirs


def _write(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text, sync=False, mode=0o666)


# -- status parts -----------------------------------------------------------------------------


def _cursors(files: list[Any], now: float) -> dict[str, Any]:
    behind = [f for f in files if f.status == "active" and f.size > f.cursor]
    return {
        "files": len(files),
        "active": sum(1 for f in files if f.status == "active"),
        "gone": sum(1 for f in files if f.status == "gone"),
        "bytesIngested": sum(f.cursor for f in files),
        "bytesBehind": sum(f.size - f.cursor for f in behind),
        "filesBehind": len(behind),
        "lagSeconds": round(max((now - f.mtime_ns / 1e9 for f in behind), default=0.0), 1),
    }


async def _schedule_facts(client: Client, settings: Settings) -> dict[str, Any]:
    sid = schedule_id(settings)
    try:
        desc = await client.get_schedule_handle(sid).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return {"id": sid, "exists": False}
        raise
    spec = desc.schedule.spec
    every = spec.intervals[0].every.total_seconds() if spec.intervals else None
    recent = (
        desc.info.recent_actions[-1].started_at.isoformat() if desc.info.recent_actions else None
    )
    upcoming = desc.info.next_action_times[0].isoformat() if desc.info.next_action_times else None
    return {
        "id": sid,
        "exists": True,
        "every": every,
        "paused": desc.schedule.state.paused,
        "lastTick": recent,
        "nextTick": upcoming,
        "ticks": desc.info.num_actions,
        "skipped": desc.info.num_actions_skipped_overlap,
    }


async def _in_flight(client: Client, settings: Settings) -> list[str]:
    query = f"WorkflowType = 'SkillDeltaWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '{settings.skills_queue}'"
    return [wf.id async for wf in client.list_workflows(query, limit=50)]
