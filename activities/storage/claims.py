"""Which host holds a workspace, for every run that uses it: claims kept in the store.

A workspace lives on one host at a time, and several runs may use one workspace (runs that
name the same ``--workspace``, a follow-up run in the workspace of the run it follows). Were
each run to claim a host for itself, two runs could hold one workspace on two hosts, and what
an agent of one run planted on a host would wait there for an agent of another. So a workspace
(its store key, snapshots.workspace_key) has claims, ``<key>/claims/<generation>``, written only
with the store's create-only write (``put_new``): the highest generation names the holder. A
claim answers with the holder while it is alive; a holder that is lost (the run's leader found
its queue unserved, or no worker of it has beaten lately) is replaced by writing the next
generation — of machines that race for it, one write succeeds, and the others read the winner.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from xsky.storage import ObjectStore

ROUNDS = 8  # races lost in a row before giving up (each lost race means a new holder was named)


@dataclass(frozen=True)
class Holder:
    host: str
    queue: str
    generation: int


class ClaimError(RuntimeError):
    """No claim could be settled; the message says why."""


def _folder(key: str) -> str:
    return f"{key}/claims/"


def holder(store: ObjectStore, key: str) -> Holder | None:
    """The host that holds the workspace ``key`` now (None: nobody claimed it yet)."""
    generations = []
    for name in store.keys(_folder(key)):
        tail = name[len(_folder(key)) :]
        if tail.isdigit():
            generations.append(int(tail))
    if not generations:
        return None
    top = max(generations)
    try:
        record = json.loads(store.get(_name(key, top)))
        return Holder(str(record["host"]), str(record["queue"]), top)
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return Holder("", "", top)  # unreadable: a holder nobody can reach


def _name(key: str, generation: int) -> str:
    return f"{_folder(key)}{generation:010d}"


def take(store: ObjectStore, key: str, generation: int, me: Holder, run_id: str) -> bool:
    """Write claim ``generation`` naming ``me``; False when another machine wrote it first."""
    record = {"host": me.host, "queue": me.queue, "run": run_id, "at": time.time()}
    return store.put_new(_name(key, generation), json.dumps(record).encode())


async def settle(
    store: ObjectStore,
    key: str,
    me: Holder,
    lost: str | None,
    alive: Callable[[str], Awaitable[bool]],
    run_id: str,
) -> Holder:
    """The holder of workspace ``key``: the current one when it is alive and not the ``lost``
    queue, else ``me`` once my claim of the next generation is written."""
    for _ in range(ROUNDS):
        now = await asyncio.to_thread(holder, store, key)
        if now is not None:
            if now.queue == me.queue:
                return now
            if now.queue and now.queue != lost and await alive(now.queue):
                return now
        generation = 0 if now is None else now.generation + 1
        if await asyncio.to_thread(take, store, key, generation, me, run_id):
            return Holder(me.host, me.queue, generation)
        # another machine claimed it at this generation meanwhile: read who
    raise ClaimError(
        f"the workspace {key} changed hands {ROUNDS} times while this worker claimed it; "
        "the claim is tried again"
    )
