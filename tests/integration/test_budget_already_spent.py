"""`budget RUN LIMITS` with a run limit already spent (walk10: `minutes=30` on a run 31 minutes
old was accepted in silence): the run takes it, and the person is told that it is spent, what
happens next and how to go on."""

from __future__ import annotations

import pytest

from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board_shows, plan
from tests.integration.test_cli_runs import starter

pytestmark = pytest.mark.integration


async def test_a_run_limit_already_spent_is_said_with_what_happens_next(env: Env):
    await env.start_worker()
    waits = (
        '<agent name="shell" id="1"><task>wait</task>'
        '<config>{"tool": "shell", "command": "sleep 60"}</config></agent>'
    )
    handle = await env.start(plan(waits))
    await eventually(lambda: board_shows(handle, {"1": "in_progress"}), 60)

    code, out, err = await starter(env, "budget", handle.id, "minutes=0.001")
    assert code == 0 and "set the run's budget: minutes=0.001" in out, (out, err)
    assert "note: minutes=0.001 is already spent (the run is" in err, err
    assert "no new agent starts" in " ".join(err.split()), err
    assert f"starter.py budget {handle.id} minutes=…" in " ".join(err.split()), err

    code, out, err = await starter(env, "budget", handle.id, "agents=1")
    assert code == 0 and "agents=1 is already spent (1 task started): no new task starts" in (
        " ".join(err.split())
    ), err
    # a limit not yet reached: no note
    code, out, err = await starter(env, "budget", handle.id, "minutes=600,agents=5")
    assert code == 0 and "note:" not in err, err
    await handle.terminate("test over")
