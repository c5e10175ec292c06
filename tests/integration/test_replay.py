"""Determinism: real runs replay against today's workflow code, and so do the recorded ones.

Each scenario runs to its end on the real dev server, replays its fetched history with the
Replayer (which raises on non-determinism) and, with XSKY_RECORD_HISTORIES=1, is kept in
tests/fixtures/histories. Every kept history must keep replaying; and every watched module
(workflows/, xsky/leader/) must be exercised by a history recorded with its current code
(tests/integration/histories.py; docs/development.md, "Replay histories"). A change that breaks the old histories
goes behind ``workflow.patched``. The skill pipeline's scenarios: test_replay_skills.py; the
verdicts': test_replay_verdicts.py (all recorded by one command, ``RERECORD``).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowHistory

from client.outcome import run_outcome
from tests.conftest import ROOT, Env
from tests.fake_llm import FakeLLM, text
from tests.integration.eventually import eventually
from tests.integration.helpers import (
    ask,
    board,
    noop,
    plan,
    query,
    wait_requests,
)
from tests.integration.histories import (
    RERECORD,
    agents_scheduled,
    code_digest,
    current_digests,
    events,
    fixture_files,
    record,
    replayer,
    stale_modules,
)
from workflows.leader import LeaderWorkflow
from xsky.leader.state import (
    AnswerRequest,
    ApprovePlanRequest,
    DefineRoleRequest,
    PauseRequest,
    ReplanRequest,
    ResumeRequest,
    SkipTaskRequest,
)
from xsky.runs import RunInput, RunOptions

pytestmark = pytest.mark.integration

PLANS = {
    "diamond": (ROOT / "examples/diamond.xml").read_text(),
    "fanout": (ROOT / "examples/fanout.xml").read_text(),
    # forEach: the loop's expansion into a plan version, its items, their gathering
    "loop": """<workflow name="loop" taskId="replay-loop">
      <agent name="shell" id="1"><task>list</task><config>{"tool": "shell", "command": "printf 'x\\ny\\n'"}</config></agent>
      <agent name="shell" id="2" depends="1" forEach="{{agent_1_result}}"><task>say {{item}}</task><config>{"tool": "shell", "command": "echo {{item_index}} {{item}}"}</config></agent>
    </workflow>""",
    # watch: polls, firings, the watch's end at its limit (a timer: no page needed)
    "watch": """<workflow name="watch" taskId="replay-watch">
      <agent name="shell" id="w"><task>tick</task><config>{"tool": "shell", "command": "echo tick {{item_index}}", "watch": {"event": "timer", "every": 0.3, "maxFirings": 2, "idleTimeout": 10}}</config></agent>
    </workflow>""",
    "failure": """<workflow name="failure" taskId="replay-failure">
      <agent name="shell" id="1"><task>ok</task><config>{"tool": "shell", "command": "echo one"}</config></agent>
      <agent name="shell" id="2"><task>breaks</task><config>{"tool": "shell", "command": "exit 1", "retry": {"maximumAttempts": 1}}</config></agent>
      <agent name="llm" id="3" depends="1,2"><task>never runs</task><input>{{agent_1_result}}</input></agent>
    </workflow>""",
}


def shell(agent_id: str, command: str, depends: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    return (
        f'<agent name="shell" id="{agent_id}"{dep}><task>run {agent_id}</task>'
        f'<config>{{"tool": "shell", "command": "{command}", "retry": {{"maximumAttempts": 1}}}}</config></agent>'
    )


async def finish(name: str, handle: WorkflowHandle[Any, Any]) -> WorkflowHistory:
    history = await handle.fetch_history()
    await record(name, history)
    return history


# -- runs of the leader ------------------------------------------------------------------------------


async def test_fresh_runs_replay_without_nondeterminism(env: Env):
    await env.start_worker()
    for name, xml in PLANS.items():
        handle = await env.start(xml)
        await run_outcome(handle)
        await finish(name, handle)


async def test_a_steered_run_replays_without_nondeterminism(env: Env):
    """Questions, answers, a replan, pause and resume, a skipped task: all replay."""
    await env.start_worker()
    handle = await env.start(
        plan(
            ask("1", "Go?"),
            noop("2", 0.2),
            noop("3", 0, depends="2"),
            ask("4", "Skip me?"),
            name="steered",
        )
    )
    by_task = {r.task_id: r.id for r in await wait_requests(handle, 2)}
    await handle.signal(LeaderWorkflow.pause, PauseRequest())
    await handle.execute_update(LeaderWorkflow.replan, ReplanRequest(prompt="then run `echo more`"))
    await handle.signal(LeaderWorkflow.resume, ResumeRequest())
    await handle.execute_update(
        LeaderWorkflow.skip_task, SkipTaskRequest(task_id="T-4", result="skipped")
    )
    await handle.execute_update(
        LeaderWorkflow.answer, AnswerRequest(request_id=by_task["T-1"], text="yes")
    )
    assert (await run_outcome(handle)).status == "completed"
    await finish("steered", handle)


async def test_a_run_planned_from_a_sentence_replays(env: Env):
    await env.start_worker()
    handle = await env.client.start_workflow(
        LeaderWorkflow.run,
        RunInput(task_prompt="1. Run `echo one` 2. Run `echo two`", task_id="replay-planned"),
        id=f"xsky-replay-planned-{env.settings.task_queue}",
        task_queue=env.settings.task_queue,
    )
    env.handles.append(handle)
    assert (await run_outcome(handle)).status == "completed"
    await finish("planned", handle)


async def test_a_run_under_review_starts_nothing_until_approve_plan_then_completes(env: Env):
    await env.start_worker()
    handle = await env.start(
        plan(noop("1"), noop("2", depends="1"), name="review"), options=RunOptions(review=True)
    )
    (req,) = await wait_requests(handle, 1)
    assert (req.id, req.kind) == ("R-1", "review")
    assert {k: (t.status, t.attempt) for k, t in (await board(handle)).items()} == {
        "1": ("pending", 0),
        "2": ("pending", 0),
    }
    await handle.execute_update(
        LeaderWorkflow.approve_plan, ApprovePlanRequest(version=1, comment="fine")
    )
    result = await run_outcome(handle)
    assert result.status == "completed" and [a.attempts for a in result.agents] == [1, 1]
    history = await finish("review", handle)
    assert agents_scheduled(history) == ["T-1-v1-d1", "T-2-v1-d1"]


async def test_an_automatic_replan_giving_a_new_agent_a_shell_waits_for_a_person(
    env: Env, fake_llm: FakeLLM
):
    """T-1 fails; the planner's new plan repairs it and adds T-3, a shell agent. Nobody asked
    for that shell: a model did. So the run starts nothing — not T-3, not the repaired T-1 —
    until a person approves plan v2 (LeaderCore.privileged_changes / require_review)."""
    v2 = plan(noop("1"), noop("2", depends="1"), shell("3", "echo fixed", depends="2"), name="priv")
    fake_llm.responder = lambda req, i: text(v2)  # only the planner asks the model here
    await env.start_worker()
    handle = await env.start(
        plan(shell("1", "exit 3"), noop("2", depends="1"), name="priv"),
        # exit 3 is deterministic: replanned automatically only because the run opts in
        options=RunOptions(replan_deterministic=True),
    )

    # T-3 is on the board once plan v2 is: the review, if any, was set in that same workflow task.
    async def plan_v2_on_the_board() -> None:
        assert "3" in await board(handle), "plan v2 is not on the board yet"

    await eventually(plan_v2_on_the_board, timeout=60)
    reqs = await query(handle, LeaderWorkflow.pending_requests)
    assert [(r.id, r.kind) for r in reqs] == [("R-2", "review")]
    notes = [v.reason for v in await query(handle, LeaderWorkflow.plan_history)]
    assert notes[1].startswith("automatic replan 1/2: T-1 failed")
    assert notes[2] == (
        "the automatic replan gives agents 3 shell, Python or network tools: "
        "waiting for approve_plan (version 2)"
    )
    # Dispatching waits while the review does, so what the board and the history show now
    # holds until approve_plan.
    assert {k: (t.status, t.attempt) for k, t in (await board(handle)).items()} == {
        "1": ("pending", 1),
        "2": ("pending", 0),
        "3": ("pending", 0),
    }
    assert agents_scheduled(await handle.fetch_history()) == ["T-1-v1-d1"]
    assert (await handle.describe()).status.name == "RUNNING"  # type: ignore[union-attr]

    await handle.execute_update(LeaderWorkflow.approve_plan, ApprovePlanRequest(version=2))
    result = await run_outcome(handle)
    assert result.status == "completed", result.summary
    assert [(a.id, a.result) for a in result.agents][1:] == [("2", "r2"), ("3", "fixed")]
    history = await finish("privileged_replan", handle)
    assert agents_scheduled(history) == ["T-1-v1-d1", "T-1-v2-d2", "T-2-v2-d1", "T-3-v2-d1"]
    assert len(fake_llm.requests) == 1  # the planner, once


async def test_an_automatic_replans_review_times_out_like_a_first_plans(
    env: Env, fake_llm: FakeLLM
):
    """The same privileged replan, and nobody approves it: after review_timeout the run is
    cancelled (review_timeout_action "cancel"), T-3's shell never ran (patch
    replan-review-deadline)."""
    v2 = plan(noop("1"), noop("2", depends="1"), shell("3", "echo fixed", depends="2"), name="priv")
    fake_llm.responder = lambda req, i: text(v2)
    await env.start_worker()
    handle = await env.start(
        plan(shell("1", "exit 3"), noop("2", depends="1"), name="priv"),
        options=RunOptions(review_timeout=2, replan_deterministic=True),
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    assert result.status == "cancelled", result.summary
    assert "nobody approved the plan within 2s" in result.summary
    history = await finish("privileged_replan_timed_out", handle)
    assert agents_scheduled(history) == ["T-1-v1-d1"]  # nothing started after the replan
    assert await query(handle, LeaderWorkflow.pending_requests) == []


async def test_a_role_defined_while_the_run_goes_is_taken_by_a_new_agent(
    env: Env, fake_llm: FakeLLM
):
    # a role thinks with a model (without one it fails at once): the scripted one answers
    fake_llm.responder = lambda req, i: text("Replay histories now cover every workflow.")
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Go on?"), name="define-role"))
    (req,) = await wait_requests(handle, 1)
    defined = await handle.execute_update(
        LeaderWorkflow.define_role,
        DefineRoleRequest(
            name="release-notes",
            description="writes release notes",
            system_prompt="You write release notes.",
            allowed_tools=["file_read"],
        ),
    )
    assert defined.message.startswith("role release-notes defined")
    writer = (
        '<agent name="release-notes" id="2" depends="1"><task>Summarise the release.</task>'
        "<input>The release adds replay histories for every workflow.</input></agent>"
    )
    await handle.execute_update(
        LeaderWorkflow.replan,
        ReplanRequest(xml=plan(ask("1", "Go on?"), writer, name="define-role")),
    )
    await handle.execute_update(LeaderWorkflow.answer, AnswerRequest(request_id=req.id, text="go"))
    result = await run_outcome(handle)
    assert result.status == "completed", result.summary
    assert (await board(handle))["2"].assigned_agent == "release-notes"
    await finish("define_role", handle)


async def test_local_tools_on_runs_instant_agents_as_activities_and_replays(env: Env):
    """Since v0.5.0 (patch ``local-tools-off``) localTools is ignored: instant no-ops run as
    activities, no local activity, no nudge timer. Runs of before replay as they ran:
    ``local_settled_v0.4.0`` (local results settled on the nudge timer, patch
    ``local-results-next-task``) and ``local_settled_v0.3.0`` (the branch before it)."""
    await env.start_worker()
    fan = [noop(str(i), depends="1") for i in range(2, 8)]
    handle = await env.start(
        plan(noop("1"), *fan, noop("8", depends="2,3,4,5,6,7"), name="local"),
        options=RunOptions(local_tools=True),
    )
    result = await run_outcome(handle)
    assert result.status == "completed" and len(result.agents) == 8
    history = await finish("local_tools_off", handle)
    local = [
        e
        for e in events(history, EventType.EVENT_TYPE_MARKER_RECORDED)
        if e.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]
    assert local == [] and len(agents_scheduled(history)) == 8  # every agent an activity
    assert events(history, EventType.EVENT_TYPE_TIMER_FIRED) == []


async def test_a_large_plan_started_by_reference_replays(env: Env):
    """Over INLINE_AGENTS tasks (the board is throttled, results go by reference), started
    with its plan in the artifact store; by_reference's limit is lowered so 202 agents cross
    it (at the default 512 KiB it takes thousands)."""
    from tests.integration.plan_by_reference import by_reference
    from xsky.leader.core import INLINE_AGENTS
    from xsky.plan.xml import parse_workflow

    await env.start_worker()
    leaves = [noop(f"n{i:03d}", depends="root") for i in range(INLINE_AGENTS)]
    sink = noop("sink", depends=",".join(f"n{i:03d}" for i in range(INLINE_AGENTS)))
    wf = parse_workflow(plan(noop("root"), *leaves, sink, name="large"))
    wid = f"xsky-large-{uuid.uuid4().hex[:8]}"
    inp = by_reference(
        RunInput(workflow=wf, options=RunOptions(max_parallel=100)), env.settings, wid, 10_000
    )
    assert inp.workflow is None and inp.plan_ref is not None
    handle = await env.client.start_workflow(
        LeaderWorkflow.run, inp, id=wid, task_queue=env.settings.task_queue
    )
    env.handles.append(handle)
    result = await run_outcome(handle)
    total = INLINE_AGENTS + 2
    assert result.counts == {"completed": total} and result.results_ref is not None
    await finish("large_plan", handle)


async def test_a_run_continued_as_new_with_its_state_by_reference_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """On a server that suggests continue-as-new every 30 events, with a 1 KiB inline limit:
    every execution hands its state on by reference. Each replays; the second — which read
    its state by reference and handed it on the same way — is the one kept."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    from activities.artifacts import ArtifactStore
    from tests.integration.test_durability import own_server
    from tests.integration.test_scale import CAN_EVERY_30
    from xsky.plan.xml import parse_workflow

    async with own_server(tmp_path, monkeypatch, "can", CAN_EVERY_30) as (_, client, settings):
        chain = [noop(str(i), depends=str(i - 1) if i > 1 else "") for i in range(1, 15)]
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(
                workflow=parse_workflow(plan(*chain, name="continued")),
                options=RunOptions(inline_limit=1024),
            ),
            id=f"xsky-continued-{uuid.uuid4().hex[:8]}",
            task_queue=settings.task_queue,
        )
        result = await run_outcome(handle)
        store = ArtifactStore(settings.artifacts)  # a continued run's results go by reference
        texts = [
            a.result if a.result_ref is None else store.read_text(a.result_ref)
            for a in result.agents
        ]
        assert result.status == "completed" and texts == [f"r{i}" for i in range(1, 15)]
        histories, run_id = [], handle.first_execution_run_id
        while run_id:  # the chain of executions, each naming the next
            history = await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
            await replayer().replay_workflow(history)
            histories.append(history)
            last = history.events[-1]
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
        assert len(histories) >= 3, (
            f"{len(histories)} executions: continued as new fewer than twice"
        )
        for before in histories[:-1]:
            carried = before.events[-1].workflow_execution_continued_as_new_event_attributes
            (inp,) = pydantic_data_converter.payload_converter.from_payloads(
                carried.input.payloads, [RunInput]
            )
            assert inp.state is None and inp.state_ref is not None, "the state went inline"
        await record("continued", histories[1])


