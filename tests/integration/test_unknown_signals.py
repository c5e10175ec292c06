"""A signal of a name the leader has no handler for is refused where people look (patch
unknown-signals-refused), on a real dev server.

docs/steering.md said it: `temporal workflow signal --name resume_run` (an update's name) says
"Signal workflow succeeded" and does nothing, and nothing records it — the SDK kept the signal
unhandled in the worker's memory. Now a dynamic handler refuses it with what to send instead,
on the board's count and in the permission log; the signals the leader knows still reach their
own handlers, and a spam of unknown ones adds no command to the history (the server's own
events for each signal aside)."""

from __future__ import annotations

import asyncio

import pytest

from cli.devserver import temporal_binary
from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board, plan
from tests.integration.histories import replayer
from workflows.leader import LeaderWorkflow
from xsky.leader.state import PageRequest

pytestmark = pytest.mark.integration

SLOW = '<agent name="wait" id="1"><task>wait</task><config>{"tool": "noop", "seconds": 4}</config></agent>'


async def test_an_update_name_sent_as_a_signal_is_refused_and_known_signals_still_work(env: Env):
    await env.start_worker()
    handle = await env.start(plan(SLOW))
    await eventually(lambda: _status(handle, ("dispatched", "in_progress")), timeout=30)
    # the stock CLI's "succeeded" for an update's name
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(), "workflow", "signal", "--address", env.address, "-w", handle.id,
        "--name", "resume_run", "--input", "{}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out
    # a known signal is not taken by the dynamic handler: pause pauses
    await handle.signal("pause", {"reason": "lunch"})
    await eventually(lambda: _state(handle, "paused"), timeout=30)
    for _ in range(40):  # a spam of a typo
        await handle.signal("frobnicate", {"x": 1})
    await handle.signal("resume", {})

    async def heard() -> None:  # (an assertion: ``eventually`` asks until it holds)
        log = await handle.query(LeaderWorkflow.permission_log)
        assert sum(e.reason.startswith("refused") for e in log) >= 41, log

    await eventually(heard, timeout=30)
    log = await handle.query(LeaderWorkflow.permission_log)
    refused = [e for e in log if e.reason.startswith("refused")]
    assert refused[0].tool == "resume_run signal"
    assert (
        "resume_run is an update, not a signal: use `temporal workflow update execute "
        "--name resume_run`" in refused[0].reason
    )
    assert all(e.tool == "frobnicate signal" for e in refused[1:])
    page = await handle.query(LeaderWorkflow.task_board, PageRequest())
    assert any("41 signal(s) refused" in n for n in page.notes), page.notes
    run = await asyncio.wait_for(run_outcome(handle), 60)
    assert run.status == "completed", run  # resumed by its signal, ran to the end
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    signalled = [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in history.events
        if e.HasField("workflow_execution_signaled_event_attributes")
    ]
    assert len([n for n in signalled if n != "report_progress"]) == 43  # (the agent's own aside)
    # 41 refusals, no command of their own (one marker: the patch's)
    assert sum(b"unknown-signals-refused" in m.SerializeToString() for m in markers) == 1
    assert len(markers) < 20, len(markers)
    await replayer().replay_workflow(history)


async def _status(handle, statuses) -> None:  # (assertions: ``eventually`` asks until they hold)
    assert (await board(handle))["1"].status in statuses


async def _state(handle, state: str) -> None:
    assert (await handle.query(LeaderWorkflow.task_board, PageRequest())).state == state
