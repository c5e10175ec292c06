"""Fix and resume: a follow-up run of an ended run (``Run.retry`` once the run is over).

The follow-up runs the first run's last plan with its variables, context and options. Every
agent that completed there is carried over with its result (nothing completed runs again);
the task to retry and every agent that depends on it run afresh, in the first run's
workspace. The two are linked: the follow-up's memo and search attribute ``XskyResumes``
name the first run, and each board says so.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from temporalio.client import Client
from temporalio.service import RPCError

from xsky.client.settings import resolve_permissions
from xsky.errors import ConnectError, UsageError
from xsky.plan.xml import parse_workflow
from xsky.runs import ResumeFrom, RunInput

if TYPE_CHECKING:
    from xsky.client.run import Run

# Reports carried in the follow-up's input: beyond this the input would near Temporal's
# payload limit (a larger run is resumed by replanning it instead: not supported yet).
MAX_CARRIED = 2000


async def first_input(client: Client, run: Run) -> RunInput:
    """The input the run's latest execution was started with (its options, variables …)."""
    try:
        history = await run.handle.fetch_history()
    except RPCError as e:
        raise ConnectError(f"could not read the history of {run.id}: {e.message}") from None
    started = history.events[0].workflow_execution_started_event_attributes
    (inp,) = await client.data_converter.decode(started.input.payloads, [RunInput])
    assert isinstance(inp, RunInput)
    return inp


def agent_ids(wf_agents: list[str], tasks: list[str]) -> list[str]:
    """Agent ids of ``tasks`` (T-3 or 3), refused with the list when one is not in the plan."""
    out = []
    for task in tasks:
        agent_id = task[2:] if task.startswith("T-") else task
        if agent_id not in wf_agents:
            known = ", ".join(f"T-{a}" for a in wf_agents[:20])
            raise UsageError(f"no task {task!r} in the run's last plan; its tasks: {known}")
        out.append(agent_id)
    return out


async def start_follow_up(run: Run, tasks: list[str], text: str | None = None) -> Run:
    """Start the follow-up run of the ended ``run`` that runs ``tasks`` again."""
    from xsky.client.handle import XSky  # the handle starts runs; it imports this module's caller

    client = run._client  # the same connection the run was read with
    inp = await first_input(client, run)
    wf = parse_workflow(await run.plan())
    ids = agent_ids([a.id for a in wf.agents], tasks)
    if text is not None:
        if not text.strip():
            raise UsageError("the new task text is empty")
        wf = wf.model_copy(
            update={
                "agents": [
                    a.model_copy(update={"task": text}) if a.id == ids[0] else a for a in wf.agents
                ]
            }
        )
    reports = await run.reports()
    carried = [r for r in reports if r.status in ("completed", "skipped")]
    done = [f"T-{r.id}" for r in carried if r.id in ids]
    if done:
        raise UsageError(
            f"{', '.join(done)} completed in {run.id}: nothing to retry",
            "to run finished work again, start a new run (`starter.py run`)",
            topic="ended",
            subject=run.id,
        )
    if len(carried) > MAX_CARRIED:
        raise UsageError(
            f"{run.id} has {len(carried)} completed agents; a follow-up run carries at most "
            f"{MAX_CARRIED}",
            "replan the remaining work as a new run instead",
        )
    first = inp.resume.workspace_of if inp.resume is not None else run.id
    settings = run._settings
    follow = RunInput(
        workflow=wf,
        variables=inp.variables,
        context=inp.context,
        options=inp.options.model_copy(update={"review": False}),
        roles=inp.roles,
        permissions=resolve_permissions(settings),
        resume=ResumeFrom(run_id=run.id, workspace_of=first, carried=carried, rerun=ids),
    )
    new_id = f"{run.id[:160]}-retry-{uuid.uuid4().hex[:6]}"
    return await XSky(client, settings).start(follow, new_id, memo={"resumes": run.id})
