"""worker.py whose leader writes each blob part slowly (XSKY_TEST_PUT_DELAY seconds): a wide,
known window in which a test kills the worker while a run's state is being written.

Run as ``python tests/integration/slow_store_worker.py <worker.py's arguments>``."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from temporalio import activity

import worker
from activities.leader_store import LeaderStore
from xsky.artifacts import BlobPart

DELAY = float(os.environ.get("XSKY_TEST_PUT_DELAY", "0.3"))


class SlowStore(LeaderStore):
    @activity.defn(name="leader_put")
    async def put(self, part: BlobPart) -> None:
        await asyncio.sleep(DELAY)
        await super().put(part)


if __name__ == "__main__":
    worker.LeaderStore = SlowStore  # type: ignore[misc]
    sys.exit(worker.main())
