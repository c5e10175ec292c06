"""What the planner activity takes and returns, and the checks every plan must pass."""

from __future__ import annotations

from collections.abc import Collection

from pydantic import Field

from xsky.errors import PlanError, WorkflowValidationError
from xsky.kinds import AgentInfo
from xsky.plan import dag
from xsky.plan.budget import BudgetShare, Usage
from xsky.plan.loops import named_value_problems
from xsky.plan.models import Workflow
from xsky.plan.output_schema import output_problems
from xsky.plan.steps import input_problems
from xsky.plan.watches import nested_watch_problems
from xsky.plan.xml import parse_workflow
from xsky.wire import WireModel


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
    # What the planner's model calls may spend (a run with a budget): checked before each one.
    budget_share: BudgetShare | None = None


# Requests the planner makes at most (its first, and one per plan it was shown the problems
# of), and what each answer is expected to take at most: what a planner call holds of a budget.
PLAN_ATTEMPTS = 3
PLAN_ANSWER_TOKENS = 4096


class PlanResult(WireModel):
    workflow: Workflow
    xml: str
    provider: str
    attempts: int = 1
    notes: str = ""
    usage: Usage = Field(default_factory=Usage)  # the planner's model calls (counted by the run)


def check_plan(
    workflow: Workflow,
    known_agents: Collection[str],
    variables: Collection[str] = (),
    context_keys: Collection[str] | None = None,
) -> Workflow:
    """The workflow if it can run; else :class:`WorkflowValidationError` with every problem."""
    workflow = dag.ensure_valid(
        workflow, known_agents, variables=variables, context_keys=context_keys
    )
    # Checked here, not in dag (which the leader's workflow code runs): a planner's schema
    # is checked before the plan reaches the run, with no JSON Schema library in workflows.
    problems = (
        output_problems(workflow)
        + input_problems(workflow, variables)
        + named_value_problems(workflow)
        + nested_watch_problems(workflow)
    )
    if problems:
        raise WorkflowValidationError(problems)
    return workflow


def parse_and_check(
    xml: str,
    known_agents: Collection[str],
    variables: Collection[str] = (),
    context_keys: Collection[str] | None = None,
) -> Workflow:
    """Parse workflow XML and check it; raises :class:`PlanError` (all problems) when bad."""
    return check_plan(parse_workflow(xml), known_agents, variables, context_keys)


def problems_text(error: PlanError) -> str:
    return "\n".join(p.format("plan") for p in error.problems)


__all__ = [
    "AgentInfo",
    "PlanRequest",
    "PlanResult",
    "WorkflowValidationError",
    "check_plan",
    "parse_and_check",
    "problems_text",
]


# -- prompts (the seed's "Planning Prompt Structure", with this format's details) ------------

PLANNING_PROMPT = """You are a task planner. Convert the user's request into an executable workflow.

Available Agents:
{agent_list}

Output a workflow in this XML format:
<workflow name="[task name]">
  <agent name="[agent]" id="[n]" depends="[ids]">
    <task>[what to do]</task>
    <input>[optional: {{{{agent_[n]_result}}}} of agents it depends on]</input>
    <output>[optional: a JSON Schema the agent's result must match]</output>
  </agent>
</workflow>

Rules:
1. Choose appropriate agent for each step
2. Set depends when an agent needs results from another
3. Agents without depends run immediately
4. Agents with same depends can run in parallel
5. Keep tasks specific and actionable
6. An agent may use {{{{agent_N_result}}}} only of agents it depends on, directly or through others
7. Use only the agent names listed above; ids are unique; depends lists ids separated by commas
8. Answer with the XML only; in text write & as &amp; and < as &lt;
9. When a later step needs particular fields, give the step that produces them an <output>
   JSON Schema, e.g. <output>{{"type": "object", "properties": {{"title": {{"type": "string"}}}},
   "required": ["title"]}}</output>, and read one field as {{{{agent_N_result.title}}}}
10. An agent with several steps may list them after its <task>, in order:
   <nodes><node output="items">…</node><forEach items="items"><node>…</node></forEach></nodes>
   (a step's input="name" must be another step's output="name")
11. To do the same work for each item of a list an agent returns, give the worker agent
   forEach="{{{{agent_N_result}}}}" and write {{{{item}}}} in its task: it runs once per item, each
   its own agent, and its result is the list of their results
{extra}
User Request: {task_prompt}
"""

REPLAN_EXTRA = """
This is a replan of a workflow that is already running. The current plan, with each agent's
status (done, running, error, init) and result so far:

{current_xml}

Why it must change: {reason}

Keep every agent that is done, with the same id (its result is kept); an agent with status
error may be kept (it will be tried again) or replaced; give new agents new ids. Agents you
leave out are cancelled. Answer with the complete new <workflow>.
"""

FIX_PROMPT = """Your workflow cannot be used; it has these problems:
{problems}

Answer again with the complete, corrected <workflow> XML only."""


def agent_list(agents: list[AgentInfo]) -> str:
    return "\n".join(f"- {a.name}: {a.description}" for a in agents)


def planning_prompt(req: PlanRequest) -> str:
    extra = ""
    task = req.task_prompt or ""
    if req.current_xml is not None:
        extra = REPLAN_EXTRA.format(
            current_xml=req.current_xml, reason=req.reason or "a person asked for changes"
        )
        task = req.modification or task or f"Fix the plan: {req.reason}"
    if req.variables:
        extra += f"\nWorkflow variables you may use as {{{{name}}}}: {', '.join(req.variables)}\n"
    return PLANNING_PROMPT.format(agent_list=agent_list(req.agents), extra=extra, task_prompt=task)
