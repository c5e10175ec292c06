"""A secret an MCP server is given through ``${VAR}`` never leaves the worker through what the
server says: a server that prints it to stderr and exits, and one that echoes it in a tool's
result (as it is, URL-encoded, in base64, inside Basic credentials, in structured content) and
quotes it in a tool's description. Run by a real worker process (worker.py, which hides the
secret from its environment and installs the log filter) on a dev server, the value — in any
of those forms — is nowhere: not in the run's whole history (every payload decoded), the
worker's log, the board, the permission log, the store (agent logs, results, discovery
records, transcripts) or what the model was sent; its marker is where it was."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.helpers import board, plan
from tests.integration.mcp_helpers import HOSTILE, agent, roles, write_settings
from tests.integration.test_durability import start_worker_process, stop_worker_process
from workflows.leader import LeaderWorkflow
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

SECRET = "s3cr3t/tok+en=9f2c-never-leaves"
MARK = "[secret ${XSKY_TEST_MCP_TOKEN}]"
FORMS = {
    "as-is": SECRET,
    "url-encoded": quote(SECRET, safe=""),
    "base64": base64.b64encode(SECRET.encode()).decode(),
    # the part of base64("user:" + SECRET) that only the secret's bytes make
    "in basic auth": base64.b64encode(f"user:{SECRET}".encode()).decode()[8:-4],
}


def texts(message: Message) -> Iterator[str]:
    """Every string in a protobuf message, each payload's data decoded."""
    if isinstance(message, Payload):
        yield message.data.decode("utf-8", "replace")
        yield from (v.decode("utf-8", "replace") for v in message.metadata.values())
        return
    for field, value in message.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            items: Any = [*value.keys(), *value.values()]
        elif field.is_repeated:
            items = list(value)
        else:
            items = [value]
        for item in items:
            if isinstance(item, Message):
                yield from texts(item)
            elif isinstance(item, str):
                yield item
            elif isinstance(item, bytes):
                yield item.decode("utf-8", "replace")


def leaks(where: str, text: str) -> list[str]:
    return [f"{form} in {where}" for form, shown in FORMS.items() if shown in text]


async def test_a_servers_secret_is_nowhere_it_could_leave_the_worker(
    env: Env, fake_llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XSKY_TEST_MCP_TOKEN", SECRET)  # a worker's secret (its name says so)
    env_of = {"TOKEN": "${XSKY_TEST_MCP_TOKEN}"}
    servers = {
        "h": {**HOSTILE, "env": env_of},
        "x": {**HOSTILE, "env": {**env_of, "XSKY_TEST_MODE": "stderr-exit"}},
    }
    role = {
        "leaker": {"description": "asks for it", "allowedTools": ["mcp__h"]},
        "starter": {"description": "starts the other", "allowedTools": ["mcp__x"]},
    }
    write_settings(tmp_path / "user-settings.json", servers, roles=role)

    def responder(req: dict, i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(("mcp__h__leak", {}))
        return text(" | ".join(m["content"] for m in req["messages"] if m.get("role") == "tool"))

    fake_llm.responder = responder
    await env.start_worker(kinds=["shell"])  # the leader here; the agents (llm queue) there
    log = tmp_path / "worker.log"
    worker = start_worker_process(env, log, "--kinds", "llm", "--no-leader", "--no-skills")
    try:
        handle = await env.start(
            plan(
                agent("1", "leaker", "get the token"),
                agent("2", "starter", "start the other", {"tool": "mcp__x__leak"}),
                agent("3", "leaker", "echo directly", {"tool": "mcp__h__leak"}),
            ),
            options=RunOptions(max_auto_replans=0),
            roles=roles(),
        )
        result = await run_outcome(handle)
        tasks = await board(handle)
        permissions = await handle.query(LeaderWorkflow.permission_log)
    finally:
        stop_worker_process(worker)
    by_id = {a.id: a for a in result.agents}
    # The marker stands where the value was.
    assert by_id["1"].status == "completed", by_id["1"].error
    assert MARK in (by_id["1"].result or "")
    assert by_id["3"].status == "completed" and MARK in (by_id["3"].result or "")
    assert by_id["2"].status == "failed"
    assert f"its stderr ended: hostile server: cannot start with token {MARK}" in (
        by_id["2"].error or ""
    )

    history = await handle.fetch_history()
    found = leaks("the history", "\n".join(t for e in history.events for t in texts(e)))
    found += leaks("the worker's log", log.read_text(errors="replace"))
    found += leaks("the board", json.dumps([t.wire() for t in tasks.values()]))
    found += leaks("the permission log", json.dumps([e.wire() for e in permissions]))
    found += leaks("the model's requests", json.dumps(fake_llm.requests))
    stored = [p for p in env.home.rglob("*") if p.is_file() and "workspace" not in p.parts]
    assert any("_mcp" in p.parts for p in stored)  # the discovery record is among them
    for path in stored:
        found += leaks(str(path), path.read_bytes().decode("utf-8", "replace"))
    assert not found, found
    # The value did reach the server: it echoed it (scrubbed on the way) and its description
    # quoted it (scrubbed in the record the model's tool list came from).
    described = {t["function"]["name"]: t for t in fake_llm.requests[0]["tools"]}
    assert MARK in described["mcp__h__leak"]["function"]["description"]
