"""The worker's MCP sessions without Temporal, against the sandboxed test server: a discovery is
recorded once per run (again once the server's ttlMs passed), sessions are pooled per server
and place (one process per workspace), and a server that dies under a call is started once
more — then the call fails with the end of its stderr."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.mcp import discovery
from activities.mcp.launch import Place
from activities.mcp.pool import McpPool, McpUnavailable
from activities.mcp.servers import ServerEntry, resolve
from activities.sandbox import bwrap
from activities.sandbox import workspace as workspaces
from tests.integration.mcp_helpers import READ_ONLY, TEST_SERVER
from xsky.security.mcp import McpServerSpec

pytestmark = pytest.mark.integration


def place(folder: Path) -> Place:
    who = bwrap.identity()
    ws = workspaces.make(folder, *((who.uid, who.gid) if who.drop else (None, None)))
    return Place(
        ws, bwrap.Confinement(workspace=ws, read_only_paths=tuple(map(Path, READ_ONLY))), None, None
    )


def launch(ws: Path, **env: str):
    spec = McpServerSpec.model_validate({**TEST_SERVER, "env": env})
    return resolve(ServerEntry("t", spec, "test"), ws)


async def test_a_discovery_is_recorded_for_the_run_and_again_after_the_servers_ttl(tmp_path: Path):
    store = ArtifactStore(tmp_path / "artifacts")
    here = place(tmp_path / "ws")
    server = launch(here.workspace, XSKY_TEST_TTL_MS="1500")
    pool = McpPool()
    try:
        first = await discovery.for_run(store, "run-1", pool, server, here)
        again = await discovery.for_run(store, "run-1", pool, server, here)
        other = await discovery.for_run(store, "run-2", pool, server, here)
        assert first.ttl_ms == 1500 and again.discovered_at == first.discovered_at
        assert other.discovered_at > first.discovered_at  # each run has its own record
        await asyncio.sleep(1.6)
        later = await discovery.for_run(store, "run-1", pool, server, here)
        assert later.discovered_at > first.discovered_at
    finally:
        await pool.close()


async def test_sessions_are_pooled_per_place_and_a_dying_server_is_restarted_once(tmp_path: Path):
    one, two = place(tmp_path / "one"), place(tmp_path / "two")
    pool = McpPool()
    try:
        count = [
            (await pool.call(launch(p.workspace), p, "count", {})).content[0].text  # type: ignore[union-attr]
            for p in (one, one, two)
        ]
        assert count == ["1", "2", "1"]  # one server per workspace, each keeping its memory
        assert {s.place.workspace for s in pool.sessions()} == {one.workspace, two.workspace}
        # Dies once: started again, and the call answered.
        answer = await pool.call(launch(one.workspace), one, "crash", {"times": 1})
        assert answer.content[0].text == "answered after 1 crashes"  # type: ignore[union-attr]
        with pytest.raises(McpUnavailable) as e:
            await pool.call(launch(two.workspace), two, "crash", {"times": 5})
        assert "ended during crash twice (it was started again once)" in str(e.value)
        assert "its stderr ended: test server: crashing on purpose (2 of 5)" in str(e.value)
        assert len((two.workspace / "crashes.log").read_text().splitlines()) == 2
    finally:
        await pool.close()
    assert not pool.sessions()
