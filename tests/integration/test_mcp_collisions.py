"""A deny rule holds for the MCP tool it names, whatever else the server lists: a server that lists
``danger.op`` before ``danger_op`` once had the second shown under a computed name, which a
``deny mcp__srv__danger_op`` rule missed. Now ``danger.op`` — whose shown name would be
``danger_op``'s — is not offered, with a sentence naming both (in the run's discovery record,
and in ``starter.py mcp list``), and ``danger_op`` keeps its own name, which the rule denies:
the real danger_op never runs, whichever name a model or a plan tries."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from activities.mcp.discovery import record_key
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.helpers import plan
from tests.integration.mcp_helpers import HOSTILE, agent, roles, write_settings
from tests.integration.test_cli_runs import starter
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

# The name the second tool got before: its shown name was taken, so it ended in a digest.
OLD_NAME = "mcp__srv__danger_op_" + hashlib.sha256(b"danger_op").hexdigest()[:8]
SENTENCE = (
    "MCP server srv: its tool 'danger.op' is not offered, as its name for agents and rules, "
    "mcp__srv__danger_op, is also the name of its tool 'danger_op'"
)


async def test_a_deny_rule_holds_for_the_real_tool_and_a_clashing_one_is_not_offered(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    role = {"operator": {"description": "operates", "allowedTools": ["mcp__srv"]}}
    write_settings(
        tmp_path / "user-settings.json",
        {"srv": HOSTILE},
        roles=role,
        permissions={"deny": ["mcp__srv__danger_op"]},
    )

    def responder(req: dict, i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(("mcp__srv__danger_op", {}), (OLD_NAME, {}))
        return text(" | ".join(m["content"] for m in req["messages"] if m.get("role") == "tool"))

    fake_llm.responder = responder
    await env.start_worker()
    result = await env.run(
        plan(
            agent("1", "operator", "operate"),
            agent("2", "operator", "operate directly", {"tool": "mcp__srv__danger_op"}),
        ),
        options=RunOptions(max_auto_replans=0),
        timeout=90,
        roles=roles(),
    )
    by_id = {a.id: a for a in result.agents}
    denied, unknown = (by_id["1"].result or "").split(" | ")
    assert denied.startswith("DENIED: deny rule 'mcp__srv__danger_op' from user settings")
    assert unknown.startswith(f"ERROR: unknown tool '{OLD_NAME}'")
    assert by_id["2"].status == "failed"
    assert "mcp__srv__danger_op denied: deny rule 'mcp__srv__danger_op'" in (by_id["2"].error or "")
    workspace = env.home / "runs" / result.workflow_id / "workspace"
    assert not (workspace / "calls.log").exists()  # neither danger tool ran

    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert "mcp__srv__leak" in offered and OLD_NAME not in offered
    assert "mcp__srv__danger_op" not in offered  # the role holds it, the deny rule hides it
    record = json.loads(
        ArtifactStore(env.settings.artifacts).objects.get(record_key(result.workflow_id, "srv"))
    )
    assert [t["tool"] for t in record["tools"] if "danger" in t["tool"]] == ["danger_op"]
    assert [r.split(" — ")[0] for r in record["refused"]] == [SENTENCE]

    code, out, err = await starter(env, "mcp", "list", "--json", "--timeout", "20")
    assert code == 0, err
    (listed,) = json.loads(out)
    assert listed["refused"][0].startswith(SENTENCE)
    assert "mcp__srv__danger_op" in {t["name"] for t in listed["tools"]}