# -- what is recorded ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.stem)
async def test_recorded_history_replays(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    await replayer().replay_workflow(history)


def test_every_watched_module_is_exercised_by_a_history_recorded_with_its_code():
    problems = stale_modules()
    assert not problems, "\n".join(problems)


def test_the_code_digest_counts_code_not_comments_or_docstrings():
    source = '"""Module."""\nimport x\n\n\ndef f(a):\n    """Doc."""\n    return a + 1\n'
    assert code_digest(source) == code_digest(
        '"""Another."""\nimport x  # why\n\n\ndef f(a):\n    # a note\n    return (a + 1)\n'
    )
    assert code_digest(source) != code_digest(source.replace("a + 1", "a + 2"))


def test_a_changed_module_is_named_with_the_command_that_re_records():
    changed = {**current_digests(), "workflows/skills/library.py": "0" * 64}
    problems = stale_modules(changed)
    assert len(problems) == 1 and problems[0].startswith("workflows/skills/library.py changed")
    assert "skills_library" in problems[0] and RERECORD in problems[0]


WATCHING = (
    '<agent name="shell" id="w"><task>watch</task><config>{"tool": "noop", "seconds": 2}</config>'
    "<nodes>"
    '<watch event="dom" loop="false"><description>the <b>Buy</b> button</description>'
    "<trigger><node>say so</node></trigger></watch></nodes></agent>"
)


async def test_a_replan_keeping_a_watch_whose_description_holds_elements_replays(env: Env):
    """The run compared the plans by what it read of the description: a history recorded
    before v0.11.5 (cut at its first element) replays as it was (patch watch-description-whole),
    its running watching agent left to run, not stopped and started again."""
    await env.start_worker()

    def xml(*more: str) -> str:
        return plan(WATCHING, noop("2", 1.0), *more, name="watch-description")

    handle = await env.start(xml())
    while (await board(handle))["w"].status not in ("dispatched", "in_progress"):
        await asyncio.sleep(0.05)
    said = await handle.execute_update(LeaderWorkflow.replan, ReplanRequest(xml=xml(noop("3"))))
    assert "added 3" in said.message, said.message
    result = await run_outcome(handle)
    assert result.status == "completed" and [a.id for a in result.agents] == ["w", "2", "3"]
    assert result.agents[0].attempts == 1  # left to run, not started again
    await finish("watch_description", handle)
