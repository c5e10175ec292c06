"""Determinism: recorded histories replay against the current LeaderWorkflow code.

The JSON files in tests/fixtures/histories were recorded from real runs (set
XSKY_RECORD_HISTORIES=1 to re-record them with this test). A change to the workflow that
breaks them must go behind ``workflow.patched``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.conftest import ROOT, Env
from tests.skills_fixtures import Transcripts
from workflows.leader import LeaderWorkflow
from workflows.skills.watch import SkillDeltaWorkflow, SkillsScanWorkflow
from xsky.client import run_outcome

pytestmark = pytest.mark.integration

FIXTURES = ROOT / "tests" / "fixtures" / "histories"
PLANS = {
    "diamond": (ROOT / "examples/diamond.xml").read_text(),
    "fanout": (ROOT / "examples/fanout.xml").read_text(),
    "failure": """<workflow name="failure" taskId="replay-failure">
      <agent name="shell" id="1"><task>ok</task><config>{"tool": "shell", "command": "echo one"}</config></agent>
      <agent name="shell" id="2"><task>breaks</task><config>{"tool": "shell", "command": "exit 1", "retry": {"maximumAttempts": 1}}</config></agent>
      <agent name="llm" id="3" depends="1,2"><task>never runs</task><input>{{agent_1_result}}</input></agent>
    </workflow>""",
}


def replayer() -> Replayer:
    return Replayer(
        workflows=[LeaderWorkflow, SkillsScanWorkflow, SkillDeltaWorkflow],
        data_converter=pydantic_data_converter,
    )


async def test_fresh_runs_replay_without_nondeterminism(env: Env):
    await env.start_worker()
    for name, plan in PLANS.items():
        handle = await env.start(plan)
        await run_outcome(handle)
        history = await handle.fetch_history()
        await replayer().replay_workflow(history)  # raises on non-determinism
        if os.environ.get("XSKY_RECORD_HISTORIES"):
            (FIXTURES / f"{name}.json").write_text(history.to_json())


async def test_a_steered_run_replays_without_nondeterminism(env: Env):
    """Questions, answers, a replan, pause and resume, a skipped task: all replay."""
    from tests.integration.helpers import ask, noop, plan, wait_requests
    from xsky.leader.state import (
        AnswerRequest,
        PauseRequest,
        ReplanRequest,
        ResumeRequest,
        SkipTaskRequest,
    )

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
    result = await run_outcome(handle)
    assert result.status == "completed"
    history = await handle.fetch_history()
    await replayer().replay_workflow(history)
    if os.environ.get("XSKY_RECORD_HISTORIES"):
        (FIXTURES / "steered.json").write_text(history.to_json())


async def test_a_run_planned_from_a_sentence_replays(env: Env):
    from xsky.runs import RunInput

    await env.start_worker()
    handle = await env.client.start_workflow(
        LeaderWorkflow.run,
        RunInput(task_prompt="1. Run `echo one` 2. Run `echo two`", task_id="replay-planned"),
        id=f"xsky-replay-planned-{env.settings.task_queue}",
        task_queue=env.settings.task_queue,
    )
    env.handles.append(handle)
    assert (await run_outcome(handle)).status == "completed"
    history = await handle.fetch_history()
    await replayer().replay_workflow(history)
    if os.environ.get("XSKY_RECORD_HISTORIES"):
        (FIXTURES / "planned.json").write_text(history.to_json())


async def test_a_skills_scan_and_a_delta_replay(env: Env, transcripts: Transcripts):
    from tests.integration.test_skills_watch import scan_once, start_pipeline

    await start_pipeline(env)
    await scan_once(env.client, env.settings.skills_queue)
    queue = env.settings.skills_queue
    for kind, name in (
        ("SkillsScanWorkflow", "skills_scan"),
        ("SkillDeltaWorkflow", "skills_delta"),
    ):
        found = [
            w
            async for w in env.client.list_workflows(
                f"WorkflowType = '{kind}' AND TaskQueue = '{queue}'"
            )
        ]
        history = await env.client.get_workflow_handle(found[0].id).fetch_history()
        await replayer().replay_workflow(history)
        if os.environ.get("XSKY_RECORD_HISTORIES"):
            (FIXTURES / f"{name}.json").write_text(history.to_json())


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def test_there_are_recorded_histories():
    assert len(fixture_files()) >= 5


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.stem)
async def test_recorded_history_replays(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    await replayer().replay_workflow(history)
