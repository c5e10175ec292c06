"""starter.py against a real server: run (and --follow), status, result, list; bad plans."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import pytest

from tests.conftest import ROOT, Env

pytestmark = pytest.mark.integration


async def starter(env: Env, *args: str, timeout: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "starter.py"), *args,
        env=env.environ(), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_run_of_an_invalid_plan_exits_2_and_starts_nothing(env: Env):
    workflow_id = f"xsky-invalid-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(env, "run", str(ROOT / "examples/invalid/many_problems.xml"), "--id", workflow_id)
    assert code == 2
    assert "many_problems.xml:3:3:" in err and "nothing was started" in err
    found = [wf async for wf in env.client.list_workflows(f"WorkflowId='{workflow_id}'")]
    assert found == []


async def test_run_follow_then_status_result_and_list(env: Env):
    await env.start_worker()
    workflow_id = f"xsky-cli-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(env, "run", str(ROOT / "examples/diamond.xml"), "--id", workflow_id, "--var", "topic=cli", "--follow")
    assert code == 0, err
    assert f"started {workflow_id}" in out and f"/workflows/{workflow_id}" in out
    assert "4 of 4 agents completed" in out

    code, out, err = await starter(env, "status", workflow_id, "--json")
    board = json.loads(out)
    assert code == 0 and board["status"] == "completed"
    assert [t["id"] for t in board["tasks"]] == ["T-1", "T-2", "T-3", "T-4"]
    assert all(t["status"] == "completed" and t["durationS"] is not None for t in board["tasks"])

    code, out, _ = await starter(env, "result", workflow_id, "--agent", "1")
    assert code == 0 and out.startswith("topic: cli")

    code, out, _ = await starter(env, "result", workflow_id, "--json")
    assert json.loads(out)["status"] == "completed"

    code, out, _ = await starter(env, "list", "--json")
    assert any(r["workflowId"] == workflow_id and r["status"] == "completed" for r in json.loads(out))


async def test_run_json_prints_the_id_and_link_and_a_failed_run_exits_1(env: Env):
    await env.start_worker()
    plan = env.home / "fail.xml"
    env.home.mkdir(parents=True, exist_ok=True)
    plan.write_text('<workflow name="f" taskId="f"><agent name="shell" id="1"><task>x</task><config>{"tool": "shell", "command": "exit 4", "retry": {"maximumAttempts": 1}}</config></agent></workflow>')
    workflow_id = f"xsky-f-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(env, "run", str(plan), "--id", workflow_id, "--json")
    assert code == 0 and json.loads(out)["workflowId"] == workflow_id
    code, out, err = await starter(env, "result", workflow_id, "--wait")
    assert code == 1 and "exited with status 4" in out


async def test_unknown_run_and_unreachable_server_are_clear_errors(env: Env):
    code, _, err = await starter(env, "status", "xsky-no-such-run")
    assert code == 2 and "no run with id xsky-no-such-run" in err and "Traceback" not in err
    env_bad = Env(client=env.client, settings=env.settings, address="127.0.0.1:1", home=env.home)
    code, _, err = await starter(env_bad, "list")
    assert code == 2 and "cannot reach Temporal at 127.0.0.1:1" in err and "Traceback" not in err


async def test_the_demo_runs_every_agent_kind_against_a_local_page(env: Env):
    """What `make demo` does, against the test server: starts a worker, serves the page, runs."""
    try:
        code, out, err = await starter(env, "demo", timeout=180)
        assert code == 0, out + err
        assert "6 of 6 agents completed" in out
        assert "Durable agents, explained" in out  # the browser read the locally served page
        assert "[offline provider]" in out and "report.md" in out
        assert "worker started" in out
    finally:
        code, out, _ = await starter(env, "down")
        assert "worker: stopped" in out
