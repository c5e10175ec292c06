"""Temporal's External Storage over xsky's store: a payload over the threshold (a large plan
given to a run, a large replan or answer, a large result of a run) is written to the store and
only a small reference goes into the workflow's history, so nothing a person or a client sends
meets Temporal's 2 MiB payload limit, and the history stays small.

The driver writes each payload once, content-addressed (``<run>/_payloads/<sha256>`` when the
payload is for a workflow, so ``starter.py gc`` removes it with the run; ``_payloads/<sha256>``
otherwise). Every process (the client that starts a run, each worker, a replayer) reads the store
its own settings name (``XSKY_STORE`` or ``XSKY_ARTIFACTS``), as it does for results: the
deployment's processes must share the store, the same rule as for everything else kept outside
Temporal.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)

from activities.storage import open_objects
from xsky.artifacts import run_folder
from xsky.config import load_settings
from xsky.storage import ObjectStore

# Temporal's own default: a payload this size or larger goes to the store. The leader's own
# blobs travel in parts under it (workflows/leader/blobs.py), so they stay in history and a
# recorded history replays without the store.
PAYLOAD_THRESHOLD = 256 * 1024
FOLDER = "_payloads"

_stores: dict[tuple[str | None, str], ObjectStore] = {}


def current_store() -> ObjectStore:
    """The store this process's settings name now (the environment may change in tests)."""
    settings = load_settings()
    key = (settings.store, str(settings.artifacts.resolve()))
    if key not in _stores:
        _stores[key] = open_objects(settings)
    return _stores[key]


def payload_key(context: StorageDriverStoreContext, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    target = context.target
    if isinstance(target, StorageDriverWorkflowInfo) and target.id:
        return f"{run_folder(target.id)}/{FOLDER}/{digest}"
    return f"{FOLDER}/{digest}"


class StoreDriver(StorageDriver):
    """Payloads in xsky's store (the local directory or an S3-compatible store): the one this
    process's settings name when it stores or retrieves, or ``store`` when given."""

    def __init__(self, store: ObjectStore | None = None):
        self._store = store

    def _objects(self) -> ObjectStore:
        return self._store or current_store()

    def name(self) -> str:
        return "xsky-store"

    def type(self) -> str:
        return "xsky-store"

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        store = await asyncio.to_thread(self._objects)
        claims = []
        for payload in payloads:
            data = payload.SerializeToString(deterministic=True)
            key = payload_key(context, data)
            # content-addressed: the same payload stored twice is one object, written once
            if not await asyncio.to_thread(store.exists, key):
                await asyncio.to_thread(store.put, key, data, sync=True)
            claims.append(StorageDriverClaim({"key": key}))
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        store = await asyncio.to_thread(self._objects)
        out = []
        for claim in claims:
            key = claim.claim_data["key"]
            try:
                data = await asyncio.to_thread(store.get, key)
            except FileNotFoundError:
                raise FileNotFoundError(
                    f"payload {key} is not in {store.where}: every client and worker of one "
                    "deployment must use the same store (XSKY_STORE, or XSKY_ARTIFACTS on a "
                    "shared disk)"
                ) from None
            out.append(Payload.FromString(data))
        return out


def external_storage() -> ExternalStorage:
    return ExternalStorage(drivers=[StoreDriver()], payload_size_threshold=PAYLOAD_THRESHOLD)
