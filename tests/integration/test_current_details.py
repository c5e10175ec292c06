"""A run's current details (the Web UI's pane) are drawn when they are read: the metadata
query the Web UI and the CLI send calls the run's drawer (workflows/details.py), so the pane
shows the state the run holds then, and a workflow task that changes the state draws nothing."""

from __future__ import annotations

import uuid

import pytest
from temporalio import workflow
from temporalio.worker import Worker

from tests.conftest import Env
from workflows.details import draw_details

pytestmark = pytest.mark.integration


@workflow.defn(sandboxed=False)
class Drawn:
    """Holds a step that signals move; its details say the step and how often they were drawn."""

    def __init__(self) -> None:
        self.step = 0
        self.draws = 0
        self.done = False

    def _draw(self) -> str:
        self.draws += 1
        return f"step {self.step} · drawn {self.draws}"

    @workflow.run
    async def run(self) -> int:
        draw_details(self._draw)
        await workflow.wait_condition(lambda: self.done)
        return self.draws

    @workflow.signal
    def move(self, step: int) -> None:
        self.step = step  # nothing drawn here: the next read draws

    @workflow.signal
    def finish(self) -> None:
        self.done = True


async def details(handle) -> str:  # type: ignore[no-untyped-def]
    return str((await handle.query("__temporal_workflow_metadata")).current_details)


async def test_details_are_drawn_from_the_state_when_read(env: Env) -> None:
    queue = f"details-{uuid.uuid4().hex[:6]}"
    async with Worker(env.client, task_queue=queue, workflows=[Drawn]):
        handle = await env.client.start_workflow(Drawn.run, id=queue, task_queue=queue)
        assert await details(handle) == "step 0 · drawn 1"
        for step in (1, 2, 3):  # three workflow tasks that change the state, no read between
            await handle.signal(Drawn.move, step)
        await handle.signal(Drawn.move, 4)
        # drawn once more, for this read, from the state after the last signal
        assert await details(handle) == "step 4 · drawn 2"
        # read again with nothing changed since (the history as it was): not drawn again
        assert await details(handle) == "step 4 · drawn 2"
        await handle.signal(Drawn.move, 5)
        assert await details(handle) == "step 5 · drawn 3"
        await handle.signal(Drawn.finish)
        assert await handle.result() == 3  # no workflow task drew anything
    # A closed run: its history is replayed to answer, and the drawer reads the state it ends in.
    async with Worker(env.client, task_queue=queue, workflows=[Drawn]):
        assert (await details(handle)).startswith("step 5 · drawn ")


async def test_an_ended_runs_pane_says_how_it_ended_not_finishing(env: Env) -> None:
    """walk8: a completed run's Web UI pane began "My first plan · plan v1 · FINISHING · 4
    completed" for good — the state of its last step — under Temporal's own COMPLETED."""
    from client.outcome import run_outcome
    from tests.integration.helpers import noop, plan

    await env.start_worker()
    done = await env.start(plan(noop("1", 0)))
    assert (await run_outcome(done)).status == "completed"
    said = await details(done)
    assert "· COMPLETED ·" in said.splitlines()[0] and "FINISHING" not in said, said
    failed = await env.start(
        plan(
            '<agent name="shell" id="1"><task>fail</task>'
            '<config>{"tool": "shell", "command": "exit 3"}</config></agent>'
        )
    )
    assert (await run_outcome(failed)).status == "failed"
    said = await details(failed)
    assert "· FAILED ·" in said.splitlines()[0], said
