"""Plans run on a real Temporal dev server: DAG scheduling, variables, artifacts, failures."""

from __future__ import annotations

import asyncio
import re

import pytest

from client.outcome import run_outcome
from tests.conftest import ROOT, Env
from tests.integration.eventually import eventually
from tests.integration.helpers import RUNNING, agents_scheduled, board, handled_end_of
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


def by_id(result):
    return {a.id: a for a in result.agents}


async def test_chain_diamond_and_fanout_examples_produce_the_right_results(env: Env):
    await env.start_worker()
    chain = await env.run((ROOT / "examples/chain.xml").read_text())
    assert chain.status == "completed", chain.summary
    agents = by_id(chain)
    assert agents["1"].result == "written"
    assert agents["2"].result == "Temporal keeps state durable.\nAgents run as activities.\n"
    assert agents["3"].result.startswith("[offline provider] ")
    assert "durable" in agents["3"].result

    diamond = await env.run(
        (ROOT / "examples/diamond.xml").read_text(), variables={"topic": "replay"}
    )
    agents = by_id(diamond)
    assert diamond.status == "completed"
    assert agents["1"].result.startswith("topic: replay")
    assert agents["4"].result.startswith("[offline provider]") and "Lines:" in agents["4"].result

    fanout = await env.run((ROOT / "examples/fanout.xml").read_text())
    agents = by_id(fanout)
    assert fanout.status == "completed"
    assert [agents[str(i + 2)].result for i in range(8)] == [str((i + 1) ** 2) for i in range(8)]
    assert agents["10"].result == str(sum((i + 1) ** 2 for i in range(8)))


async def test_an_agent_starts_as_soon_as_its_own_dependencies_finish(env: Env):
    """No level barrier: C (level 1, after fast A) starts while B (level 0, slow) still runs."""
    await env.start_worker()
    plan = """<workflow name="no barrier" taskId="nb">
      <agent name="shell" id="A"><task>fast</task><config>{"tool": "shell", "command": "sleep 0.2; echo a"}</config></agent>
      <agent name="shell" id="B"><task>slow</task><config>{"tool": "shell", "command": "sleep 4; echo b"}</config></agent>
      <agent name="shell" id="C" depends="A"><task>after A</task><config>{"tool": "shell", "command": "echo c {{agent_A_result}}"}</config></agent>
    </workflow>"""
    result = await env.run(plan)
    agents = by_id(result)
    assert result.status == "completed"
    assert agents["C"].result == "c a"
    assert agents["C"].started_at < agents["B"].ended_at
    assert agents["C"].ended_at < agents["B"].ended_at


async def test_max_parallel_bounds_how_many_agents_run_at_once(env: Env):
    """max_parallel=2, six independent agents, each held until the test releases it: two run
    at once (not one, not three); each end starts exactly one more; and the real attempts
    (their activity spans) are two deep at the peak, never deeper."""
    await env.start_worker()
    agents = "".join(
        f'<agent name="shell" id="{i}"><task>t{i}</task><config>{{"tool": "shell", '
        f'"command": "until test -e go-{i}; do sleep 0.05; done; echo {i}"}}</config></agent>'
        for i in range(6)
    )
    handle = await env.start(
        f'<workflow name="par" taskId="p">{agents}</workflow>', options=RunOptions(max_parallel=2)
    )
    workspace = env.home / "runs" / handle.id / "workspace"

    async def running() -> list[str]:
        return sorted(k for k, t in (await board(handle)).items() if t.status in RUNNING)

    # The run has set itself up and made its first dispatch: two, the four others wait (held,
    # neither can end, so nothing else can start until the test releases one).
    events = await eventually(lambda: handled_end_of(handle, activity_type="leader_setup"))
    assert agents_scheduled(events) == ["T-0-v1-d1", "T-1-v1-d1"]
    assert await running() == ["0", "1"]

    def workspace_made() -> None:
        assert workspace.is_dir(), "the first attempt has not made the run's workspace yet"

    await eventually(workspace_made)
    for i in range(6):
        (workspace / f"go-{i}").touch()
        # T-i's end is handled: the slot it freed went to exactly one more agent, if any is left.
        events = await eventually(lambda i=i: handled_end_of(handle, f"T-{i}-v1-d1"))
        assert agents_scheduled(events) == [f"T-{j}-v1-d1" for j in range(min(i + 3, 6))]
        assert await running() == [str(j) for j in range(i + 1, min(i + 3, 6))]

    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "completed" and [a.result for a in result.agents] == [
        str(i) for i in range(6)
    ]
    spans = [(a.started_at, a.ended_at) for a in result.agents]
    depth = [sum(1 for s, e in spans if s <= start < e) for start, _ in spans]
    assert max(depth) == 2, depth


async def test_variables_context_and_results_flow_between_agents(env: Env):
    await env.start_worker()
    plan = """<workflow name="flow" taskId="flow">
      <variables><variable name="greeting">hello</variable></variables>
      <agent name="shell" id="1"><task>say</task><config>{"tool": "shell", "command": "echo {{greeting}} {{context.who}}"}</config></agent>
      <agent name="shell" id="2" depends="1"><task>shout</task><config>{"tool": "shell", "command": "echo '{{agent_1_result}}' | tr a-z A-Z"}</config></agent>
    </workflow>"""
    result = await env.run(plan, variables={"greeting": "hi"}, context={"who": "ada"})
    assert by_id(result)["2"].result == "HI ADA"


