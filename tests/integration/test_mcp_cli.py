"""``starter.py mcp list`` / ``mcp check``: each configured server started as a worker starts it,
with its tools, or one sentence saying why it cannot be used — its command is missing, it
exits, it does not answer, a variable is unset, the egress proxy refuses it, or it is a
project's server the worker's settings have not enabled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from activities.sandbox.temporal_ports import grpc_port
from cli.devserver import free_port
from tests.conftest import Env
from tests.integration.mcp_helpers import MCP_ROLE, TEST_SERVER, write_settings
from tests.integration.test_cli_runs import starter
from xsky.config import server_ports

pytestmark = pytest.mark.integration


async def test_mcp_list_and_check_show_tools_or_say_why_not(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Nothing listens there, and it is none of the ports agents' egress refuses as the test
    # server's (its Web UI, HTTP API and metrics ports: once, a free port was one of them).
    refused = set(server_ports(grpc_port(env.address)))
    port = next(p for p in iter(free_port, None) if p not in refused)
    servers = {
        "t": TEST_SERVER,
        "missing": {"command": "no-such-mcp-server"},
        "exits": {"command": "sh", "args": ["-c", "echo bad config >&2; exit 4"]},
        # node's own words when the server's files are where the sandbox does not look
        "unseen": {
            "command": "sh",
            "args": [
                "-c",
                "echo \"Error: Cannot find module '/home/x/node_modules/s/index.js'\" >&2; exit 1",
            ],
        },
        "secret": {"command": "node", "env": {"T": "${XSKY_NOT_SET_ANYWHERE}"}},
        "web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
    }
    write_settings(tmp_path / "user-settings.json", servers, roles=MCP_ROLE)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": "npx"}}}))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))

    # The default wait: a Python server in the sandbox may take seconds to start on a busy
    # machine (3 s was once too short for it).
    code, out, err = await starter(env, "mcp", "list", "--json")
    assert code == 0, err
    found = {s["name"]: s for s in json.loads(out)}
    says = {name: s["error"] for name, s in found.items()}
    assert found["t"]["state"] == "ok", says["t"]
    assert "mcp__t__add" in {t["name"] for t in found["t"]["tools"]}
    assert "'no-such-mcp-server' was not found inside the sandbox" in says["missing"]
    assert (
        "exited before it answered the MCP handshake; its stderr ended: bad config" in says["exits"]
    )
    assert "Cannot find module" in says["unseen"]
    assert "add the folder its files are in there" in says["unseen"]
    assert "security.read_only_paths" not in says["exits"]  # no hint where none fits
    assert (
        "${XSKY_NOT_SET_ANYWHERE}, which is not set in the worker's environment" in says["secret"]
    )
    assert f"--allow-host 127.0.0.1:{port}" in says["web"]
    assert found["proj"]["state"] == "disabled" and "enabledMcpjsonServers" in says["proj"]
    # A server that never answers is given up on after --timeout, and said so.
    write_settings(
        tmp_path / "user-settings.json",
        {**servers, "hangs": {"command": "sleep", "args": ["60"]}},
        roles=MCP_ROLE,
    )
    code, out, err = await starter(env, "mcp", "check", "hangs", "--timeout", "3")
    assert code != 0 and "did not answer the MCP handshake within 3s" in err, (code, out, err)

    code, out, err = await starter(env, "mcp", "check", "t")
    assert (
        code == 0 and "mcp__t__remove [destructive]" in out and "mcp__t__count [read-only]" in out
    )
    code, out, _ = await starter(env, "permissions", "check", "mcp__t__remove", "--role", "mcpuser")
    assert code == 0 and "marks mcp__t__remove destructive" in out and "\nASK" in out


async def test_validate_says_a_direct_agents_mcp_tool_its_server_does_not_have(
    env: Env, tmp_path: Path
):
    """A typo in a direct agent's MCP tool passed `validate` and failed the run's agent at once:
    the servers this machine configures are asked, and a tool none offers is a warning at the
    agent's line with the nearest name (as is a server none configures); a plan that calls
    only real tools says nothing more."""
    write_settings(tmp_path / "user-settings.json", {"t": TEST_SERVER}, roles=MCP_ROLE)
    plan = tmp_path / "plan.xml"
    plan.write_text(
        '<workflow name="m">\n'
        '  <agent name="mcpuser" id="1"><task>add</task>\n'
        '    <config>{"tool": "mcp__t__ad", "a": 1, "b": 2}</config></agent>\n'
        '  <agent name="mcpuser" id="2"><task>add</task>\n'
        '    <config>{"tool": "mcp__tt__add", "a": 1, "b": 2}</config></agent>\n'
        '  <agent name="mcpuser" id="3"><task>add</task>\n'
        '    <config>{"tool": "mcp__t__add", "a": 1, "b": 2}</config></agent>\n'
        "</workflow>\n"
    )
    code, out, err = await starter(env, "validate", str(plan))
    assert code == 0, err
    assert (
        f"{plan}:2:3: agent 1: MCP server t has no tool named mcp__t__ad (did you mean "
        "'mcp__t__add'?); its tools are mcp__t__add," in err
    ), err
    assert f"{plan}:4:3: agent 2: mcp__tt__add is a tool of MCP server 'tt', which" in err, err
    assert "agent 3" not in err, err
    code, out, err = await starter(env, "validate", str(plan), "--json")
    assert code == 0 and len(json.loads(out)["warnings"]) == 2, out
