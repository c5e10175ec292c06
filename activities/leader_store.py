"""The leader's own activities: reading and writing blobs one part at a time.

A run's state at continue-as-new, a plan too large for one payload and a large run's
results go to the artifact store in parts (xsky/artifacts.py ``BlobRef``); each part is one
activity on the leader's task queue, so no payload grows with the plan.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore
from xsky.artifacts import BlobPart, BlobPartRequest
from xsky.config import Settings
from xsky.search import SEARCH_ATTRIBUTES


class LeaderStore:
    def __init__(self, settings: Settings):
        self.store = ArtifactStore(settings.artifacts)

    @activity.defn(name="leader_put")
    async def put(self, part: BlobPart) -> None:
        await asyncio.to_thread(self.store.put_part, part)

    @activity.defn(name="leader_get")
    async def get(self, req: BlobPartRequest) -> str:
        try:
            return await asyncio.to_thread(self.store.read_text, req.ref.part_uri(req.index))
        except FileNotFoundError as e:
            raise ApplicationError(str(e), type="ArtifactMissing", non_retryable=True) from None

    @activity.defn(name="leader_search_attributes")
    async def search_attributes(self) -> list[str]:
        """Which of xsky's search attributes the server knows (a leader sets only those)."""
        response = await activity.client().operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=activity.info().workflow_namespace))
        known = {**response.custom_attributes, **response.system_attributes}
        return [name for name in SEARCH_ATTRIBUTES if name in known]

    def all(self) -> list[object]:
        return [self.put, self.get, self.search_attributes]
