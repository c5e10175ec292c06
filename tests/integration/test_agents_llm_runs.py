"""LLM agents in whole runs: the API key kept out of history and out of commands, a worker killed mid-loop, roles defined while a run goes, a plan from a sentence with review, dependencies' results as input."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import (
    FakeLLM,
    calls,
    first_user,
    last_tool_output,
    system,
    text,
    turn_of,
)
from tests.integration.eventually import eventually
from tests.integration.helpers import RUNNING, board, board_shows, plan
from tests.integration.test_agents_llm import (
    agent,
)
from workflows.leader import LeaderWorkflow

pytestmark = pytest.mark.integration


async def test_the_api_key_never_enters_workflow_history(env: Env, fake_llm: FakeLLM):
    fake_llm.responder = lambda req, i: text("fine")
    await env.start_worker()
    handle = await env.start(plan(agent("1", "llm", "Say something")))
    await asyncio.wait_for(run_outcome(handle), 60)
    assert (
        fake_llm.requests[0]["_auth"] == "Bearer sk-test-never-in-history-7c1f"
    )  # the key was used…
    history = (await handle.fetch_history()).to_json()
    assert "sk-test-never-in-history-7c1f" not in history  # …and never recorded


async def test_a_worker_killed_after_two_of_four_iterations_resumes_without_repeating_them(
    env: Env, fake_llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import os
    import signal

    from tests.integration.test_durability import (
        STICKY_WAIT,
        start_worker_process,
        stop_worker_process,
    )

    held = threading.Event()
    release = threading.Event()

    def responder(req, i):
        turn = turn_of(req)
        if turn < 3:
            reply = calls(("file_write", {"path": f"step-{turn}.txt", "content": f"step {turn}"}))
            if turn == 2 and not held.is_set():
                held.set()  # the third iteration's request: the worker dies while it waits
                reply.hold = release
            return reply
        return text("all four iterations done")

    fake_llm.responder = responder
    monkeypatch.setenv("XSKY_STICKY_TIMEOUT", STICKY_WAIT)  # the killed leader's run waits less
    worker = start_worker_process(env, tmp_path / "w1.log")
    cfg = '{"heartbeatTimeout": 2, "retry": {"maximumAttempts": 5, "initialInterval": 0.2}}'
    handle = await env.start(plan(agent("1", "file", "Write four steps", cfg)))
    try:

        def at_the_third_iteration() -> None:
            assert held.is_set(), "the agent never reached its third iteration"

        await eventually(at_the_third_iteration, timeout=30)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        release.set()
        worker = start_worker_process(env, tmp_path / "w2.log")
        result = await asyncio.wait_for(run_outcome(handle), 90)
    finally:
        release.set()
        stop_worker_process(worker)
    assert result.status == "completed" and result.agents[0].result == "all four iterations done"
    turns = [turn_of(r) for r in fake_llm.requests]
    assert turns.count(0) == 1 and turns.count(1) == 1, (
        f"completed iterations were asked again: {turns}"
    )
    assert turns.count(2) == 2 and turns.count(3) == 1, turns
    workspace = env.home / "runs" / handle.id / "workspace"
    assert sorted(p.name for p in workspace.iterdir()) == ["step-0.txt", "step-1.txt", "step-2.txt"]


async def test_define_role_adds_a_role_for_the_run_and_refuses_bad_ones(
    env: Env, fake_llm: FakeLLM
):
    from tests.integration.helpers import rejected
    from xsky.leader.state import DefineRoleRequest, ReplanRequest

    fake_llm.responder = lambda req, i: text("as " + system(req).split(".")[0])
    await env.start_worker()
    handle = await env.start(plan(agent("1", "llm", "Wait", '{"tool": "noop", "seconds": 30}')))
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    msg = await rejected(handle, LeaderWorkflow.define_role, DefineRoleRequest(name="9lives"))
    assert "role name '9lives' is not valid" in msg
    msg = await rejected(
        handle,
        LeaderWorkflow.define_role,
        DefineRoleRequest(name="perf", allowed_tools=["teleport"]),
    )
    assert "unknown allowedTools teleport" in msg
    msg = await rejected(
        handle, LeaderWorkflow.define_role, DefineRoleRequest(name="llm", system_prompt="new")
    )
    assert "role llm is in use by running T-1" in msg
    ok = await handle.execute_update(
        LeaderWorkflow.define_role,
        DefineRoleRequest(
            name="performance-engineer",
            description="Performance Engineer",
            system_prompt="You are PERF-DEFINED-AT-RUNTIME.",
            allowed_tools=["file_read", "code_search", "shell", "python_exec"],
        ),
    )
    assert ok.message.startswith("role performance-engineer defined")
    await handle.execute_update(
        LeaderWorkflow.replan,
        ReplanRequest(
            xml=plan(
                agent("1", "llm", "Wait", '{"tool": "noop", "seconds": 30}'),
                agent("2", "performance-engineer", "Profile it"),
            )
        ),
    )
    await eventually(lambda: board_shows(handle, {"2": "completed"}))
    tools = {t["function"]["name"] for t in fake_llm.for_task("Profile it")[0]["tools"]}
    assert tools == {"file_read", "code_search", "shell", "python_exec"}
    assert (await board(handle))["2"].result == "as You are PERF-DEFINED-AT-RUNTIME"


async def test_plan_run_from_a_sentence_with_review_through_starter(env: Env):
    from tests.integration.test_cli_runs import starter

    await env.start_worker()
    code, out, err = await starter(
        env,
        "plan",
        "1. Run `echo alpha` 2. Run `echo beta`",
        "--run",
        "--review",
        "--id",
        "xsky-sentence-" + env.settings.task_queue,
    )
    assert code == 0 and "the leader plans the request" in out, err
    workflow_id = "xsky-sentence-" + env.settings.task_queue
    handle = env.client.get_workflow_handle(workflow_id)

    async def planned() -> None:
        assert "echo beta" in await handle.query(LeaderWorkflow.plan)

    await eventually(planned, timeout=10)
    code, out, _ = await starter(env, "plan", workflow_id)
    assert code == 0 and 'command": "echo alpha"' in out and 'depends="1"' in out
    code, out, _ = await starter(env, "approve-plan", workflow_id, "--version", "1")
    assert code == 0
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert [a["result"] for a in result["agents"]] == ["alpha", "beta"]


async def test_commands_an_agent_runs_cannot_read_the_workers_api_key(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    """Neither through /proc (the sandbox has its own PID namespace) nor from the worker's
    environment (the worker hides its keys from it at start, for when the sandbox is off)."""

    from tests.integration.test_durability import (
        start_worker_process,
        stop_worker_process,
    )

    worker = start_worker_process(env, tmp_path / "w.log")
    probe = (
        f"import os\ntry:\n    print(open('/proc/{worker.pid}/environ', 'rb').read())\nexcept OSError as e:\n    print('no', e)\n"
        "seen = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "print('env', [open(f'/proc/{p}/environ', 'rb').read() for p in seen if os.path.exists(f'/proc/{p}/environ')])"
    )

    def responder(req, i):
        if turn_of(req) == 0:
            return calls(("python_exec", {"code": probe}))
        return text(last_tool_output(req))

    fake_llm.responder = responder
    try:
        handle = await env.start(plan(agent("1", "data", "Look around")))
        result = await asyncio.wait_for(run_outcome(handle), 60)
        worker_env = Path(f"/proc/{worker.pid}/environ").read_bytes()
    finally:
        stop_worker_process(worker)
    out = result.agents[0].result
    assert (
        f"no [Errno 2] No such file or directory: '/proc/{worker.pid}/environ'" in out
    )  # the worker is not there
    assert "XSKY_TASK_QUEUE" not in out and "sk-test-never-in-history-7c1f" not in out
    assert b"XSKY_TASK_QUEUE" in worker_env and b"sk-test-never-in-history-7c1f" not in worker_env
    assert (
        fake_llm.requests[0]["_auth"] == "Bearer sk-test-never-in-history-7c1f"
    )  # the worker still has it


async def test_an_llm_agent_without_input_gets_its_dependencies_results_bounded(
    env: Env, fake_llm: FakeLLM
):
    """The seed's buildSimpleAgentWorkflow example: "Summarize the results", depending on the
    steps before it, and no <input>: it sees what they produced — a long result cut, by reference."""
    fake_llm.responder = lambda req, i: text("summary written")
    await env.start_worker()
    small = '<agent name="shell" id="1"><task>Find the widget</task><config>{"tool": "shell", "command": "echo widget costs 42 coins"}</config></agent>'
    large = (
        '<agent name="shell" id="2"><task>Dump the catalogue</task>'
        '<config>{"tool": "shell", "command": "yes catalogue-line | head -n 4000"}</config></agent>'
    )
    result = await env.run(
        plan(small, large, agent("3", "llm", "Summarize the results", depends="1,2"))
    )
    assert result.status == "completed", result.summary
    assert result.agents[1].result_ref is not None  # the catalogue went to the artifact store
    (request,) = fake_llm.requests
    given = first_user(request)
    assert "Results of the steps this task depends on:" in given
    assert "[T-1 · shell · Find the widget]\n" in given and "widget costs 42 coins" in given
    assert "[T-2 · shell · Dump the catalogue]" in given and "catalogue-line" in given
    assert "more characters in artifact:" in given  # bounded: the rest is named, not pasted
    assert len(given) < 10_000
