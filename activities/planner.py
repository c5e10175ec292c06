"""``plan_workflow``: a request (or the current plan and a reason) becomes a validated plan.

With a model configured, the LLM gets the seed's planning prompt with the available roles;
its reply goes through ``extract_workflow_xml``, ``parse_workflow`` and validation, and on
any problem the model is asked again with the exact problems (at most 3 attempts). With no
model, the offline provider plans by rules through this same activity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import llm
from activities.call_budget import CallBudget
from xsky.errors import PlanError
from xsky.plan import offline
from xsky.plan.budget import Price, ShareSpent, Usage, cost
from xsky.plan.extract import extract_workflow_xml
from xsky.plan.planning import (
    FIX_PROMPT,
    PLAN_ATTEMPTS,
    PlanRequest,
    PlanResult,
    check_plan,
    planning_prompt,
    problems_text,
)
from xsky.plan.xml import ParsedWorkflow, parse_workflow, parse_workflow_source, workflow_to_xml
from xsky.settings_files import SettingsError, price_table, worker_layers

MAX_ATTEMPTS = PLAN_ATTEMPTS


async def make_plan(
    req: PlanRequest,
    heartbeat: Callable[[str], None] = lambda note: None,
    budget: CallBudget | None = None,
) -> PlanResult:
    """Plan or replan; raises ApplicationError (non-retryable for bad plans) on failure.
    ``budget``: the call's share (in an activity, made from ``req.budget_share``)."""
    target = llm.target()
    if target is None:
        return _offline(req)
    known = [a.name for a in req.agents]
    client = llm.client_for(target)
    messages: list[dict[str, Any]] = [{"role": "user", "content": planning_prompt(req)}]
    failures: list[str] = []
    budget = budget or CallBudget(req.budget_share, _price(target.model))
    try:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                max_tokens = budget.before(messages)
            except ShareSpent as spent:
                raise budget.failure(
                    ApplicationError(
                        f"the run's budget has no room for the planner's request {attempt} "
                        f"({spent.stopped} spent); raise the budget (starter.py budget RUN "
                        "tokens=…) and replan",
                        type="PlanError",
                        non_retryable=True,
                    )
                ) from None
            heartbeat(f"planning, attempt {attempt}")
            try:
                response = await llm.chat(
                    client, target, messages, temperature=0, max_tokens=max_tokens
                )
            except ApplicationError as e:
                raise budget.failure(e) from None
            budget.count(_usage(response, budget.price))
            reply = response.choices[0].message.content or ""
            try:
                parsed = parse_workflow_source(extract_workflow_xml(reply))
                wf = parsed.workflow
                if req.current_xml is None:
                    wf = wf.model_copy(
                        update={"task_id": req.task_id, "task_prompt": req.task_prompt}
                    )
                wf = check_plan(wf, known, req.variables, req.context_keys)
            except PlanError as e:
                problems = problems_text(e)
                failures.append(f"attempt {attempt}:\n{problems}")
                messages += [
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": FIX_PROMPT.format(problems=problems)},
                ]
                continue
            return PlanResult(
                workflow=wf,
                xml=workflow_to_xml(wf),
                provider=target.model,
                attempts=attempt,
                usage=budget.spent,
                notes=_dialect_notes(parsed),
            )
    finally:
        await client.close()
    raise budget.failure(
        ApplicationError(
            f"the planner gave no usable plan in {MAX_ATTEMPTS} attempts:\n" + "\n".join(failures),
            type="PlanError",
            non_retryable=True,
        )
    )


def _dialect_notes(parsed: ParsedWorkflow) -> str:
    """What reading an Eko-form reply mapped and repaired (nothing for a native reply)."""
    if parsed.dialect is None:
        return ""
    return "\n".join([parsed.dialect, *(f"warning: {r.format('reply')}" for r in parsed.repairs)])


def _price(model: str) -> Price | None:
    """The worker's price of the planner's model (none: its cost is not known)."""
    try:
        return price_table(worker_layers()).get(model)
    except (SettingsError, OSError):
        return None  # the agents' attempts report a broken settings file, with its line


def _usage(response: Any, price: Price | None) -> Usage:
    usage = getattr(response, "usage", None)
    tokens_in = getattr(usage, "prompt_tokens", 0) or 0
    tokens_out = getattr(usage, "completion_tokens", 0) or 0
    usd = cost(tokens_in, tokens_out, price) if price is not None else 0.0
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out, usd=usd, calls=1)


def _offline(req: PlanRequest) -> PlanResult:
    known = [a.name for a in req.agents]
    try:
        if req.current_xml is None:
            if not req.task_prompt or not req.task_prompt.strip():
                raise ApplicationError(
                    "nothing to plan: the request is empty", type="PlanError", non_retryable=True
                )
            wf = offline.plan(req.task_prompt, req.task_id)
        else:
            wf = offline.replan(parse_workflow(req.current_xml), req.modification)
        wf = check_plan(wf, known, req.variables, req.context_keys)
    except PlanError as e:
        raise ApplicationError(
            f"the offline planner produced an invalid plan:\n{problems_text(e)}",
            type="PlanError",
            non_retryable=True,
        ) from None
    except ValueError as e:
        raise ApplicationError(str(e), type="PlanError", non_retryable=True) from None
    notes = (
        "offline replan: the same plan, failed agents get another try"
        if req.current_xml and not req.modification
        else ""
    )
    return PlanResult(workflow=wf, xml=workflow_to_xml(wf), provider=offline.PROVIDER, notes=notes)


class PlannerActivities:
    @activity.defn(name="plan_workflow")
    async def plan_workflow(self, req: PlanRequest) -> PlanResult:
        target = llm.target()
        budget = CallBudget(req.budget_share, _price(target.model)) if target else None
        return await make_plan(req, budget.beat if budget else activity.heartbeat, budget)
