"""The skills home on one host: its git repositories and SQLite cursors are files of one machine,
so with workers on several machines (an object store, no shared disk) one host runs the skill
pipeline (``worker.py --skills``) and its queue ``<queue>-skills`` is that host's alone.

One machine (no object store): every worker runs the pipeline, as before (they share the home).
Several: only a worker started with ``--skills``; and it refuses to start while a worker of
another host still serves the pipeline (two homes would split the library). docs/deployment.md, "Moving the
skills home", says how to move it.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.client import Client

from client.workers import live_pollers
from xsky.config import Settings


def serves_skills(settings: Settings, asked: bool | None) -> bool:
    """Does this worker run the skill pipeline: ``asked`` is ``--skills`` (True), ``--no-skills``
    (False) or neither (None: yes on one machine, no with an object store)."""
    if asked is not None:
        return asked
    return settings.store is None


def skills_identity(settings: Settings, pid: int) -> str:
    """The skill pipeline's worker identity: the host is what the check below reads."""
    return f"{pid}@{settings.host}"


async def skills_elsewhere(client: Client, settings: Settings) -> str | None:
    """The host whose worker serves the skill pipeline now, when it is not this one."""
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        for poller in await live_pollers(client, settings, settings.skills_queue, kind):
            host = poller.identity.rpartition("@")[2]
            if host and host != settings.host:
                return host
    return None


def elsewhere_message(settings: Settings, host: str) -> str:
    return (
        f"the skills home is on host {host}: its worker serves the skill pipeline on "
        f"'{settings.skills_queue}', and one host holds it (its git repositories and SQLite "
        f"cursors are files of that machine). Start this worker without --skills, or move the "
        f"home: stop {host}'s worker, copy its XSKY_SKILLS_HOME here, then start this one with "
        "--skills (docs/deployment.md, 'Moving the skills home')"
    )
