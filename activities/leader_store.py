"""The leader's own activities: reading and writing blobs one part at a time, and what a
run asks its worker when it starts (``leader_setup``).

A run's state at continue-as-new, a plan too large for one payload and a large run's
results go to the artifact store in parts (xsky/artifacts.py ``BlobRef``); each part is one
activity on the leader's task queue, so no payload grows with the plan.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import UTC
from typing import Any

from temporalio import activity
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from activities.artifacts import open_store, read_blob
from xsky.artifacts import (
    BLOB_AGENT,
    BlobDrop,
    BlobPart,
    BlobPartRequest,
    BlobRef,
    run_folder,
)
from xsky.config import Settings
from xsky.leader.search import SEARCH_ATTRIBUTES
from xsky.runs import LeaderSetup, PendingAttempt, PendingAttempts
from xsky.settings_files import SettingsError, worker_layers


class LeaderStore:
    def __init__(self, settings: Settings, agents_here: bool = False):
        self.settings = settings
        self.store = open_store(settings)
        # This worker also runs agents of every kind on the leader's queue (worker.py).
        self.agents_here = agents_here

    @activity.defn(name="leader_put")
    async def put(self, part: BlobPart) -> None:
        await asyncio.to_thread(self.store.put_part, part)

    @activity.defn(name="leader_get")
    async def get(self, req: BlobPartRequest) -> str:
        try:
            return await asyncio.to_thread(self.store.read_text, req.ref.part_uri(req.index))
        except FileNotFoundError as e:
            raise ApplicationError(str(e), type="ArtifactMissing", non_retryable=True) from None

    @activity.defn(name="leader_seal")
    async def seal(self, ref: BlobRef) -> BlobRef:
        """The reference of what the store holds under ``ref``'s name, read back part by part:
        the state handed to the next execution is what was stored, not what a replay thinks it
        wrote (workflows/leader/io.py ``_save_state``)."""
        # Checked here, not in the workflow: this outcome is recorded, so a replay takes the
        # same path whatever it computes itself.
        try:
            await asyncio.to_thread(read_blob, self.store, ref)
        except FileNotFoundError as e:
            raise ApplicationError(str(e), type="ArtifactMissing", non_retryable=True) from None
        except ValueError as e:  # the digest of what the store holds is not the one written
            raise ApplicationError(str(e), type="StateNotStored", non_retryable=True) from None
        return ref

    @activity.defn(name="leader_drop")
    async def drop(self, req: BlobDrop) -> int:
        """Remove the run's blobs whose names start with ``prefix``, but ``keep``; how many
        parts went (the older states of a run continued as new, workflows/leader/io.py)."""
        return await asyncio.to_thread(self._drop, req)

    def _drop(self, req: BlobDrop) -> int:
        folder = f"{run_folder(req.run_id)}/{BLOB_AGENT}/"
        gone = 0
        for key in self.store.objects.keys(folder + req.prefix):
            name, _, index = key[len(folder) :].rpartition(".")
            if name != req.keep and index.isdigit() and "/" not in name:
                self.store.objects.delete(key)
                gone += 1
        return gone

    @activity.defn(name="leader_setup")
    async def setup(self) -> LeaderSetup:
        """Which of xsky's search attributes the server knows (a leader sets only those), and
        whether agents may run on the leader's own queue (eager dispatch, no poll per step)."""
        attributes: list[str] = []
        try:
            response = await activity.client().operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=activity.info().namespace)
            )
            known = {**response.custom_attributes, **response.system_attributes}
            attributes = [name for name in SEARCH_ATTRIBUTES if name in known]
        # no permission to ask (e.g. a restricted Cloud key): run without them
        except RPCError as e:
            activity.logger.warning("cannot list search attributes (%s): runs set none", e.message)
        delegate, deny = await asyncio.to_thread(self._delegation)
        return LeaderSetup(
            search_attributes=attributes,
            agents_here=self.agents_here,
            delegate=delegate,
            deny=deny,
            model=self.settings.coordinator_model or self.settings.model,
            workspace_hosts=self.settings.store is not None,
            payloads_by_reference=activity.client().data_converter.external_storage is not None,
        )

    @activity.defn(name="leader_attempts")
    async def attempts(self, task_ids: list[str]) -> PendingAttempts:
        """The agent activities of ``task_ids`` the server holds as pending in this run, each
        scheduled (no worker has started it) or started: asked by the stall ladder before a
        rung, so a task that only waits for a worker is not taken for a stalled one
        (xsky/leader/ladder.py ``attempts_seen``). The leader's own run, described by the
        server; only the tasks asked about are returned (a large run's pending are many)."""
        wanted = set(task_ids)
        info = activity.info()
        if info.workflow_id is None:  # not a leader's: no run to describe
            return PendingAttempts()
        described = await (
            activity.client()
            .get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
            .describe()
        )
        return PendingAttempts(
            attempts=[
                _pending(p)
                for p in described.raw_description.pending_activities
                if p.activity_type.name == "run_agent" and _task_of(p.activity_id) in wanted
            ]
        )

    def _delegation(self) -> tuple[list[str], list[str]]:
        """The rules this worker's user settings delegate to the leader, and its deny rules
        (a broken file delegates nothing: the worker's start already said what is wrong)."""
        try:
            layers = worker_layers(self.settings)
        except SettingsError as e:
            activity.logger.warning("settings not read, nothing delegated: %s", e)
            return [], []
        return (
            [r for layer in layers for r in layer.settings.permissions.delegate],
            [r for layer in layers for r in layer.settings.permissions.deny],
        )

    def all(self) -> list[Callable[..., Any]]:
        return [self.put, self.get, self.seal, self.drop, self.setup, self.attempts]


# The server's pending activity states (temporalio.api.enums.v1.PendingActivityState): an
# attempt paused by an operator has not started either; one asked to pause still runs.
_STATES: dict[int, str] = {
    1: "scheduled",
    2: "started",
    3: "cancel_requested",
    4: "scheduled",
    5: "started",
}


# An attempt's activity id (workflows/leader/io.py agent_activity, hosts.py's reroutes).
_ATTEMPT_ID = re.compile(r"(.+)-v\d+-d\d+(?:-r\d+)?")


def _task_of(activity_id: str) -> str | None:
    found = _ATTEMPT_ID.fullmatch(activity_id)
    return found.group(1) if found else None


def _pending(p: Any) -> PendingAttempt:
    def at(field: str) -> Any:
        return getattr(p, field).ToDatetime(tzinfo=UTC) if p.HasField(field) else None

    return PendingAttempt(
        activity_id=p.activity_id,
        state=_STATES.get(p.state, "scheduled"),  # type: ignore[arg-type]
        attempt=p.attempt or 1,
        scheduled_at=at("scheduled_time"),
        started_at=at("last_started_time"),
        heartbeat_at=at("last_heartbeat_time"),
        worker=p.last_worker_identity or None,
        # (PAUSED, PAUSE_REQUESTED, or the server's flag: an operator's activity pause)
        paused=bool(p.paused) or p.state in (4, 5),
    )
