"""`starter.py events`: a run's event stream as JSON lines, for clients other than the page."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import Env
from tests.integration.helpers import noop, plan
from tests.integration.test_cli_errors import run_main
from xsky.leader.run_events import RunEvent

pytestmark = pytest.mark.integration


async def test_starter_events_prints_the_stream_as_json_lines(env: Env):
    """`starter.py events RUN` and `--follow`: the same event objects as the page's stream."""
    await env.start_worker()
    handle = await env.start(plan(noop("1"), noop("2", depends="1"), name="events"))
    code, out, err, crash = await asyncio.to_thread(run_main, ["events", handle.id, "--follow"])
    assert (code, crash) == (0, None), err
    events = [RunEvent.model_validate_json(line) for line in out.splitlines()]
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == "plan" and [a["task"] for a in events[0].data["agents"]] == [
        "T-1",
        "T-2",
    ]
    assert events[-1].type == "run.ended" and events[-1].data["status"] == "completed"
    assert {e.data["task"] for e in events if e.type == "agent.completed"} <= {"T-1", "T-2"}
    # Once ended, without --follow: the whole run in one picture.
    code, out, err, _ = await asyncio.to_thread(run_main, ["events", handle.id])
    once = [RunEvent.model_validate_json(line) for line in out.splitlines()]
    assert [e.type for e in once][0] == "plan" and once[-1].type == "run.ended"
    assert {a["status"] for a in once[0].data["agents"]} == {"completed"}
