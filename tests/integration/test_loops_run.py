"""forEach on a real server: an agent per item, and a worker killed in the middle of the list
runs again only the item it was working on."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from client import XSky
from client.outcome import run_outcome
from tests.conftest import ROOT, Env
from tests.fake_llm import FakeLLM, Reply, calls, first_user, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import board
from tests.integration.test_durability import start_worker_process, stop_worker_process
from xsky.plan.agent_config import RetryOptions
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

# Each item writes its side effect once per attempt; item c works long on its first attempt
# (the worker is killed then) and answers at once on its retry.
ITEM = (
    "echo {{item}} >> items.log; "
    "if test {{item}} = c && test ! -e c.started; then touch c.started; sleep 60; fi; "
    'echo "did {{item_index}} {{item}}"'
)


def loop_plan() -> str:
    config = json.dumps({"tool": "shell", "command": ITEM, "heartbeatTimeout": 4})
    return f"""<workflow name="loop" taskId="loop">
  <agent name="shell" id="list"><task>list the items</task>
    <config>{{"tool": "shell", "command": "printf 'a\\\\nb\\\\nc\\\\nd\\\\ne\\\\n'"}}</config></agent>
  <agent name="shell" id="each" depends="list" forEach="{{{{agent_list_result}}}}">
    <task>work on {{{{item}}}}</task><config><![CDATA[{config}]]></config></agent>
  <agent name="shell" id="after" depends="each"><task>count</task>
    <config>{{"tool": "shell", "command": "echo {{{{agent_each_result}}}} | wc -c"}}</config></agent>
</workflow>"""


async def test_a_forEach_runs_an_agent_per_item_and_a_killed_worker_reruns_only_its_item(
    env: Env, tmp_path: Path
):
    await env.start_worker(kinds=["llm"])  # the leader; shell agents run only in the processes
    handle = await env.start(loop_plan(), options=RunOptions(max_parallel=1, max_auto_replans=0))
    log = env.home / "runs" / handle.id / "workspace" / "items.log"
    first = start_worker_process(
        env, tmp_path / "first.log", "--kinds", "shell", "--no-leader", "--no-skills"
    )
    try:

        def working_on_c() -> None:
            assert log.exists() and log.read_text().split() == ["a", "b", "c"]

        await eventually(working_on_c, 60, interval=0.1)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    second = start_worker_process(
        env, tmp_path / "second.log", "--kinds", "shell", "--no-leader", "--no-skills"
    )
    try:
        result = await asyncio.wait_for(run_outcome(handle), 90)
    finally:
        stop_worker_process(second)
    assert result.status == "completed", result.summary
    agents = {a.id: a for a in result.agents}
    assert [a for a in agents if a.startswith("each[")] == [f"each[{n}]" for n in range(1, 6)]
    assert json.loads(agents["each"].result or "") == [
        f"did {n} {x}" for n, x in enumerate("abcde", 1)
    ]
    # a and b had finished before the kill: not run again; c ran again, d and e once.
    assert log.read_text().split() == ["a", "b", "c", "c", "d", "e"]
    # The Web UI tells the items apart: each activity's summary names its item.
    summaries = {
        json.loads(event.user_metadata.summary.data)
        async for event in handle.fetch_history_events()
        if event.HasField("activity_task_scheduled_event_attributes")
        and "each[" in event.activity_task_scheduled_event_attributes.activity_id
    }
    assert {s.split(" · item: ")[-1] for s in summaries} == set("abcde"), summaries


EKO_PLAN = """<root>
  <name>Greetings</name>
  <thought>List the people, then greet each one.</thought>
  <agents>
    <agent name="Chat" id="0" dependsOn="">
      <task>Greet the team</task>
      <nodes>
        <node output="people">List the people of the team</node>
        <forEach items="people">
          <node>Write a greeting for the person</node>
        </forEach>
      </nodes>
    </agent>
  </agents>
</root>"""


async def test_an_eko_plans_forEach_runs_each_item_as_an_agent_with_a_scripted_model(
    env: Env, fake_llm: FakeLLM
):
    def responder(req, i):  # type: ignore[no-untyped-def]
        asked = first_user(req)
        if "answer with the list" in asked:
            return text('["Ann", "Bo", "Cy"]')
        person = asked.rsplit("Item ", 1)[1].split(":\n", 1)[1].strip()
        return text(f"Hello {person}!")

    fake_llm.responder = responder
    await env.start_worker()
    result = await env.run(EKO_PLAN, options=RunOptions(max_auto_replans=0, coordinator="off"))
    assert result.status == "completed", result.summary
    agents = {a.id: a for a in result.agents}
    assert list(agents) == ["0.list", "0[1]", "0[2]", "0[3]", "0"]
    assert json.loads(agents["0"].result or "") == ["Hello Ann!", "Hello Bo!", "Hello Cy!"]
    # Each item's agent saw its steps and its item, once.
    items = [first_user(r) for r in fake_llm.requests if "Item " in first_user(r)]
    assert len(items) == 3 and all("Write a greeting for the person" in m for m in items)


async def test_one_of_ekos_own_plans_runs_end_to_end_with_a_scripted_model(
    env: Env, fake_llm: FakeLLM
):
    """Eko's "Latest AI News" example, unchanged: Browser → Computer, a forEach among the first
    agent's steps (made durable), the summary passed to the second by name."""
    plan = (ROOT / "tests/fixtures/eko/02-ai-news-dependsOn-computer.xml").read_text()

    def responder(req, i):  # type: ignore[no-untyped-def]
        asked = first_user(req)
        if "answer with the list" in asked:
            return text('["GPT news", "Robot news"]')
        if "Item " in asked:
            item = asked.rsplit("Item ", 1)[1].split(":\n", 1)[1].strip()
            return text(f"details of {item}")
        if "Send summary message" in asked:
            return text("sent: " + asked.split("summaryInfo:\n", 1)[1].strip())
        return text("Summary: GPT and robots")

    fake_llm.responder = responder
    await env.start_worker()
    result = await env.run(plan, options=RunOptions(max_auto_replans=0, coordinator="off"))
    assert result.status == "completed", result.summary
    agents = {a.id: a for a in result.agents}
    assert list(agents) == ["0.list", "0.each[1]", "0.each[2]", "0.each", "0", "1"]
    assert json.loads(agents["0.each"].result or "") == [
        "details of GPT news",
        "details of Robot news",
    ]
    assert agents["1"].result == "sent: Summary: GPT and robots"


