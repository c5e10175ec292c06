"""Real agents against a local OpenAI-compatible server: the `openai` client path runs for real."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import uuid
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from client import XSky
from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import (
    FakeLLM,
    calls,
    first_user,
    last_tool_output,
    status,
    system,
    text,
    turn_of,
)
from tests.integration.eventually import eventually
from tests.integration.helpers import RUNNING, board, board_shows, plan, wait_requests
from tests.login_site import serving_login_site
from workflows.leader import LeaderWorkflow
from xsky.leader.state import AnswerRequest
from xsky.runs import RunInput, RunOptions

pytestmark = pytest.mark.integration


def agent(agent_id: str, role: str, task: str, config: str = "", depends: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    cfg = f"<config>{config}</config>" if config else ""
    return f'<agent name="{role}" id="{agent_id}"{dep}><task>{task}</task>{cfg}</agent>'


def browse(site: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback is off limits to agents unless the worker's settings name its exact host:port:
    the worker's settings allow browsing ``site``."""
    port = site.rsplit(":", 1)[1]
    user = tmp_path / "user-settings.json"
    rule = f"browser_navigate(domain:127.0.0.1:{port})"
    user.write_text(json.dumps({"permissions": {"allow": [rule]}}))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(user))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("shop")
    (root / "index.html").write_text(
        "<html><head><title>Shop</title></head><body><h1>Widget</h1><p>Price: <span id='price'>42 coins</span></p></body></html>"
    )
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    )
    server.RequestHandlerClass.log_message = lambda *a: None  # type: ignore[method-assign]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def test_a_browser_agent_navigates_a_local_page_and_extracts_a_value(
    env: Env, fake_llm: FakeLLM, site: str, tmp_path: Path, monkeypatch
):
    browse(site, tmp_path, monkeypatch)

    def responder(req, i):
        turn = turn_of(req)
        if turn == 0:
            return calls(("browser_navigate", {"url": f"{site}/index.html"}))
        if turn == 1:
            return calls(("browser_extract", {"selector": "#price"}))
        return text(f"The price is {last_tool_output(req)}.")

    fake_llm.responder = responder
    await env.start_worker()
    result = await env.run(plan(agent("1", "browser", "Find the widget's price")))
    assert result.status == "completed", result.summary
    assert result.agents[0].result == "The price is 42 coins."
    second = fake_llm.requests[1]
    assert "# Shop" in last_tool_output(second) and "Price: 42 coins" in last_tool_output(second)
    tools = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert {
        "browser_navigate",
        "browser_extract",
        "browser_click",
        "browser_type",
        "browser_screenshot",
    } <= tools
    assert "shell" not in tools  # the browser role's tools only


async def test_a_browser_agent_after_another_continues_its_page_logged_in(
    env: Env, fake_llm: FakeLLM, tmp_path: Path, monkeypatch
):
    """A real Eko plan's shape: agent 1 logs in, agent 2 (depends on 1) reads the dashboard.
    It started on a blank page of its own, logged out; it continues agent 1's page now."""
    with serving_login_site() as site:
        browse(site, tmp_path, monkeypatch)

        def responder(req, i):
            turn, logging_in = turn_of(req), "Read the greeting" not in first_user(req)
            if turn == 0 and logging_in:
                return calls(("browser_navigate", {"url": f"{site}/login?user=ann"}))
            if turn == 0:
                return calls(("browser_extract", {"selector": "#who"}))
            return text(f"The page says: {last_tool_output(req)}.")

        fake_llm.responder = responder
        await env.start_worker()
        async with XSky.connect() as x:
            run = await x.run(
                plan(
                    agent("1", "browser", "Log in as ann"),
                    agent("2", "browser", "Read the greeting on the page", depends="1"),
                ),
                id=f"xsky-pages-{uuid.uuid4().hex[:6]}",
            )
            result = await asyncio.wait_for(run.result(), 90)
            assert result.status == "completed", result.summary
            by_id = {a.id: a.result for a in result.agents}
            assert by_id["2"] == "The page says: welcome ann.", by_id
            # A fork at agent 2 runs it alone: agent 1 ran in the run forked, its page is there.
            fork = await run.fork("2", text="Read the greeting on the page again")
            forked = await asyncio.wait_for(fork.result(), 90)
    assert forked.status == "completed", forked.summary
    assert {a.id: a.result for a in forked.agents}["2"] == "The page says: welcome ann."


