"""``plan_workflow``: a request (or the current plan and a reason) becomes a validated plan.

With no model configured, the offline provider plans by rules (xsky/offline.py) through
this same activity, so planning and replanning take one code path either way.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from xsky import offline
from xsky.errors import PlanError
from xsky.planning import PlanRequest, PlanResult, check_plan, problems_text
from xsky.xml import parse_workflow, workflow_to_xml


class PlannerActivities:
    @activity.defn(name="plan_workflow")
    async def plan_workflow(self, req: PlanRequest) -> PlanResult:
        known = [a.name for a in req.agents]
        try:
            if req.current_xml is None:
                if not req.task_prompt or not req.task_prompt.strip():
                    raise ApplicationError("nothing to plan: the request is empty", type="PlanError", non_retryable=True)
                wf = offline.plan(req.task_prompt, req.task_id)
            else:
                wf = offline.replan(parse_workflow(req.current_xml), req.modification)
            wf = check_plan(wf, known, req.variables, req.context_keys)
        except PlanError as e:
            raise ApplicationError(
                f"the offline planner produced an invalid plan:\n{problems_text(e)}", type="PlanError", non_retryable=True
            ) from None
        except ValueError as e:
            raise ApplicationError(str(e), type="PlanError", non_retryable=True) from None
        notes = "offline replan: the same plan, failed agents get another try" if req.current_xml and not req.modification else ""
        return PlanResult(workflow=wf, xml=workflow_to_xml(wf), provider=offline.PROVIDER, notes=notes)
