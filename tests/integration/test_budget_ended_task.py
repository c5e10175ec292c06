"""`budget RUN --task T-n LIMITS` on a task that has ended: the run takes the cap (its update
accepts it), but the person is told what it will do — nothing for a completed task, which does
not run again, and only on a retry for a failed one (walk9: it was accepted in silence)."""

from __future__ import annotations

import pytest

from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, board_shows, plan, wait_requests
from tests.integration.test_cli_runs import starter

pytestmark = pytest.mark.integration


async def test_a_cap_for_an_ended_task_says_what_it_will_do(env: Env):
    await env.start_worker()
    done = '<agent name="shell" id="2"><task>ok</task><config>{"tool": "shell", "command": "true"}</config></agent>'
    fails = '<agent name="shell" id="3"><task>no</task><config>{"tool": "shell", "command": "exit 3"}</config></agent>'
    handle = await env.start(plan(ask("1", "Which region?"), done, fails))
    await wait_requests(handle, 1)
    await eventually(lambda: board_shows(handle, {"2": "completed", "3": "failed"}), 60)

    code, out, err = await starter(env, "budget", handle.id, "--task", "T-2", "tokens=5000")
    assert code == 0 and "set T-2's cap" in out, (out, err)
    assert "T-2 has completed and does not run again in this run" in err, err
    code, out, err = await starter(env, "budget", handle.id, "--task", "T-3", "tokens=5000")
    assert (
        code == 0
        and f"T-3 has failed: its cap applies if it runs again (`retry {handle.id} T-3`)" in err
    ), err
    # a task that will still run: no note
    code, out, err = await starter(env, "budget", handle.id, "--task", "T-1", "tokens=5000")
    assert code == 0 and "note:" not in err, err
    await handle.terminate("test over")
