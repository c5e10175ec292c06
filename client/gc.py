"""Expiry of what runs left in the store: ``starter.py gc [--older-than DAYS] [--run ID]``.

A run's objects (results, blobs, ledgers, logs, screenshots, workspace snapshots) are the keys
under ``<run>/``. Those of a run that has ended more than ``older_than`` days ago go; a running
run's never do, nor those of a run the server still lists as running. A run the server no longer
knows (its retention passed) has ended long ago and goes too.

A follow-up run or a fork reads what it carries from the run it came from (a large result is a
reference into that run's folder; a follow-up works in that run's workspace and its snapshots):
so a run's objects stay while any run descended from it runs, and its age is counted from the
end of the last of them (``XskyLineage``, xsky/lineage.py).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.client import Client
from temporalio.client import WorkflowExecutionStatus as ExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from activities.artifacts import removed_by_gc
from activities.storage import open_objects
from xsky.artifacts import CHANGED_END, GC_MARK, PAGES, looks_changed, run_folder
from xsky.config import Settings
from xsky.errors import UsageError
from xsky.lineage import descendants_clause
from xsky.run_ids import near_run_ids
from xsky.storage import ObjectStore


@dataclass(frozen=True)
class Collected:
    run_id: str
    objects: int
    why: str  # "ended 2024-05-01 10:00", "unknown to the server", or why it stays
    removed: bool


# Days a run may have ended before: a century is more than any store keeps, and a bound
# keeps the cutoff a date (`1e308` days before now is none: an OverflowError).
MAX_DAYS = 36500


def _check_days(older_than: float) -> None:
    """``older_than`` is a number of days a cutoff can be counted back by."""
    # (`not 0 <= x` rather than `x < 0`: NaN compares false with everything)
    if not 0 <= older_than <= MAX_DAYS:
        raise UsageError(
            f"--older-than {older_than:g}: give the days since a run ended, "
            f"a number from 0 to {MAX_DAYS} (e.g. 7)"
        )


async def collect(
    client: Client, settings: Settings, older_than: float = 0.0, run: str | None = None
) -> list[Collected]:
    """Remove the objects of ended runs (one run with ``run``); what went and what stayed."""
    _check_days(older_than)
    store = open_objects(settings)
    folders = await asyncio.to_thread(_run_folders, store)
    if run is not None:
        held, folders = folders, [f for f in folders if f == run_folder(run)]
        if not folders:
            # (walk12: `gc --run` of a mistyped id named no run, where every other command that
            # takes a run id names the nearest: here, among the runs the store holds)
            near = near_run_ids(run, held)
            meant = f" (did you mean {' or '.join(near)}?)" if near else ""
            raise UsageError(f"{store.where} holds nothing of {run}{meant}; nothing to remove")
    cutoff = datetime.now(UTC) - timedelta(days=older_than)
    done = []
    listed: dict[str, list[str]] | None = None  # run ids the server lists, by their folder
    for folder in folders:
        mark = f"{folder}/{GC_MARK}"
        keys = [k for k in await asyncio.to_thread(store.keys, folder + "/") if k != mark]
        # (the pages its browser agents left are kept apart from its folder: xsky/artifacts.py)
        keys += await asyncio.to_thread(store.keys, f"{PAGES}{folder}/")
        if not keys:  # removed before: only its mark is left
            await asyncio.to_thread(_finished, store, mark)
            if run is not None:
                done.append(Collected(folder, 0, f"already {removed_by_gc(store, run)}", True))
            continue
        # The folder is the run's id made safe for a path: for most ids the id itself, for an
        # id with a ':' or over 120 characters its cleaned form and a hash — no id the server
        # knows, so asking about the folder said "unknown" of a running run and removed it.
        ids = [run] if run is not None else [folder]
        if run is None and _HASHED.search(folder):
            if listed is None:
                listed = await _ids_by_folder(client)
            ids = listed.get(folder, [])
            if not ids:
                # Perhaps an id as it is that only looks changed: the server knows it, or not.
                # Unknown, it goes only when nothing could have changed it into this folder
                # (a "." stripped from an id's end leaves no other trace: it was listed above).
                plain, _ = await _ended(client, folder)
                gone = plain == datetime.min.replace(tzinfo=UTC)
                if not gone or not _made_from_another_id(folder):
                    ids = [folder]
                else:
                    why = "kept: its folder may not be its run's id, and the server lists no run of it"
                    done.append(
                        Collected(folder, len(keys), f"{why} (remove it: gc --run ID)", False)
                    )
                    continue
        ended, why = await _ended_all(client, ids)
        removable = ended is not None and ended <= cutoff
        if removable:
            # Left behind so that reading the run later says what happened to its objects —
            # written first too: a gc stopped half way (killed, its machine lost) left a run
            # with objects missing and no word of why, and `log`/`result` blamed the setup
            # ("the artifact store is not the workers' store"). The next gc finishes it.
            said = {
                "removedAt": datetime.now(UTC).isoformat(timespec="seconds"),
                "objects": len(keys),
            }
            begun = {**said, "unfinished": True}
            await asyncio.to_thread(store.put, mark, json.dumps(begun).encode())
            for key in keys:
                await asyncio.to_thread(store.delete, key)
            await asyncio.to_thread(store.put, mark, json.dumps(said).encode())
        done.append(Collected(folder, len(keys), why, removable))
    return done


def _finished(store: ObjectStore, mark: str) -> None:
    """A mark a gc left unfinished (stopped after its last delete): said finished."""
    try:
        said = json.loads(store.get(mark))
    except (FileNotFoundError, ValueError):
        return
    if isinstance(said, dict) and said.pop("unfinished", False):
        store.put(mark, json.dumps(said).encode())


# The end of a folder name safe_component made from an id it had to change: "-" and 10 hex.
_HASHED = CHANGED_END


def _made_from_another_id(folder: str) -> bool:
    """Whether ``folder`` may be an id safe_component changed: shaped as every name it changes
    is (a "_" before its hash-like end, or the full length of an id cut short)."""
    return looks_changed(folder)


async def _ids_by_folder(client: Client) -> dict[str, list[str]]:
    """Every run the server still lists, by the folder its objects are under."""
    out: dict[str, list[str]] = {}
    async for wf in client.list_workflows("WorkflowType = 'LeaderWorkflow'"):
        ids = out.setdefault(run_folder(wf.id), [])
        if wf.id not in ids:
            ids.append(wf.id)
    return out


async def _ended_all(client: Client, ids: list[str]) -> tuple[datetime | None, str]:
    """When the last of the runs sharing a folder, and of the runs descended from them, ended
    (None: one of them is running)."""
    latest: tuple[datetime | None, str] = (datetime.min.replace(tzinfo=UTC), "")
    for run_id in ids:
        for ended, why in [await _ended(client, run_id), *await _descendants_ended(client, run_id)]:
            if ended is None:
                return None, why
            if latest[0] is not None and ended >= latest[0]:
                latest = (ended, why)
    return latest


async def _descendants_ended(client: Client, run_id: str) -> list[tuple[datetime | None, str]]:
    """When each follow-up run and fork of ``run_id`` (and theirs) ended: None for one that
    runs. None found on a server without xsky's search attributes (nothing can be asked)."""
    out: list[tuple[datetime | None, str]] = []
    try:
        async for wf in client.list_workflows(descendants_clause(run_id)):
            if wf.status in (None, ExecutionStatus.RUNNING):
                return [(None, f"kept: {wf.id}, which carries on from it, is running")]
            if wf.close_time is not None:
                out.append(
                    (
                        wf.close_time,
                        f"{wf.id}, which carried on from it, ended {wf.close_time:%Y-%m-%d %H:%M}",
                    )
                )
    except RPCError:
        return []
    return out


def _run_folders(store: ObjectStore) -> list[str]:
    # "_workspaces/…": named workspaces outlive the runs that use them
    return sorted({k.split("/", 1)[0] for k in store.keys("") if not k.startswith("_")})


async def _ended(client: Client, workflow_id: str) -> tuple[datetime | None, str]:
    try:
        desc = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return datetime.min.replace(tzinfo=UTC), "unknown to the server (its retention passed)"
        raise
    if (
        desc.raw_description.workflow_execution_info.status
        in (
            WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
            WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED,
        )
        or desc.close_time is None
    ):
        return None, "running: kept"
    return desc.close_time, f"ended {desc.close_time:%Y-%m-%d %H:%M}"
