"""Agents calling tools of real MCP servers: an LLM agent (the fake OpenAI-compatible server
scripts its calls) and direct ``<config>`` agents, against the test server written with the
``mcp`` SDK, npm's server-filesystem (confined to the workspace) and server-everything (over
stdio, and over streamable HTTP through the egress proxy)."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.mcp.discovery import record_key
from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.helpers import plan
from tests.integration.mcp_helpers import (
    EVERYTHING,
    FILESYSTEM,
    MCP_ROLE,
    TEST_SERVER,
    agent,
    everything_over_http,
    installed,
    roles,
    write_settings,
)
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


def tool_outputs(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


async def test_an_llm_agent_calls_a_sandboxed_stdio_servers_tools(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    write_settings(tmp_path / "user-settings.json", {"t": TEST_SERVER}, roles=MCP_ROLE)
    script = [
        calls(("mcp__t__add", {"a": 2, "b": 3}), ("mcp__t__weather", {"city": "Oslo"})),
        calls(("mcp__t__picture", {}), ("mcp__t__fail", {"reason": "on purpose"})),
        calls(("mcp__t__add", {"a": "two"}), ("mcp__t__count", {})),
        calls(("mcp__t__count", {}), ("mcp_read", {"server": "t", "uri": "note://hello"})),
    ]

    def responder(req: dict, i: int) -> Reply:
        turn = turn_of(req)
        return script[turn] if turn < len(script) else text(" | ".join(tool_outputs(req)))

    fake_llm.responder = responder
    await env.start_worker()
    result = await env.run(plan(agent("1", "mcpuser", "use the tools")), timeout=90, roles=roles())
    assert result.status == "completed", result.summary
    first = fake_llm.requests[0]
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    # the server's own names, descriptions and JSON schemas; mcp_list/mcp_read for its resources
    assert tools["mcp__t__add"]["description"] == "Add two whole numbers."
    assert tools["mcp__t__add"]["parameters"]["required"] == ["a", "b"]
    assert {"mcp__t__slow", "mcp__t__remove", "mcp_list", "mcp_read"} <= set(tools)
    out = tool_outputs(fake_llm.requests[-1])
    assert out[0] == "5" and json.loads(out[1]) == {"city": "Oslo", "celsius": 21.5}
    assert "[image, image/png, 70 bytes, stored as artifact:" in out[2]
    assert out[3].startswith("ERROR: ") and "failed on purpose: on purpose" in out[3]
    assert out[4].startswith("ERROR: the arguments of mcp__t__add do not fit its schema")
    assert (out[5], out[6]) == ("1", "2")  # one pooled server: it kept its count between calls
    assert "hello from a resource" in out[7]

    (report,) = result.agents
    (png,) = [a for a in report.artifacts if a.media_type == "image/png"]
    assert ArtifactStore(env.settings.artifacts).read_bytes(png).startswith(b"\x89PNG")
    record = json.loads(
        ArtifactStore(env.settings.artifacts).objects.get(record_key(result.workflow_id, "t"))
    )
    assert record["server"] == "t" and len(record["tools"]) == 10  # discovered once, for the run
    gated = [e for e in result.permission_log if e.tool.startswith("mcp")]
    assert gated and all(e.effect == "allow" for e in gated), gated


async def test_direct_agents_call_mcp_tools_and_a_tool_error_fails_once(env: Env, tmp_path: Path):
    write_settings(tmp_path / "user-settings.json", {"t": TEST_SERVER}, roles=MCP_ROLE)
    await env.start_worker()
    result = await env.run(
        plan(
            agent("1", "mcpuser", "add", {"tool": "mcp__t__add", "a": 1, "b": 2}),
            agent("2", "mcpuser", "weather", {"tool": "mcp__t__weather", "city": "Rome"}),
            agent("3", "mcpuser", "fail", {"tool": "mcp__t__fail", "reason": "bad"}),
            agent("4", "mcpuser", "none", {"tool": "mcp__t__nothing"}),
        ),
        options=RunOptions(max_auto_replans=0),
        timeout=90,
        roles=roles(),
    )
    by_id = {a.id: a for a in result.agents}
    assert by_id["1"].status == "completed" and by_id["1"].result == "3"
    assert json.loads(by_id["2"].result or "") == {"city": "Rome", "celsius": 21.5}
    assert by_id["3"].status == "failed" and by_id["3"].attempts == 1
    assert "mcp__t__fail answered with an error" in (by_id["3"].error or "")
    assert by_id["4"].status == "failed" and "has no tool named mcp__t__nothing" in (
        by_id["4"].error or ""
    )


async def test_the_filesystem_server_works_in_the_workspace_and_nowhere_else(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    installed()
    outside = tmp_path / "outside.txt"
    outside.write_text("not for agents")
    role = {"files": {"description": "files over MCP", "allowedTools": ["mcp__fs"]}}
    # write_file is destructive (its annotation): asked for, unless a rule allows it
    allow = {"allow": ["mcp__fs__write_file"]}
    write_settings(
        tmp_path / "user-settings.json", {"fs": FILESYSTEM}, roles=role, permissions=allow
    )
    run_id = f"xsky-fs-{uuid.uuid4().hex[:8]}"
    workspace = env.home / "runs" / run_id / "workspace"

    def responder(
        req: dict, i: int
    ) -> Reply:  # agent 2 reads what agent 1 wrote, by a model's call
        if turn_of(req) == 0:
            return calls(("mcp__fs__read_text_file", {"path": f"{workspace}/notes.txt"}))
        return text(tool_outputs(req)[-1])

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(
        plan(
            agent(
                "1",
                "files",
                "write",
                {
                    "tool": "mcp__fs__write_file",
                    "path": f"{workspace}/notes.txt",
                    "content": "kept",
                },
            ),
            agent("2", "files", "read the notes", depends="1"),
            agent(
                "3", "files", "escape", {"tool": "mcp__fs__read_text_file", "path": str(outside)}
            ),
        ),
        options=RunOptions(max_auto_replans=0),
        workflow_id=run_id,
        roles=roles(),
    )
    result = await asyncio.wait_for(run_outcome(handle), 90)
    by_id = {a.id: a for a in result.agents}
    assert by_id["2"].result == "kept" and (workspace / "notes.txt").read_text() == "kept"
    assert by_id["3"].status == "failed" and "outside allowed directories" in (
        by_id["3"].error or ""
    )
    assert "not for agents" not in json.dumps([a.wire() for a in result.agents])


async def test_server_everything_over_stdio_and_over_http_through_the_egress_proxy(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    installed()
    with everything_over_http() as port:
        servers = {
            "every": EVERYTHING,
            "web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
        }
        role = {
            "both": {
                "description": "everything",
                "allowedTools": ["mcp__every", "mcp__web__get-sum"],
            }
        }
        write_settings(tmp_path / "user-settings.json", servers, roles=role)

        def responder(req: dict, i: int) -> Reply:
            if turn_of(req) == 0:
                return calls(
                    ("mcp__every__echo", {"message": "hi"}),
                    ("mcp__web__get-sum", {"a": 2, "b": 40}),
                    ("mcp__every__get-resource-links", {"count": 1}),
                )
            return text(" | ".join(tool_outputs(req)))

        fake_llm.responder = responder
        await env.start_worker()
        task = plan(agent("1", "both", "echo and add"))
        # A loopback server is reached only once the run (or the worker's rules) opens it.
        refused = await env.run(
            task, options=RunOptions(max_auto_replans=0), timeout=90, roles=roles()
        )
        assert refused.status == "failed"
        assert f"--allow-host 127.0.0.1:{port}" in (refused.agents[0].error or "")
        result = await env.run(
            task, options=RunOptions(allow_hosts=[f"127.0.0.1:{port}"]), timeout=90, roles=roles()
        )
    assert result.status == "completed", result.summary
    names = {t["function"]["name"] for t in fake_llm.requests[-1]["tools"]}
    assert "mcp__every__get-tiny-image" in names and "mcp__web__get-sum" in names
    assert "mcp__web__echo" not in names  # the role holds one tool of that server
    echo, total, links = (result.agents[0].result or "").split(" | ")
    assert (echo, total) == ("Echo: hi", "The sum of 2 and 40 is 42.")
    assert "[resource link: Blob Resource 1 demo://resource/dynamic/blob/1 (text/plain" in links
    assert any(
        e.tool == "network" and f"127.0.0.1:{port}" in e.arguments for e in result.permission_log
    )