async def test_a_shell_and_file_agent_writes_a_file_through_tool_calls(env: Env, fake_llm: FakeLLM):
    def responder(req, i):
        turn = turn_of(req)
        if turn == 0:  # two tool calls in one turn: both are answered
            return calls(
                ("file_write", {"path": "notes/out.txt", "content": "hello from the agent\n"}),
                ("shell", {"command": "wc -c < notes/out.txt"}),
            )
        return text(f"Wrote the file; shell said: {last_tool_output(req)}")

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(
        plan(agent("1", "backend", "Write a greeting to notes/out.txt and count its bytes"))
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed", result.summary
    written = env.home / "runs" / handle.id / "workspace" / "notes" / "out.txt"
    assert written.read_text() == "hello from the agent\n"
    tool_messages = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert (
        len(tool_messages) == 2 and tool_messages[0]["content"] == "wrote 21 bytes to notes/out.txt"
    )
    assert "exit code 0\n21" in result.agents[0].result
    board_ = await board(handle)
    assert board_["1"].tokens == 30 and board_["1"].iterations == 2


async def test_a_401_fails_at_once_with_a_readable_error(env: Env, fake_llm: FakeLLM):
    fake_llm.responder = lambda req, i: status(401, "Incorrect API key provided")
    await env.start_worker()
    result = await env.run(
        plan(agent("1", "llm", "Say hello")), options=RunOptions(max_auto_replans=0)
    )
    (a,) = result.agents
    assert a.status == "failed" and len(fake_llm.requests) == 1  # not retried
    assert (
        "401" in a.error
        and "API key was refused: check OPENAI_API_KEY" in a.error
        and "not retried" in a.error
    )


async def test_429_twice_then_200_completes(env: Env, fake_llm: FakeLLM):
    fake_llm.responder = lambda req, i: (
        status(429, "slow down") if i < 2 else text("done after the rate limit")
    )
    await env.start_worker()
    cfg = '{"retry": {"maximumAttempts": 4, "initialInterval": 0.2}}'
    result = await env.run(plan(agent("1", "llm", "Say hello", cfg)))
    assert result.status == "completed" and result.agents[0].result == "done after the rate limit"
    assert len(fake_llm.requests) == 3


async def test_the_planner_gets_its_errors_back_and_uses_the_corrected_plan(
    env: Env, fake_llm: FakeLLM
):
    good = (
        '<workflow name="two steps"><agent name="llm" id="1"><task>Draft</task></agent>'
        '<agent name="llm" id="2" depends="1"><task>Polish</task><input>{{agent_1_result}}</input></agent></workflow>'
    )

    def responder(req, i):
        if "task planner" in first_user(req):
            return (
                text(
                    'Here you go:\n<workflow name="x"><agent name="llm" id="1"><task>Draft & polish</task></agent></workflow>'
                )
                if turn_of(req) == 0
                else text(f"```xml\n{good}\n```")
            )
        return text(f"did: {first_user(req).splitlines()[1]}")

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.client.start_workflow(
        LeaderWorkflow.run,
        RunInput(task_prompt="Draft a note, then polish it", task_id="planned"),
        id="xsky-planned-" + env.settings.task_queue,
        task_queue=env.settings.task_queue,
    )
    env.handles.append(handle)
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and [a.id for a in result.agents] == ["1", "2"]
    planner = [r for r in fake_llm.requests if "task planner" in first_user(r)]
    assert len(planner) == 2
    retry = planner[1]["messages"]
    assert (
        retry[-1]["role"] == "user"
        and "xmlParseEntityRef" in retry[-1]["content"]
        and "&amp;" in retry[-1]["content"]
    )
    assert "Available Agents:" in first_user(planner[0]) and "- backend:" in first_user(planner[0])
    history = await handle.query(LeaderWorkflow.plan_history)
    assert history[0].reason == "planned by fake-model from the request"


async def test_ask_user_in_the_loop_becomes_a_question_and_the_answer_resumes_it(
    env: Env, fake_llm: FakeLLM
):
    def responder(req, i):
        turn = turn_of(req)
        if turn == 0:
            return calls(("ask_user", {"question": "Which city?"}))
        return text(f"Weather for {last_tool_output(req)}")

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(plan(agent("1", "llm", "Report the weather")))
    (req,) = await wait_requests(handle, 1)
    assert req.text == "Which city?" and req.kind == "question"
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id=req.id, text="Lyon")
    )
    result = await asyncio.wait_for(run_outcome(handle), 30)
    assert result.agents[0].result == "Weather for The person answered: Lyon"
    assert [turn_of(r) for r in fake_llm.requests] == [
        0,
        1,
    ]  # resumed from the checkpoint, turn 0 not asked again


