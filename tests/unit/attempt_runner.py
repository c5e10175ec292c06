"""One ``run_agent`` attempt through the activity itself, without a server: the SDK's
ActivityEnvironment, with the attempt number and activity id a leader's retry would have.

Used in-process by tests/unit/test_store_ops.py and, as a process of its own that a test
kills (a worker lost at a chosen moment), with ``python -m tests.unit.attempt_runner
SETTINGS_JSON INPUT_JSON ATTEMPT``: it prints the outcome as JSON.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.testing import ActivityEnvironment

from activities.agents.activity import AgentActivities
from xsky.config import load_settings
from xsky.runs import AgentInput, AgentOutcome


def environment(
    attempt: int = 1, activity_id: str = "T-1-v1-d1", heartbeat: float = 10.0
) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        attempt=attempt,
        activity_id=activity_id,
        heartbeat_timeout=timedelta(seconds=heartbeat),
        start_to_close_timeout=timedelta(seconds=120),
        schedule_to_close_timeout=None,
        started_time=datetime.now(UTC),
        workflow_id=None,  # not scheduled by a leader: no progress signals to send
    )
    env.on_heartbeat = lambda *details: None
    return env


async def run(
    acts: AgentActivities,
    inp: AgentInput,
    attempt: int = 1,
    activity_id: str = "T-1-v1-d1",
    heartbeat: float = 10.0,
) -> AgentOutcome:
    return await environment(attempt, activity_id, heartbeat).run(acts.run_agent, inp)


def main() -> None:
    env_vars, raw, attempt = json.loads(sys.argv[1]), Path(sys.argv[2]).read_text(), sys.argv[3]
    acts = AgentActivities(load_settings(env_vars))
    outcome = asyncio.run(run(acts, AgentInput.model_validate_json(raw), int(attempt)))
    print(outcome.model_dump_json())


if __name__ == "__main__":
    main()
