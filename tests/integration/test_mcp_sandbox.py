"""A stdio MCP server is confined like a shell command: it cannot read the worker's home, reach
the Temporal frontend (neither directly nor through the egress proxy, even with a rule naming
it), and it gets its ``${VAR}`` secrets without them entering the run's history."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from activities.sandbox import egress
from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.helpers import plan
from tests.integration.mcp_helpers import TEST_SERVER, agent, roles, write_settings
from tests.integration.test_mcp_secrets import texts
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

SECRET = "tok-7c1f-never-in-history"


async def test_a_stdio_server_sees_neither_home_nor_temporal_and_keeps_its_secret(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    home = tmp_path / "worker-home"
    home.mkdir()
    canary = home / ".netrc"
    canary.write_text("machine example.com password hunter2")
    monkeypatch.setenv("HOME", str(home))  # the worker's home (this process runs the worker)
    monkeypatch.setenv("XSKY_TEST_TOKEN", SECRET)
    host, port = env.address.rsplit(":", 1)
    server = {**TEST_SERVER, "env": {"TOKEN": "${XSKY_TEST_TOKEN}"}}
    role = {"prober": {"description": "probes its sandbox", "allowedTools": ["mcp__t"]}}
    # Even a rule naming the Temporal frontend opens no way to it.
    rules = {"allow": [f"network(domain:{host}:{port})"]}
    write_settings(tmp_path / "user-settings.json", {"t": server}, roles=role, permissions=rules)
    # The worker's egress proxy guards the Temporal server of the worker's settings: one started
    # by an earlier test of this process may guard another server; the next use starts it anew.
    egress.process().stop()
    await env.start_worker()
    probes = [
        {"tool": "mcp__t__probe", "path": str(canary), "host": host, "port": int(port)},
        {"tool": "mcp__t__probe", "url": f"http://{host}:{port}/"},
        {"tool": "mcp__t__env", "name": "TOKEN", "digest": True},
        {"tool": "mcp__t__env", "name": "XSKY_TEST_TOKEN"},
    ]
    handle = await env.start(
        plan(*(agent(str(n), "prober", "probe", p) for n, p in enumerate(probes, 1))),
        options=RunOptions(max_auto_replans=0),
        roles=roles(),
    )
    result = await run_outcome(handle)
    out = {a.id: a.result or a.error or "" for a in result.agents}
    assert "HOME=/tmp/home" in out["1"]
    assert f"read {canary}: refused (No such file or directory)" in out["1"]
    assert f"connect {host}:{port}: refused" in out["1"]
    assert f"get http://{host}:{port}/: refused" in out["2"] and "403" in out["2"]
    refusals = [e for e in result.permission_log if e.tool == "network" and e.effect == "deny"]
    assert any("Temporal" in e.reason for e in refusals), refusals
    assert out["3"] == hashlib.sha256(SECRET.encode()).hexdigest()  # it has its secret …
    assert out["4"] == ""  # … and nothing else of the worker's environment
    events = (await handle.fetch_history()).events
    history = "\n".join(t for e in events for t in texts(e))  # every payload decoded
    assert SECRET not in history and "hunter2" not in history
