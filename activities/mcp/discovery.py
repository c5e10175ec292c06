"""What an MCP server offers a run, recorded once per run (or again once its ``ttlMs`` passed).

The record (:class:`xsky.security.mcp.McpDiscovery`: tool names, descriptions, JSON schemas,
annotations, the server's ``ttlMs``) is kept in the run's folder of the artifact store, so
every agent and every attempt of the run sees the tool list the first one saw, a retried
attempt needs no live server to know its tools, and no workflow code changes: the leader
never sees a server. Another configuration of the server (its digest) is discovered anew.

What a server says of its tools is scrubbed of the worker's secrets before it is recorded (a
description could quote the server's environment), and a tool that cannot be named
unambiguously is not recorded: the record says why (:func:`xsky.security.mcp.tool_infos`),
and the worker's log says it once.
"""

from __future__ import annotations

import asyncio
import logging
import time

from activities.artifacts import ArtifactStore
from activities.mcp.launch import Place, Record
from activities.mcp.pool import McpPool, McpUnavailable
from activities.mcp.servers import Launch
from activities.sandbox import secrets
from xsky.artifacts import artifact_path
from xsky.security.mcp import NAMING, McpDiscovery, tool_infos

log = logging.getLogger("xsky.mcp")
_REFUSALS_LOGGED: set[str] = set()

RECORDS = "_mcp"  # the run's artifact folder of discoveries
MAX_PAGES = 50  # a server whose tools/list never ends is not followed for ever


def record_name(server: str) -> str:
    return f"tools-{server}.json"


def record_key(run_id: str, server: str) -> str:
    """Where the run's record of a server's tools is in the store."""
    return artifact_path(run_id, RECORDS, record_name(server))


def recorded(store: ArtifactStore, run_id: str, server: str) -> McpDiscovery | None:
    key = record_key(run_id, server)
    try:
        return McpDiscovery.model_validate_json(store.objects.get(key))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        log.warning("ignoring an unreadable MCP discovery %s in %s: %s", key, store.where, e)
        return None


async def discover(
    pool: McpPool,
    launch: Launch,
    place: Place,
    record: Record | None,
    holder: object | None = None,
) -> McpDiscovery:
    """Ask the server now: every page of its tools, and whether it has resources and prompts
    (``holder``: the attempt that holds the session it starts)."""
    session = await pool.session(launch, place, record, holder)
    client = session.client
    if client is None:
        raise McpUnavailable(f"MCP server {launch.name} is not connected")
    tools: list[dict[str, object]] = []
    cursor: str | None = None
    ttl: int | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        ttl = page.ttl_ms if ttl is None else min(ttl, page.ttl_ms)
        tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    caps = client.server_capabilities
    offered, refused = tool_infos(launch.name, secrets.scrub_value(tools))
    for sentence in refused:
        if sentence not in _REFUSALS_LOGGED:
            _REFUSALS_LOGGED.add(sentence)
            log.warning("%s", sentence)
    return McpDiscovery(
        server=launch.name,
        config_digest=launch.digest,
        tools=offered,
        refused=refused,
        naming=NAMING,
        resources=caps.resources is not None,
        prompts=caps.prompts is not None,
        protocol=client.protocol_version,
        ttl_ms=ttl or None,
        discovered_at=time.time(),
    )


async def for_run(
    store: ArtifactStore,
    run_id: str,
    pool: McpPool,
    launch: Launch,
    place: Place,
    record: Record | None = None,
    holder: object | None = None,
) -> McpDiscovery:
    """The run's record of this server's offer: the stored one while fresh, else asked and stored."""
    found = recorded(store, run_id, launch.name)
    if found is not None and found.fresh(time.time(), launch.digest):
        return found
    fresh = await discover(pool, launch, place, record, holder)
    await asyncio.to_thread(
        store.put_text,
        run_id,
        RECORDS,
        record_name(launch.name),
        fresh.model_dump_json(),
    )
    return fresh
