"""What the planner activity takes and returns, and the checks every plan must pass."""

from __future__ import annotations

from collections.abc import Collection

from pydantic import Field

from xsky import dag
from xsky.errors import PlanError, WorkflowValidationError
from xsky.kinds import AgentInfo
from xsky.models import WireModel, Workflow
from xsky.xml import parse_workflow


class PlanRequest(WireModel):
    """The one input of the ``plan_workflow`` activity: a new plan, or a replan."""

    task_id: str
    task_prompt: str | None = None  # plan: the user's request
    current_xml: str | None = None  # replan: the plan so far, with statuses and results
    modification: str | None = None  # replan: what a person asked to change
    reason: str | None = None  # replan: why (a person's request, a failure, a stall)
    agents: list[AgentInfo] = Field(default_factory=list)
    variables: list[str] = Field(default_factory=list)
    context_keys: list[str] | None = None


class PlanResult(WireModel):
    workflow: Workflow
    xml: str
    provider: str
    attempts: int = 1
    notes: str = ""


def check_plan(workflow: Workflow, known_agents: Collection[str], variables: Collection[str] = (), context_keys: Collection[str] | None = None) -> Workflow:
    """The workflow if it can run; else :class:`WorkflowValidationError` with every problem."""
    return dag.ensure_valid(workflow, known_agents, variables=variables, context_keys=context_keys)


def parse_and_check(xml: str, known_agents: Collection[str], variables: Collection[str] = (), context_keys: Collection[str] | None = None) -> Workflow:
    """Parse workflow XML and check it; raises :class:`PlanError` (all problems) when bad."""
    return check_plan(parse_workflow(xml), known_agents, variables, context_keys)


def problems_text(error: PlanError) -> str:
    return "\n".join(p.format("plan") for p in error.problems)


__all__ = ["AgentInfo", "PlanRequest", "PlanResult", "WorkflowValidationError", "check_plan", "parse_and_check", "problems_text"]
