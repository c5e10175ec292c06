"""A direct agent's ``<output>`` schema is checked against its call's result: it was ignored,
so a shell agent printing ``hello`` under a schema that asks for an object completed, and the
``{{agent_N_result.field}}`` after it failed instead (walk9). Through the ``run_agent``
activity itself (the SDK's ActivityEnvironment, no server), real commands."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from activities.agents.activity import AgentActivities
from tests.unit.attempt_runner import run
from tests.unit.test_store_ops import agent_input, settings_env
from xsky.config import load_settings
from xsky.runs import AgentInput

SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


@pytest.fixture
def acts(tmp_path: Path) -> Iterator[AgentActivities]:
    made = AgentActivities(load_settings(settings_env(tmp_path)))
    yield made
    asyncio.run(made.close())


def shell_agent(agent_id: str, command: str) -> AgentInput:
    return agent_input({"tool": "shell", "command": command, "output": SCHEMA}, agent_id)


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