async def test_a_nudge_reaches_the_agent_at_its_next_step(env: Env, fake_llm: FakeLLM):
    def responder(req, i):
        if turn_of(req) == 0:
            return calls(("shell", {"command": "sleep 1.5; echo slow"}))
        return text("finished")

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(plan(agent("1", "shell", "Do something slow")))
    await eventually(lambda: board_shows(handle, {"1": RUNNING}))
    # through the API: an agent with a model loop passes the direct-tool check
    async with XSky.connect() as x:
        await (await x.get(handle.id)).nudge("T-1", "prefer the cached copy")
    await asyncio.wait_for(run_outcome(handle), 30)
    second = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "user"]
    assert "Message from your supervisor: prefer the cached copy" in second


async def test_the_same_call_over_and_over_is_nudged_then_stopped(env: Env, fake_llm: FakeLLM):
    fake_llm.responder = lambda req, i: calls(("file_list", {"path": "."}))
    await env.start_worker()
    result = await env.run(
        plan(agent("1", "file", "List files forever")), options=RunOptions(max_auto_replans=0)
    )
    assert result.agents[0].status == "failed" and "looping" in result.agents[0].error
    third = fake_llm.requests[3]  # the request after the third identical call
    assert "same call 3 times in a row" in last_tool_output(third)
    assert len(fake_llm.requests) == 5


async def test_roles_from_project_settings_and_from_a_plan_role_element(
    env: Env, fake_llm: FakeLLM, tmp_path: Path, monkeypatch
):
    from tests.integration.test_cli_runs import starter

    project = tmp_path / "project"
    (project / ".xsky").mkdir(parents=True)
    (project / ".xsky" / "settings.json").write_text(
        json.dumps(
            {
                "roles": {
                    "auditor": {
                        "description": "audits numbers",
                        "systemPrompt": "You are AUDITOR-FROM-SETTINGS.",
                        "allowedTools": ["file_read"],
                    }
                }
            }
        )
    )
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))
    fake_llm.responder = lambda req, i: text("role: " + system(req).split(".")[0])
    await env.start_worker()
    plan_file = tmp_path / "roles.xml"
    plan_file.write_text(
        '<workflow name="roles" taskId="roles">'
        '<role name="poet" description="writes verse" tools="file_read"><systemPrompt>You are POET-FROM-PLAN.</systemPrompt></role>'
        + agent("1", "auditor", "Check the sums")
        + agent("2", "poet", "Write a verse")
        + "</workflow>"
    )
    workflow_id = "xsky-roles-" + env.settings.task_queue
    code, out, err = await starter(env, "run", str(plan_file), "--id", workflow_id, "--follow")
    assert code == 0, out + err
    results = {
        r["id"]: r["result"]
        for r in json.loads((await starter(env, "result", workflow_id, "--json"))[1])["agents"]
    }
    assert results == {
        "1": "role: You are AUDITOR-FROM-SETTINGS",
        "2": "role: You are POET-FROM-PLAN",
    }
    code, out, _ = await starter(env, "roles", "show", "auditor")
    assert "AUDITOR-FROM-SETTINGS" in out and "file_read" in out


async def test_a_broken_settings_file_is_an_error_naming_the_file_line_and_field(
    env: Env, tmp_path: Path, monkeypatch
):
    from tests.integration.test_cli_runs import starter

    project = tmp_path / "p"
    (project / ".xsky").mkdir(parents=True)
    (project / ".xsky" / "settings.json").write_text(
        '{\n  "roles": {\n    "x": {"sytemPrompt": "typo"}\n  }\n}\n'
    )
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(project))
    code, _, err = await starter(env, "roles")
    assert (
        code == 2
        and "settings.json:3:" in err
        and "unknown field 'sytemPrompt'" in err
        and "Traceback" not in err
    )