async def test_a_five_megabyte_result_travels_as_an_artifact_and_renders_in_full(env: Env):
    await env.start_worker()
    size = 5 * 1000 * 1000
    plan = f"""<workflow name="big" taskId="big">
      <agent name="shell" id="1"><task>make 5 MB</task>
        <config>{{"tool": "shell", "command": "head -c {size} /dev/zero | tr '\\\\0' x", "maxOutputBytes": 8000000}}</config></agent>
      <agent name="file" id="2" depends="1"><task>write it</task>
        <config>{{"tool": "file_write", "path": "big.txt", "content": "{{{{agent_1_result}}}}"}}</config></agent>
      <agent name="shell" id="3" depends="2"><task>measure</task>
        <config>{{"tool": "shell", "command": "wc -c &lt; big.txt"}}</config></agent>
    </workflow>"""
    handle = await env.start(plan)
    result = await asyncio.wait_for(run_outcome(handle), 60)
    agents = by_id(result)
    assert result.status == "completed", result.summary
    assert agents["1"].result is None and agents["1"].result_ref.size == size
    stored = env.home / "artifacts" / agents["1"].result_ref.uri.removeprefix("artifact:")
    assert stored.stat().st_size == size
    assert agents["2"].result == f"wrote {size:,} bytes to big.txt"
    assert agents["3"].result.strip() == str(size)
    history = await handle.fetch_history()
    assert len(history.to_json()) < 200_000  # 5 MB went through the store, not the history


async def test_a_failing_agent_blocks_its_dependents_and_spares_independent_ones(env: Env):
    await env.start_worker()
    plan = """<workflow name="failure" taskId="fail">
      <agent name="shell" id="1"><task>ok</task><config>{"tool": "shell", "command": "echo one"}</config></agent>
      <agent name="shell" id="2" depends="1"><task>breaks</task>
        <config>{"tool": "shell", "command": "echo broken >&amp;2; exit 3", "retry": {"maximumAttempts": 2, "initialInterval": 0.1}}</config></agent>
      <agent name="shell" id="3" depends="2"><task>after the break</task><config>{"tool": "shell", "command": "echo three"}</config></agent>
      <agent name="shell" id="4" depends="3"><task>further down</task><config>{"tool": "shell", "command": "echo four"}</config></agent>
      <agent name="shell" id="5"><task>independent</task><config>{"tool": "shell", "command": "sleep 1; echo five"}</config></agent>
    </workflow>"""
    result = await env.run(plan)
    agents = by_id(result)
    assert result.status == "failed"
    assert {k: a.status for k, a in agents.items()} == {
        "1": "completed",
        "2": "failed",
        "3": "blocked",
        "4": "blocked",
        "5": "completed",
    }
    assert "exited with status 3" in agents["2"].error and "broken" in agents["2"].error
    # a non-zero exit is final on its first attempt, and says so
    assert "not retried: retrying would not help" in agents["2"].error
    assert agents["3"].error == "T-2 failed" and agents["4"].error == "T-3 blocked"
    assert agents["5"].result == "five"
    assert result.summary == "2 of 5 agents completed; 1 failed (T-2); 2 blocked (T-3, T-4)"


async def test_a_config_mistake_fails_at_once_without_retries(env: Env):
    await env.start_worker()
    plan = """<workflow name="cfg" taskId="cfg">
      <agent name="shell" id="1"><task>no command</task><config>{"tool": "shell"}</config></agent>
    </workflow>"""
    result = await env.run(plan)
    (agent,) = result.agents
    assert agent.status == "failed"
    assert "needs a 'command' string" in agent.error and "not retried" in agent.error


async def test_activities_are_labelled_for_the_web_ui_and_the_board_is_published(env: Env):
    await env.start_worker()
    handle = await env.start((ROOT / "examples/chain.xml").read_text())
    await asyncio.wait_for(run_outcome(handle), 60)
    history = await handle.fetch_history()
    summaries = []
    for event in history.events:
        attrs = event.activity_task_scheduled_event_attributes
        if (
            event.HasField("activity_task_scheduled_event_attributes")
            and attrs.activity_type.name == "run_agent"
        ):
            summaries.append(event.user_metadata.summary)
            # One worker serves the leader and every kind: agents run on the leader's queue.
            assert attrs.task_queue.name == env.settings.task_queue
    payload_text = [s.data.decode() for s in summaries]
    assert len(payload_text) == 3, (
        payload_text
    )  # one per agent: the leader's own activities are apart
    assert any("T-3 · llm · Summarize the note in one sentence" in t for t in payload_text), (
        payload_text
    )
    desc = await handle.describe()
    assert await desc.static_summary() == "Count the words of a generated note"
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert re.search(r"^T-1 +shell +\+ completed ", details, re.M) and "3 completed" in details
