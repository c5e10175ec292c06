"""The worker's MCP sessions without Temporal, against the sandboxed test servers: a discovery is
recorded once per run (again once the server's ttlMs passed), sessions are pooled per server
and place (one process per workspace) and held by the attempts that use them — the last one
to let go ends the server and everything it started —, and a server that dies under a call is
started once more — then the call fails with the end of its stderr.

Before sessions were attempt-scoped, a stdio server outlived its attempt (until 600 s idle) and
kept its memory for the next one; now the next attempt starts it anew
(``test_a_stdio_session_ends_with_the_last_attempt_holding_it`` is the new contract).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.mcp import discovery
from activities.mcp.launch import Place
from activities.mcp.pool import McpPool, McpUnavailable
from activities.mcp.servers import ServerEntry, resolve
from activities.sandbox import bwrap, freeze, limits
from activities.sandbox import workspace as workspaces
from tests.integration.eventually import eventually
from tests.integration.mcp_helpers import HOSTILE, READ_ONLY, TEST_SERVER
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
    attempt = object()
    try:
        count = [
            (await pool.call(launch(p.workspace), p, "count", {}, holder=attempt)).content[0].text  # type: ignore[union-attr]
            for p in (one, one, two)
        ]
        assert count == ["1", "2", "1"]  # one server per workspace, each keeping its memory
        assert {s.place.workspace for s in pool.sessions()} == {one.workspace, two.workspace}
        # Dies once: started again, and the call answered.
        answer = await pool.call(launch(one.workspace), one, "crash", {"times": 1}, holder=attempt)
        assert answer.content[0].text == "answered after 1 crashes"  # type: ignore[union-attr]
        with pytest.raises(McpUnavailable) as e:
            await pool.call(launch(two.workspace), two, "crash", {"times": 5}, holder=attempt)
        assert "ended during crash twice (it was started again once)" in str(e.value)
        assert "its stderr ended: test server: crashing on purpose (2 of 5)" in str(e.value)
        assert len((two.workspace / "crashes.log").read_text().splitlines()) == 2
    finally:
        await pool.close()
    assert not pool.sessions()


def pids_named(marker: str) -> list[int]:
    """The processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_a_stdio_session_ends_with_the_last_attempt_holding_it(tmp_path: Path):
    here = place(tmp_path / "ws")
    server = launch(here.workspace)
    hostile = resolve(
        ServerEntry("h", McpServerSpec.model_validate(HOSTILE), "test"), here.workspace
    )
    pool = McpPool()
    first, second = object(), object()
    marker = f"xsky-spawned-{uuid.uuid4().hex[:8]}"

    async def count(holder: object) -> str:
        return (await pool.call(server, here, "count", {}, holder=holder)).content[0].text  # type: ignore[union-attr]

    try:
        # Two attempts at once share one server (its memory) ...
        assert [await count(first), await count(second)] == ["1", "2"]
        await pool.call(hostile, here, "spawn", {"marker": marker}, holder=first)

        async def spawned() -> None:  # (seen a moment later under load: a fresh clone's run)
            assert pids_named(marker)

        await eventually(spawned, 10)
        # Each server's cgroup is frozen while the workspace is snapshotted (where cgroups are).
        cgroups = limits.hierarchy() is not None
        assert freeze.registered(here.workspace) == (2 if cgroups else 0)
        # ... which outlives the first to end, not the last; the server only the first used
        # has ended, and what it started with it, by the time release returns.
        await pool.release(first)
        assert not pids_named(marker)
        assert [s.launch.name for s in pool.sessions()] == ["t"]
        assert freeze.registered(here.workspace) == (1 if cgroups else 0)
        assert await count(second) == "3"
        await pool.release(second)
        assert not pool.sessions() and freeze.registered(here.workspace) == 0
        # A later attempt starts the server anew: its memory went with it.
        third = object()
        assert await count(third) == "1"
        await pool.release(third)
    finally:
        await pool.close()
