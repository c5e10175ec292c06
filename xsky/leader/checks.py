"""The validators of a run's interventions: what a person (or the stock CLI, or the Web UI)
may ask of it now, and, when not, one sentence saying why and what to do instead. Each
raises :class:`~xsky.leader.commands.Rejected` and changes nothing — an update's validator
runs it, so a refused update writes nothing to history; the handler (xsky/leader/core.py)
assumes it passed."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from xsky.errors import PlanError
from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.budget import Budget
from xsky.leader.cast import Cast
from xsky.leader.commands import RUNNING, SATISFIED, Rejected
from xsky.leader.coordinator.requests import RequestJudge
from xsky.leader.flow import Flow
from xsky.leader.limits import (
    ANSWER_CHARS,
    NUDGE_CHARS,
    NUDGES_PER_TASK,
    PAUSE_REASON_CHARS,
    REPLAN_PROMPT_CHARS,
    ROLE_TEXT_CHARS,
    SKIP_RESULT_CHARS,
    over,
)
from xsky.leader.plans import PlanBook
from xsky.leader.requests import RequestBook
from xsky.leader.state import (
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    DefineRoleRequest,
    EndRunRequest,
    NudgeRequest,
    PauseRequest,
    ReplanRequest,
    ResetTaskRequest,
    ResumeRequest,
    RetryTaskRequest,
    SetBudgetRequest,
    SkipTaskRequest,
    TaskRequest,
    TaskTimeoutRequest,
)
from xsky.leader.tasks import TaskState
from xsky.plan.agent_config import tool_name
from xsky.plan.models import RoleCapabilityModel, Workflow
from xsky.plan.planning import problems_text
from xsky.plan.xml import parse_workflow
from xsky.security.idempotence import choice_of
from xsky.security.roles import role_problems


class Checks:
    """Every intervention's validator."""

    def __init__(
        self,
        flow: Flow,
        board: TaskBoard,
        plans: PlanBook,
        cast: Cast,
        requests: RequestBook,
        briefs: Briefs,
        budget: Budget,
        asks: RequestJudge,
        variables: Mapping[str, str],
    ) -> None:
        self.flow = flow
        self.board = board
        self.plans = plans
        self.cast = cast
        self.requests = requests
        self.briefs = briefs
        self.budget = budget
        self.asks = asks
        self.variables = variables

    def plan(self, wf: Workflow) -> Workflow:
        """A new plan, if it fits this run (its agents, variables, context) and widens no role."""
        return self.cast.checked(wf, self.variables)

    def replan(self, req: ReplanRequest) -> None:
        self.open()
        if self.flow.replanning:
            raise Rejected("a replan is already in progress; wait for it to finish")
        if (problem := req.problem()) is not None:
            raise Rejected(problem)
        if req.prompt is not None and (
            long := over(
                "replan prompt",
                req.prompt,
                REPLAN_PROMPT_CHARS,
                "say what to change in fewer words, or send the whole new plan as xml",
            )
        ):
            raise Rejected(long)
        if req.xml is not None:
            try:
                self.plan(parse_workflow(req.xml))
            except PlanError as e:
                raise Rejected(f"the new plan is not valid:\n{problems_text(e)}") from None

    def approve_plan(self, req: ApprovePlanRequest) -> None:
        self.open()
        self.plans.check_approve(req, self.flow.planning, self.flow.replanning)

    def end(self, req: EndRunRequest) -> None:
        self.open()
        if self.board.active:
            # (an agent a replan removed is active until its stop is acknowledged, and no longer
            # on the board: its id was a KeyError here — walk10)
            running = ", ".join(
                self.board.tasks[a].id if a in self.board.tasks else f"T-{a}"
                for a in list(self.board.active)[:10]
            )
            raise Rejected(
                f"agents are still running ({running}); wait for them, or cancel the run instead"
            )
        if self.flow.replanning:
            raise Rejected("a replan is in progress; end the run once it is done")

    def set_budget(self, req: SetBudgetRequest) -> None:
        self.open()
        self.budget.check_set_budget(req, self.plans.version)

    def pause(self, req: PauseRequest) -> None:
        self.open()
        if req.reason is not None:
            long = over("pause reason", req.reason, PAUSE_REASON_CHARS, "say it in fewer words")
            if long:
                raise Rejected(long)

    def resume(self, req: ResumeRequest) -> None:
        self.open()

    def open(self) -> None:
        if self.flow.ended or self.flow.closing:
            raise Rejected("the run has finished; start a new run instead")

    def task(self, task_id: str) -> TaskState:
        return self.board.require(task_id, self.plans.version)

    # -- one agent at a time ---------------------------------------------------------------------

    def pause_task(self, req: TaskRequest) -> None:
        self.open()
        task = self.task(req.task_id)
        if task.terminal:
            raise Rejected(f"{task.id} has already ended ({task.stored}): nothing to pause")
        if task.held:
            raise Rejected(f"{task.id} is paused already; resume_task resumes it")

    def resume_task(self, req: TaskRequest) -> None:
        self.open()
        task = self.task(req.task_id)
        if not task.held:
            raise Rejected(f"{task.id} is not paused (pause_task pauses one agent)")

    def reset_task(self, req: ResetTaskRequest) -> None:
        self.open()
        task = self.task(req.task_id)
        if task.terminal:
            raise Rejected(f"{task.id} has already ended ({task.stored}): retry_task runs it again")

    def task_timeout(self, req: TaskTimeoutRequest) -> None:
        self.open()
        task = self.task(req.task_id)
        if task.terminal:
            raise Rejected(f"{task.id} has already ended ({task.stored}): its timeout is moot")
        if not 1 <= req.seconds <= 7 * 24 * 3600:
            raise Rejected(f"a timeout of {req.seconds:g}s is not one: give 1 to 604800 seconds")

    def retry(self, req: RetryTaskRequest) -> None:
        self.open()
        if self.flow.replanning:
            raise Rejected("a replan is in progress; retry once it is done")
        task = self.task(req.task_id)
        escalated = (
            task.waiting_on is not None
            and (r := self.requests.get(task.waiting_on)) is not None
            and r.kind == "escalation"
        )
        if task.stored not in ("failed", "cancelled") and not escalated:
            raise Rejected(
                f"{task.id} is {self.board.status(task)}; only failed, cancelled or escalated tasks can be retried"
            )
        if req.task is not None and not req.task.strip():
            raise Rejected("the new task text is empty")

    def skip(self, req: SkipTaskRequest) -> None:
        self.open()
        task = self.task(req.task_id)
        if task.stored in SATISFIED:
            raise Rejected(f"{task.id} is already {task.stored}")
        long = over(
            "result",
            req.result,
            SKIP_RESULT_CHARS,
            "write it to a file in the run's workspace and give its path as the result",
        )
        if long:
            raise Rejected(long)

    def cancel(self, req: TaskRequest) -> None:
        self.open()
        task = self.task(req.task_id)
        if task.terminal:
            raise Rejected(f"{task.id} is already {task.stored}")

    def answer(self, req: AnswerRequest, now: datetime | None = None) -> None:
        overridden = self.asks.overridable(req.request_id)
        if overridden is not None:  # a person answers a question the leader answered
            self.open()
            self.asks.check_override(overridden, req, now)
            return
        self.open()
        request = self.requests.require_pending(req.request_id, self.plans.state)
        if request.hold:
            raise Rejected(
                f"{request.id} holds the run after {request.task_id} failed: retry_task, skip_task "
                f"or replan decide it, or end_run ends the run"
            )
        if request.kind == "approval":
            raise Rejected(
                f"{request.id} asks to approve a tool call; decide it with the approve_tool update "
                f"(request {request.id})"
            )
        if request.about == "budget":
            raise Rejected(
                f"{request.id} is about the budget: {request.text.split('; ', 1)[-1]}, or use "
                "the set_budget update"
            )
        if not req.text.strip():
            raise Rejected("the answer is empty")
        if request.choices and not choice_of(req.text)[0]:
            raise Rejected(
                f"{request.id} takes one of: {', '.join(request.choices)} (done may say what the "
                f"call returned: 'done: …'); got {req.text.strip()[:60]!r}"
            )
        long = over(
            "answer",
            req.text,
            ANSWER_CHARS,
            "put long material in a file in the run's workspace and answer with its path",
        )
        if long:
            raise Rejected(long)

    def approve_tool(self, req: ApproveToolRequest) -> None:
        self.open()
        request = self.requests.require_pending(req.request_id, self.plans.state)
        if request.kind != "approval":
            raise Rejected(f"{request.id} is a {request.kind}, not a tool approval; use answer")

    def define_role(self, req: DefineRoleRequest) -> None:
        self.open()
        problems = role_problems(req)
        problems += [
            p
            for what, text in (
                ("description", req.description),
                ("system prompt", req.system_prompt),
            )
            if (p := over(f"role's {what}", text, ROLE_TEXT_CHARS, "shorten it"))
        ]
        if problems:
            raise Rejected("; ".join(problems))
        try:
            RoleCapabilityModel(**req.model_dump(by_alias=False))
        except ValueError as e:  # pydantic's ValidationError: say it here, not in the handler
            raise Rejected(f"role {req.name}: {' '.join(str(e).split())[:300]}") from None
        busy = [
            t.id
            for t in self.board.state.tasks
            if t.assigned_agent == req.name and t.stored in RUNNING
        ]
        if busy:
            raise Rejected(
                f"role {req.name} is in use by running {', '.join(busy)}; wait for them to finish, or cancel them first"
            )

    def nudge(self, req: NudgeRequest) -> None:
        """A nudge reaches an agent that runs or will run, and that reads messages (a model)."""
        self.open()
        task = self.task(req.task_id)
        if task.terminal:
            raise Rejected(
                f"{task.id} has already ended ({task.stored}): a nudge reaches only agents that run or wait"
            )
        tool = tool_name(self.board.agents[task.agent_id].config)
        if tool is not None:
            raise Rejected(
                f"{task.id} runs a direct {tool} tool (no model reads messages): it cannot read a "
                "nudge; skip it, or replan it with another call (its task text is not what it runs)"
            )
        if not req.message.strip():
            raise Rejected("the nudge message is empty: say what the agent should know")
        if self.plans.options.messages == "reject" and task.stored in RUNNING:
            raise Rejected(
                f"{task.id} is in the middle of a step and this run's message policy is reject "
                "(RunOptions.messages): send the nudge once it is not running, or start runs "
                "with --messages queue"
            )
        long = over(
            "nudge",
            req.message,
            NUDGE_CHARS,
            "put long material in a file in the run's workspace and point the agent to it",
        )
        if long:
            raise Rejected(long)
        if self.briefs.nudge_count(task.id) >= NUDGES_PER_TASK:
            raise Rejected(
                f"{task.id} has {NUDGES_PER_TASK} nudges already, the most a task keeps (each goes "
                "to every later attempt); retry it with new task text instead"
            )
