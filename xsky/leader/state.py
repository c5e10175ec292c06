"""The leader's durable state and the messages that steer it.

Everything the leader knows lives in one :class:`LeaderState`, so continue-as-new hands
the whole of it to the next run. Every signal, update and query takes and returns one of
the plain-JSON models below, so the stock ``temporal`` CLI can send them, e.g.::

    temporal workflow update execute -w xsky-demo --name answer \\
        --input '{"requestId": "Q-1", "text": "eu-west-1"}'
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from xsky.artifacts import BlobRef
from xsky.leader.ledger import Ledger
from xsky.leader.tasks import TaskState, TaskStatus, TaskView
from xsky.plan.budget import BudgetView, RunBudget, Spend
from xsky.plan.models import RoleCapabilityModel, WireModel, Workflow
from xsky.security.permissions import ApprovedRule

RequestKind = Literal["question", "approval", "escalation", "review"]
RequestStatus = Literal["pending", "answered", "expired", "withdrawn"]
ToolDecision = Literal["allow_once", "allow_run", "deny"]


class HumanRequest(WireModel):
    """Something only a person can decide. Questions ``Q-n``, approvals ``A-n``, escalations
    ``E-n``; ``R-v`` is the plan review of version v (listed while it waits, answered by approve_plan)."""

    id: str
    kind: RequestKind
    task_id: str
    dispatch: int
    text: str  # the question, what the tool call would do, or why the task was escalated
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    rule: str | None = None  # which rule or role setting asked for approval
    created_at: datetime
    deadline: datetime | None = None
    status: RequestStatus = "pending"
    answer: str | None = None
    decision: ToolDecision | None = None
    answered_at: datetime | None = None
    # An escalation that holds the run open after its task failed (RunOptions.hold_on_failure):
    # retry, skip, replan or end_run decide it, not an answer.
    hold: bool = False
    # Who decided it: a person, or the leader (its coordinator, within the person's bounds).
    by: Literal["person", "leader"] | None = None
    # What the leader would answer or decide (coordinator mode "advise"; or why it left it).
    suggestion: str | None = None
    # A run-level request's subject ("goal", "budget"); None: about its task. (A budget's
    # E-n: task_id "run" for the run's budget, decided by set_budget or end_run; a task's id
    # for its own cap, decided by set_budget or skip_task.)
    about: str | None = None
    # An approval only a person may give (the checker could not vouch for the call, or the
    # role is one the worker does not know): never delegated to the leader.
    hard: bool = False


class AuditEntry(WireModel):
    """One permission decision: automatic (by rules, role or mode) or by a person."""

    at: datetime
    task_id: str
    tool: str
    arguments: str  # a short rendering of the call
    effect: Literal["allow", "ask", "deny"]
    reason: str
    by: Literal["auto", "person", "leader"] = "auto"
    request_id: str | None = None


class PlanVersion(WireModel):
    version: int
    xml: str  # empty for a note, or when the XML is large and kept by reference
    reason: str
    at: datetime
    xml_ref: BlobRef | None = None  # a large version's XML, in the artifact store


class Nudge(WireModel):
    task_id: str
    message: str
    at: datetime
    source: Literal["person", "stall", "leader"] = "person"


class Answer(WireModel):
    """A person's answer, handed to the agent when its task is dispatched again."""

    request_id: str
    question: str
    answer: str
    by: Literal["person", "leader"] = "person"


class ToolApproval(WireModel):
    request_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    decision: ToolDecision
    message: str | None = None
    by: Literal["person", "leader"] = "person"


class Granted(WireModel):
    """The approvals one dispatch of a task was given (kept until its next dispatch, so the
    worker running it can check its input against them: xsky/leader/grants.py)."""

    dispatch: int
    approvals: list[ToolApproval] = Field(default_factory=list)


