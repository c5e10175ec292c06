"""A direct agent's ``<output>`` schema is checked against its call's result: it was ignored,
so a shell agent printing ``hello`` under a schema that asks for an object completed, and the
``{{agent_N_result.field}}`` after it failed instead (walk9). Through the ``run_agent``
activity itself (the SDK's ActivityEnvironment, no server), real commands."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from activities.agents.activity import AgentActivities
from tests.unit.attempt_runner import run
from xsky.config import load_settings
from xsky.plan.models import WorkflowAgent
from xsky.runs import AgentInput

SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


@pytest.fixture
def acts(tmp_path: Path) -> Iterator[AgentActivities]:
    user = tmp_path / "settings.json"
    user.write_text(json.dumps({"security": {"sandbox": "off"}}))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("XSKY_", "OPENAI_"))},
        "XSKY_HOME": str(tmp_path / "home"),
        "XSKY_USER_SETTINGS": str(user),
        "XSKY_PROJECT_DIR": str(tmp_path / "project"),
    }
    made = AgentActivities(load_settings(env))
    yield made
    asyncio.run(made.close())


def shell_agent(agent_id: str, command: str) -> AgentInput:
    config = {"tool": "shell", "command": command, "output": SCHEMA}
    agent = WorkflowAgent(id=agent_id, name="shell", task="count", config=config)
    return AgentInput(run_id="run-1", task_id=f"T-{agent_id}", agent=agent)


async def test_a_direct_result_that_misses_its_schema_fails_and_says_why(acts: AgentActivities):
    with pytest.raises(ApplicationError) as e:
        await run(acts, shell_agent("a1", "echo hello"), activity_id="T-a1-v1-d1")
    assert e.value.type == "OutputSchemaMismatch" and e.value.non_retryable
    assert "does not match the output schema" in str(e.value) and "JSON" in str(e.value)
    wrong = shell_agent("a2", """echo '{"n": "three"}'""")
    with pytest.raises(ApplicationError, match=r"n: 'three' is not of type 'integer'"):
        await run(acts, wrong, activity_id="T-a2-v1-d1")


async def test_a_direct_result_that_fits_its_schema_completes_as_it_was(acts: AgentActivities):
    outcome = await run(acts, shell_agent("a3", """echo '{"n": 3}'"""), activity_id="T-a3-v1-d1")
    assert json.loads(outcome.result or "") == {"n": 3}
