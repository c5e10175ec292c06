"""Fix and resume: a follow-up run of an ended run (``Run.retry`` once the run is over).

The follow-up runs the first run's last plan with its variables, context and options. Every
agent that completed there is carried over with its result (nothing completed runs again);
the task to retry and every agent that depends on it run afresh, in the first run's
workspace. The two are linked: the follow-up's memo and search attribute ``XskyResumes``
name the first run, and each board says so.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from temporalio.client import Client, WorkflowExecution, WorkflowHandle
from temporalio.service import RPCError

from client.steer import agent_named, no_task
from xsky.errors import ConnectError, UsageError
from xsky.lineage import descendants_clause
from xsky.plan.budget import Limits, RunBudget
from xsky.plan.models import Workflow
from xsky.runs import AgentReport, ResumeFrom, RunInput
from xsky.security.permissions import PermissionSettings

# Reports carried in the follow-up's input: beyond this the input would near Temporal's
# payload limit (a larger run is resumed by replanning it instead: not supported yet).
MAX_CARRIED = 2000
# Earlier follow-up and fork marks: a follow-up of a follow-up is named for the first run.
LINEAGE = re.compile(r"(?:-(?:retry|fork)-[0-9a-f]{6})+$")


async def first_input(client: Client, handle: WorkflowHandle[Any, Any]) -> RunInput:
    """The input the run's latest execution was started with (its options, variables …)."""
    try:
        history = await handle.fetch_history()
    except RPCError as e:
        raise ConnectError(f"could not read the history of {handle.id}: {e.message}") from None
    started = history.events[0].workflow_execution_started_event_attributes
    (inp,) = await client.data_converter.decode(started.input.payloads, [RunInput])
    assert isinstance(inp, RunInput)
    return inp


def agent_ids(wf_agents: list[str], tasks: list[str]) -> list[str]:
    """Agent ids of ``tasks`` (T-3 or 3, or as a person writes them: t-3, T3 — client/steer.py
    agent_named), refused with the list when one is not in the plan."""
    out = []
    for task in tasks:
        agent_id = agent_named(wf_agents, task)
        if agent_id is None:
            raise no_task(task, [f"T-{a}" for a in wf_agents], "the run's last plan")
        out.append(agent_id)
    return out


def retask(wf: Workflow, tasks: list[str], text: str | None) -> tuple[Workflow, list[str]]:
    """The plan to run again and the agent ids of ``tasks`` in it; with ``text`` the first of
    them gets that as its new task."""
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
    return wf, ids


def follow_up_input(
    run_id: str,
    first: RunInput,
    wf: Workflow,
    rerun: list[str],
    reports: list[AgentReport],
    permissions: PermissionSettings,
) -> RunInput:
    """The follow-up's input: ``first``'s variables, context and options (no second review),
    every completed agent of ``reports`` carried over, the agents ``rerun`` run again."""
    carried = [r for r in reports if r.status in ("completed", "skipped")]
    done = [f"T-{r.id}" for r in carried if r.id in rerun]
    if done:
        raise UsageError(
            f"{', '.join(done)} completed in {run_id}: nothing to retry",
            "to run finished work again, start a new run (`starter.py run`)",
            topic="ended",
            subject=run_id,
        )
    if len(carried) > MAX_CARRIED:
        raise UsageError(
            f"{run_id} has {len(carried)} completed agents; a follow-up run carries at most "
            f"{MAX_CARRIED}",
            "replan the remaining work as a new run instead",
        )
    return continued_input(
        first,
        wf,
        permissions,
        ResumeFrom(
            run_id=run_id,
            workspace_of=inherited_workspace(run_id, first),
            # a follow-up of a fork that never made its copy makes it as the fork would have
            workspace_from=first.resume.workspace_from if first.resume is not None else None,
            carried=carried,
            rerun=rerun,
        ),
    )


def inherited_workspace(run_id: str, first: RunInput) -> str:
    """The workspace a run continuing ``run_id`` works in: the first of its chain's."""
    return first.resume.workspace_of if first.resume is not None else run_id


def continued_input(
    first: RunInput, wf: Workflow, permissions: PermissionSettings, resume: ResumeFrom
) -> RunInput:
    """A run that goes on from another (a follow-up, a fork): ``first``'s variables, context,
    options (no second review) and roles, ``wf`` as its plan, ``resume`` what it carries."""
    return RunInput(
        workflow=wf,
        variables=first.variables,
        context=first.context,
        options=first.options.model_copy(update={"review": False}),
        roles=first.roles,
        permissions=permissions,
        resume=resume,
    )


def budget_in_force(inp: RunInput, limits: Limits | None) -> RunInput:
    """A follow-up's (or fork's) input with the run limits last in force in the run it
    continues — set_budget may have raised or lowered them since that run started, and the
    follow-up started with the first values (its own spend counts from nothing, as before)."""
    budget = inp.options.budget
    if limits is None or (budget is not None and budget.run == limits):
        return inp
    changed = (budget or RunBudget()).model_copy(update={"run": limits})
    return inp.model_copy(update={"options": inp.options.model_copy(update={"budget": changed})})


async def refuse_if_workspace_busy(client: Client, run_id: str, workspace_of: str) -> None:
    """A follow-up works in the workspace of the first run of its chain: refused while another
    follow-up of that chain still works there (two would write each other's files). A fork
    works in a copy of its own, so a running fork does not count. Nothing is refused on a
    server without xsky's search attributes (nothing can be asked)."""
    try:
        async for wf in client.list_workflows(
            f"{descendants_clause(workspace_of)} AND ExecutionStatus = 'Running'"
        ):
            if wf.id != run_id and await _works_in(wf, workspace_of):
                raise UsageError(
                    f"{wf.id}, a follow-up of {workspace_of}, is still running in its "
                    "workspace, where a second follow-up would write the same files",
                    f"wait for it to end, retry the task in {wf.id} itself, or fork {run_id} instead "
                    "(a fork works in a copy of the workspace)",
                )
    except RPCError:
        return


async def _works_in(wf: WorkflowExecution, workspace_of: str) -> bool:
    """Does run ``wf`` (a descendant of ``workspace_of``'s) work in that run's workspace? Its
    memo says where (``workspaceOf``); a run started before it was kept: a follow-up does,
    a fork does not."""
    where = await wf.memo_value("workspaceOf", None)
    if where is not None:
        return bool(where == workspace_of)
    return not await wf.memo_value("forkOf", None)


def follow_up_id(run_id: str) -> str:
    """The follow-up's own run id: the first run's (without earlier marks), marked as a retry:
    ``x-retry-0ac3da``, never ``x-retry-0ac3da-retry-434285``."""
    return f"{LINEAGE.sub('', run_id)[:160]}-retry-{uuid.uuid4().hex[:6]}"