class StallWindows(WireModel):
    """Seconds without progress before each step of the stall ladder."""

    enabled: bool = True
    nudge_after: float = Field(180.0, gt=0)
    restart_after: float = Field(420.0, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> StallWindows:
        if self.restart_after <= self.nudge_after:
            raise ValueError("restartAfter must be longer than nudgeAfter")
        return self


class LeaderState(WireModel):
    """Everything continue-as-new must carry."""

    plan: Workflow
    plan_version: int = 1
    plan_history: list[PlanVersion] = Field(default_factory=list)
    tasks: list[TaskState] = Field(default_factory=list)  # plan order
    removed_tasks: list[TaskState] = Field(default_factory=list)  # dropped by a replan
    requests: list[HumanRequest] = Field(default_factory=list)
    request_seq: int = 0
    nudges: list[Nudge] = Field(default_factory=list)
    answers: dict[str, list[Answer]] = Field(default_factory=dict)  # by task id
    approvals: dict[str, list[ToolApproval]] = Field(default_factory=dict)  # by task id
    # what the latest dispatch of each task was given of them (by task id)
    granted: dict[str, Granted] = Field(default_factory=dict)
    stall_levels: dict[str, int] = Field(default_factory=dict)  # by task id
    paused: bool = False
    pause_reason: str | None = None
    # "approved": by a person (approve_plan); "approved_by_timeout": nobody reviewed in time and
    # reviewTimeoutAction is "approve" — the plan runs, but plan-invented roles stay restricted.
    review: Literal["none", "waiting", "approved", "approved_by_timeout"] = "none"
    resumes: str | None = None  # the ended run this follow-up run resumes (Run.retry)
    review_deadline: datetime | None = None
    auto_replans: int = 0
    defined_roles: dict[str, RoleCapabilityModel] = Field(default_factory=dict)  # by define_role
    # "allow for this run" answers people gave, as allow rules naming their request
    approved_rules: list[ApprovedRule] = Field(default_factory=list)
    audit: list[AuditEntry] = Field(default_factory=list)
    audit_dropped: int = 0  # entries beyond the kept tail
    started_at: datetime | None = None
    continued: int = 0  # how many times the run continued as new
    # Where the run's workspace lives (workers that share no disk): the host's task queue, chosen
    # when the first workspace agent started; None: not chosen yet, or one disk for all.
    workspace_queue: str | None = None
    lost_queue: str | None = None  # the host queue found lost, until another is claimed
    ledger: Ledger = Field(default_factory=Ledger)  # the coordinator's task and progress ledgers
    budget: RunBudget | None = None  # the limits in force (None: no budget); set_budget moves them
    spend: Spend = Field(default_factory=Spend)
    # Malformed or spoofed messages refused (each is in the audit log), and the last one said.
    refused: int = 0
    last_refusal: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _older_approvals(cls, data: Any) -> Any:
        """A state an older version carried over keeps people's approvals in ``runRules``
        (only approve_tool wrote there), without their request ids."""
        if isinstance(data, dict):
            older = data.get("runRules", data.get("run_rules"))
            if older and not data.get("approvedRules", data.get("approved_rules")):
                data = {**data, "approvedRules": [{"rule": r} for r in older]}
        return data


# -- messages: updates ---------------------------------------------------------------------


class ReplanRequest(WireModel):
    """``replan``: a modification ``prompt`` for the planner, or a full replacement ``xml``.

    Exactly one of the two; the update's validator says so when not (a decoding error
    would only say "Failed decoding arguments").
    """

    prompt: str | None = None
    xml: str | None = None

    def problem(self) -> str | None:
        has_prompt = self.prompt is not None and bool(self.prompt.strip())
        has_xml = self.xml is not None and bool(self.xml.strip())
        if has_prompt == has_xml:
            return "give either prompt (what to change) or xml (the whole new plan), not both and not neither"
        return None


class ApprovePlanRequest(WireModel):
    version: int | None = None  # the plan version approved; refused if the plan changed since
    comment: str | None = None


class TaskRequest(WireModel):
    task_id: str


class RetryTaskRequest(TaskRequest):
    task: str | None = None  # new task text


class SkipTaskRequest(TaskRequest):
    result: str = ""


class AnswerRequest(WireModel):
    request_id: str
    text: str


class ApproveToolRequest(WireModel):
    request_id: str
    decision: ToolDecision = "allow_once"
    message: str | None = None


class DefineRoleRequest(WireModel):
    """``define_role``: a role for this run (LingXiao's define_agent_role).

    Plain fields, checked by the update's validator so a bad name or tool gets a reason.
    """

    name: str
    description: str = ""
    system_prompt: str = ""
    allowed_tools: list[str] = Field(default_factory=list)
    requested_tools: list[str] = Field(default_factory=list)
    skill_names: list[str] = Field(default_factory=list)
    suggested_model: str | None = None


class EndRunRequest(WireModel):
    """``end_run``: close a run that is held open (failed tasks waiting for a decision, or
    paused): its pending requests are withdrawn and it ends with the status its tasks have."""

    reason: str | None = None


class SetBudgetRequest(WireModel):
    """``set_budget``: raise or lower the run's limits — or, with ``taskId``, one task's cap
    (over what its plan said). Only the limits given change: ``{"tokens": 200000, "usd": 5}``.
    Any value decodes; the update's validator says what is wrong with a bad one (a decoding
    error would only say "Failed decoding arguments")."""

    tokens: float | str | None = None
    usd: float | str | None = None
    minutes: float | str | None = None
    agents: float | str | None = None
    task_id: str | None = None
    reserve: float | str | None = None  # tokens reserved for an agent without a cap


class InterventionResult(WireModel):
    ok: bool = True
    message: str
    plan_version: int | None = None


# -- messages: signals ----------------------------------------------------------------------


class PauseRequest(WireModel):
    cancel_running: bool = False
    reason: str | None = None


class ResumeRequest(WireModel):
    reason: str | None = None


class NudgeRequest(WireModel):
    task_id: str
    message: str


# -- messages: queries ---------------------------------------------------------------------


class PageRequest(WireModel):
    """A page of a long list (``task_board``, ``results``, ``plan``): ``{"offset": 200, "limit": 100}``;
    ``status`` keeps only tasks in that (derived) status."""

    offset: int = Field(0, ge=0)
    limit: int = Field(200, ge=1, le=2000)
    status: TaskStatus | None = None


class BoardPage(WireModel):
    """One page of the task board, with the whole board's counts by status and what the
    run is doing (``state``: running, reviewing, paused, waiting, replanning, finishing)."""

    total: int  # tasks matching the request's status (all tasks without one)
    offset: int
    counts: dict[str, int] = Field(default_factory=dict)
    tasks: list[TaskView] = Field(default_factory=list)
    state: str = "running"
    notes: list[str] = Field(default_factory=list)  # paused, waiting for review, waiting for Q-n …
    budget: BudgetView | None = None  # spend, and the limits when the run has a budget
