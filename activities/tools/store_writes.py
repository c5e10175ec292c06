"""A tool's write to the artifact store (a screenshot, an MCP tool's image or long result, a
browser page left for the next agent), made off the worker's event loop.

Made on it, a slow or paused store (S3: obstore retries one PUT for up to 3 minutes) stopped
every attempt of the worker — their heartbeats, their leases' renewals, a leader's workflow
tasks on the same worker — until the server took them all for lost (issue 37's class, chaos11).
In an attempt the write is waited for as the attempt's own writes are
(activities/agents/storage.py: heartbeating, the cause on the board, a full or failing store
tried again until the attempt's deadline); outside one (a tool tried on its own) it is simply
made in a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from activities.agents.beat import Beat
from activities.agents.storage import stored
from activities.tools import ToolContext

T = TypeVar("T")


async def store_write(ctx: ToolContext, what: str, write: Callable[[], T]) -> T:
    """``write()`` (a call of ``ctx.store``), in a thread; waited for as an attempt's writes
    are when the tool runs in one. ``what``: what the board says it waits to write."""
    beat = ctx.heartbeat
    if isinstance(beat, Beat):
        return await stored(beat, ctx.store.where, what, write)
    return await asyncio.to_thread(write)