STEPS_PLAN = """<root><name>Steps</name><agents>
  <agent name="Chat" id="0"><task>Greet the team</task>
    <nodes><node>List the people</node><node>Write the greetings</node><node>Check them</node></nodes>
  </agent>
</agents></root>"""


async def test_an_agents_steps_show_on_the_board_and_a_retry_resumes_at_the_step_it_reached(
    env: Env, fake_llm: FakeLLM
):
    hold = threading.Event()
    failed: list[int] = []

    def responder(req, i):  # type: ignore[no-untyped-def]
        turn = turn_of(req)
        if turn == 0:
            return calls(("step_done", {"step": 1, "note": "three people"}))
        if turn == 1:
            return calls(("step_done", {"step": 2}))
        if not failed:  # the model fails once after step 2: the attempt is retried
            failed.append(i)
            return Reply(status=503, error="the model is down", hold=hold)
        return text("all greeted and checked")

    fake_llm.responder = responder
    await env.start_worker()
    handle = await env.start(
        STEPS_PLAN,
        options=RunOptions(
            max_auto_replans=0,
            coordinator="off",
            retry=RetryOptions(initial_interval=0.1, maximum_interval=0.2),
        ),
    )

    async def at_step_two() -> None:
        shown = (await board(handle))["0"]
        assert (shown.last_progress or "").startswith("step 2 of 3 done: Write the greetings"), (
            shown
        )

    await eventually(at_step_two, 60, interval=0.2)  # (a loaded machine starts runs slowly)
    hold.set()
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and result.agents[0].result == "all greeted and checked"
    first = first_user(fake_llm.requests[0])
    assert "1. List the people" in first and "call step_done with its number" in first
    # The retry went on from the checkpoint: its one request holds both steps' answers.
    last = fake_llm.requests[-1]["messages"]
    answers = [m["content"] for m in last if m.get("role") == "tool"]
    assert answers == [
        "Step 1 of 3 recorded. Next: step 2: Write the greetings",
        "Step 2 of 3 recorded. Next: step 3: Check them",
    ]
    assert sum(1 for r in fake_llm.requests if turn_of(r) == 0) == 1  # step 1 was not redone


ONE_OF_TWO = """<workflow name="one at a time" taskId="one">
  <agent name="llm" id="1"><task>Write the report</task>
    <nodes><node>Gather the figures</node><node>Write it</node></nodes></agent>
  <agent name="shell" id="2"><task>other work</task>
    <config>{"tool": "shell", "command": "sleep 1; echo done"}</config></agent>
</workflow>"""


async def test_one_agent_paused_mid_conversation_waits_while_the_others_go_on_and_resumes_where_it_was(
    env: Env, fake_llm: FakeLLM
):
    thinking = threading.Event()

    def responder(req, i):  # type: ignore[no-untyped-def]
        if turn_of(req) == 0:
            return calls(("step_done", {"step": 1, "note": "figures gathered"}))
        if not thinking.is_set():
            thinking.set()
            return Reply(content="(never read: the attempt is paused)", hold=threading.Event())
        return text("the report")

    fake_llm.responder = responder
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(ONE_OF_TWO, options=RunOptions(max_auto_replans=0, coordinator="off"))
        await eventually(lambda: _true(thinking.is_set()), 30, interval=0.1)
        said = await run.pause_task("T-1")
        assert said.message.startswith("T-1 paused: its attempt is stopped")

        async def others_done_and_it_waits() -> None:
            shown = await board(run.handle)
            assert shown["2"].status == "completed", shown["2"]
            assert shown["1"].status == "blocked" and shown["1"].blocked_reason == (
                "paused by a person (resume_task)"
            ), shown["1"]

        await eventually(others_done_and_it_waits, 30, interval=0.2)
        await run.resume_task("T-1")
        result = await asyncio.wait_for(run.result(), 60)
    assert (
        result.status == "completed"
        and {a.id: a.result for a in result.agents}["1"] == "the report"
    )
    # It went on from its checkpoint: step 1 was asked once, and the last request holds its answer.
    assert sum(1 for r in fake_llm.requests if turn_of(r) == 0) == 1
    answers = [m["content"] for m in fake_llm.requests[-1]["messages"] if m.get("role") == "tool"]
    assert answers == ["Step 1 of 2 recorded. Next: step 2: Write it"]


async def _true(value: bool) -> None:
    assert value
