"""No silent repeat of a call that must not be repeated, whenever its worker dies: SIGKILLs at
random moments around a non-idempotent direct command (before it ends, a moment after), each
time a new run. Whatever the moment, the effect happened once: the retry either returns the
command's recorded end (it had ended) or asks a person (it may have run) — never runs it again
on its own. `make chaos` (a minute or two of SIGKILLs)."""

from __future__ import annotations

import asyncio
import json
import random
import signal
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import query, requests_pending
from tests.integration.test_durability import stop_worker_process
from tests.integration.test_recovery import shell_worker
from tests.sigkill import kill_after
from workflows.leader import LeaderWorkflow
from xsky.leader.state import AnswerRequest
from xsky.runs import RunOptions

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

# The effect, a while of work, then the end: killed anywhere in it or just after it. The work
# outlasts the watchdog's DYING_GRACE (a command that ends within 0.5 s of its worker's death
# is let end and recorded): with 0.3 s of it, every kill was "returned", none "asked".
COMMAND = "echo effect >> fx.txt; touch began; sleep 1.5; echo ran"


def _plan(n: int) -> str:
    cfg = {"tool": "shell", "command": COMMAND, "idempotent": False, "heartbeatTimeout": 2}
    return (
        f'<workflow name="doubt-{n}" taskId="doubt-{n}"><agent name="shell" id="1"><task>pay</task>'
        f"<config><![CDATA[{json.dumps(cfg)}]]></config></agent></workflow>"
    )


async def test_a_non_idempotent_call_is_never_repeated_unasked_wherever_its_worker_dies(
    env: Env, tmp_path: Path
):
    rng = random.Random(20261205)
    await env.start_worker(kinds=["llm"])
    asked = returned = 0
    for n in range(8):
        handle = await env.start(_plan(n), options=RunOptions(max_auto_replans=0))
        workspace = env.home / "runs" / handle.id / "workspace"
        worker = shell_worker(env, tmp_path / f"w{n}.log")
        # from a moment after the effect to a moment after the command's end
        killer = kill_after(workspace / "began", worker, rng.uniform(0.0, 2.2))
        await asyncio.to_thread(killer.join, 120)
        assert worker.wait(timeout=10) == -signal.SIGKILL
        second = shell_worker(env, tmp_path / f"w{n}b.log")
        try:

            async def settled(handle=handle) -> str:  # type: ignore[no-untyped-def]
                desc = await handle.describe()
                if desc.status is not None and desc.status.name != "RUNNING":
                    return "ended"
                requests = await requests_pending(handle, 1)
                return requests[0].id

            outcome = await eventually(settled, 60)
            if outcome != "ended":
                asked += 1
                (request,) = await query(handle, LeaderWorkflow.pending_requests)
                assert request.choices == ["again", "skip", "done"]
                await handle.execute_update(
                    LeaderWorkflow.answer, AnswerRequest(request_id=outcome, text="done: paid")
                )
            else:
                returned += 1
            result = await asyncio.wait_for(run_outcome(handle), 60)
        finally:
            stop_worker_process(second)
        assert result.status == "completed", result.summary
        assert (workspace / "fx.txt").read_text() == "effect\n", f"run {n}: the effect repeated"
        assert result.agents[0].result in ("ran", "paid"), result.agents[0].result
    assert asked and returned, (asked, returned)  # both moments were hit
