"""A project's MCP servers (its ``.mcp.json``) get what the worker's settings grant them, not what
the project's file asks for: a ``${VAR}`` resolves only once ``mcpServerGrants`` gives that
variable to that server, and an HTTP server must be at a host the grant names — the only hosts
its egress policy lets through (the run's ``--allow-host`` opens nothing for it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from activities.mcp.check import check
from tests.conftest import Env
from tests.integration.helpers import plan
from tests.integration.mcp_helpers import (
    TEST_SERVER,
    agent,
    everything_over_http,
    roles,
    write_settings,
)
from xsky.config import load_settings
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

SECRET = "project-asked-for-this-4e1a"
ROLE = {"prober": {"description": "uses the project's server", "allowedTools": ["mcp__p"]}}


def project_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers: dict) -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(folder))
    return folder / ".mcp.json"


async def test_a_project_server_gets_a_secret_only_once_the_worker_grants_it(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XSKY_TEST_PROJECT_SECRET", SECRET)
    mcp_json = project_with(
        tmp_path,
        monkeypatch,
        {"p": {**TEST_SERVER, "env": {"TOKEN": "${XSKY_TEST_PROJECT_SECRET}"}}},
    )
    user = tmp_path / "user-settings.json"
    write_settings(user, {}, roles=ROLE, enabledMcpjsonServers=["p"])
    await env.start_worker()
    task = plan(
        agent("1", "prober", "probe", {"tool": "mcp__p__env", "name": "TOKEN", "digest": True})
    )
    refused = await env.run(task, options=RunOptions(max_auto_replans=0), roles=roles())
    assert refused.status == "failed"
    assert (
        f"MCP server p (project {mcp_json}) refers to ${{XSKY_TEST_PROJECT_SECRET}}, which a "
        "project's server gets only when the worker's settings grant it: add "
        f'"XSKY_TEST_PROJECT_SECRET" to mcpServerGrants.p.secrets in {user}'
    ) in (refused.agents[0].error or "")

    grant = {"p": {"secrets": ["XSKY_TEST_PROJECT_SECRET"]}}
    write_settings(user, {}, roles=ROLE, enabledMcpjsonServers=["p"], mcpServerGrants=grant)
    granted = await env.run(task, options=RunOptions(max_auto_replans=0), roles=roles())
    assert granted.status == "completed", granted.summary
    assert granted.agents[0].result == hashlib.sha256(SECRET.encode()).hexdigest()


async def test_a_project_http_server_reaches_only_a_host_the_worker_grants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "xsky"))
    user = tmp_path / "user-settings.json"
    with everything_over_http() as port:
        project_with(
            tmp_path, monkeypatch, {"p": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}
        )
        # The worker's own rules open that port to everything else: not to a project's server.
        opened = {"allow": [f"network(domain:127.0.0.1:{port})"]}
        write_settings(
            user,
            {},
            enabledMcpjsonServers=["p"],
            permissions=opened,
            mcpServerGrants={"p": {"hosts": ["api.example.com"]}},
        )
        (refused,) = await check(load_settings(), ["p"], timeout=10)
        assert refused.state == "failed"
        assert refused.error == (
            f"MCP server p (project {tmp_path / 'project' / '.mcp.json'}) is at 127.0.0.1, which a "
            "project's server may reach only when the worker's settings grant it: add "
            f'"127.0.0.1:{port}" to mcpServerGrants.p.hosts in {user}'
        )
        write_settings(
            user,
            {},
            enabledMcpjsonServers=["p"],
            mcpServerGrants={"p": {"hosts": [f"127.0.0.1:{port}"]}},
        )
        (granted,) = await check(load_settings(), ["p"], timeout=10)
    assert granted.state == "ok", granted.error
    assert granted.offer is not None and "mcp__p__get-sum" in {t.name for t in granted.offer.tools}
