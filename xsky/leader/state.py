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

from pydantic import Field, ModelWrapValidatorHandler, PrivateAttr, model_validator

from xsky.artifacts import BlobRef
from xsky.gcpause import gc_paused
from xsky.leader.ledger import Ledger
from xsky.leader.tasks import TaskState, TaskStatus, TaskView
from xsky.plan.budget import BudgetShare, BudgetView, RunBudget, Spend
from xsky.plan.models import RoleCapabilityModel, WireModel, Workflow
from xsky.security.permissions import ApprovedRule
from xsky.wire_errors import unknown_fields, unknown_sentence

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
    # The only answers a question takes (a tool call in doubt: again, skip, done[: note]).
    choices: list[str] | None = None


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
    # empty for a note, when the XML is large and kept by reference, and for a loop's or a
    # watch's versions but its newest (PlanBook.grow)
    xml: str
    reason: str
    at: datetime
    xml_ref: BlobRef | None = None  # a large version's XML, in the artifact store
    grown_by: str | None = None  # the forEach or watch that wrote this version ("watch w")
    # A grower's older versions folded into this one entry: how many, from which version (its
    # own ``version`` is the newest folded)
    folded: int = 0
    folded_from: int = 0


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


# -- the state, by component -------------------------------------------------------------------
#
# Each component of the core (xsky/leader/core.py) owns one part of the state: its fields, and
# nobody else's. Continue-as-new carries them together as one LeaderState.


class PlanState(WireModel):
    """The plan in force, every version of it, its review and the replans made (xsky/leader/plans.py)."""

    plan: Workflow
    version: int = 1
    history: list[PlanVersion] = Field(default_factory=list)
    # "approved": by a person (approve_plan); "approved_by_timeout": nobody reviewed in time and
    # reviewTimeoutAction is "approve" — the plan runs, but plan-invented roles stay restricted.
    review: Literal["none", "waiting", "approved", "approved_by_timeout"] = "none"
    review_deadline: datetime | None = None
    auto_replans: int = 0
    resumes: str | None = None  # the ended run this follow-up run resumes (Run.retry)
    defined_roles: dict[str, RoleCapabilityModel] = Field(default_factory=dict)  # define_role's


class BoardState(WireModel):
    """The task board (xsky/leader/board.py): a task per agent, in plan order, and the tasks
    replans removed (kept for the record and their spend)."""

    tasks: list[TaskState] = Field(default_factory=list)
    removed: list[TaskState] = Field(default_factory=list)


class RequestState(WireModel):
    """What the run asked people (xsky/leader/requests.py): questions, approvals, escalations."""

    requests: list[HumanRequest] = Field(default_factory=list)
    seq: int = 0


class BriefState(WireModel):
    """What each task's next dispatch is told besides its task (xsky/leader/briefs.py)."""

    answers: dict[str, list[Answer]] = Field(default_factory=dict)  # by task id
    approvals: dict[str, list[ToolApproval]] = Field(default_factory=dict)  # by task id
    # what the latest dispatch of each task was given of them (by task id)
    granted: dict[str, Granted] = Field(default_factory=dict)
    # "allow for this run" answers people gave, as allow rules naming their request
    approved_rules: list[ApprovedRule] = Field(default_factory=list)
    nudges: list[Nudge] = Field(default_factory=list)


class LadderState(WireModel):
    """Each stalled task's step on the stall ladder (xsky/leader/ladder.py), by task id."""

    levels: dict[str, int] = Field(default_factory=dict)
    # When each task's attempt was last found waiting for a worker (its activity scheduled,
    # no worker has started it), or started: its idle clock counts from no earlier (the
    # patch stall-waits-for-worker; xsky/leader/ladder.py ``attempts_seen``).
    since: dict[str, datetime] = Field(default_factory=dict)


class BudgetState(WireModel):
    """The limits in force (None: no budget; set_budget moves them) and the spend (xsky/leader/budget.py)."""

    limits: RunBudget | None = None
    spend: Spend = Field(default_factory=Spend)


class AuditState(WireModel):
    """The permission log (xsky/leader/audit.py): decisions, and messages refused."""

    entries: list[AuditEntry] = Field(default_factory=list)
    dropped: int = 0  # entries beyond the kept tail
    refused: int = 0  # signals refused: malformed, spoofed or not applicable (each is an entry)
    last_refusal: str | None = None


class RunFacts(WireModel):
    """The run's own facts, the router's (xsky/leader/core.py)."""

    started_at: datetime | None = None
    continued: int = 0  # how many times the run continued as new
    paused: bool = False
    pause_reason: str | None = None
    # Where the run's workspace lives (workers that share no disk): the host's task queue, chosen
    # when the first workspace agent started; None: not chosen yet, or one disk for all.
    workspace_queue: str | None = None
    lost_queue: str | None = None  # the host queue found lost, until another is claimed


class LeaderState(WireModel):
    """Everything continue-as-new must carry: each component's state.

    It travels as one flat object (:class:`CarriedState`, the shape every version so far has
    written), so a state carried over by an older execution reads as it was written, and a
    state this one writes is the same bytes an older one would have written of it: a replay
    stores exactly what the recorded history stored."""

    plan: PlanState
    board: BoardState = Field(default_factory=BoardState)
    requests: RequestState = Field(default_factory=RequestState)
    briefs: BriefState = Field(default_factory=BriefState)
    ladder: LadderState = Field(default_factory=LadderState)
    budget: BudgetState = Field(default_factory=BudgetState)
    ledger: Ledger = Field(default_factory=Ledger)  # the coordinator's task and progress ledgers
    audit: AuditState = Field(default_factory=AuditState)
    run: RunFacts = Field(default_factory=RunFacts)

    @model_validator(mode="before")
    @classmethod
    def _carried(cls, data: Any) -> Any:
        """The flat form it travels in (:class:`CarriedState`), read into the components' parts."""
        if isinstance(data, CarriedState):
            return data.parts()
        if not isinstance(data, dict) or "board" in data:
            return data
        plan = data.get("plan")
        flat = isinstance(plan, Workflow) or (isinstance(plan, dict) and "plan" not in plan)
        if not flat:
            return data
        with gc_paused():  # a 30,000-agent state: the collector would double the time
            return CarriedState.model_validate(data).parts()

    def carried(self) -> CarriedState:
        """The flat form it travels in."""
        p, b, r, f, a, u = self.plan, self.briefs, self.requests, self.run, self.audit, self.budget
        return CarriedState(
            plan=p.plan,
            plan_version=p.version,
            plan_history=p.history,
            tasks=self.board.tasks,
            removed_tasks=self.board.removed,
            requests=r.requests,
            request_seq=r.seq,
            nudges=b.nudges,
            answers=b.answers,
            approvals=b.approvals,
            granted=b.granted,
            stall_levels=self.ladder.levels,
            paused=f.paused,
            pause_reason=f.pause_reason,
            review=p.review,
            resumes=p.resumes,
            review_deadline=p.review_deadline,
            auto_replans=p.auto_replans,
            defined_roles=p.defined_roles,
            approved_rules=b.approved_rules,
            audit=a.entries,
            audit_dropped=a.dropped,
            started_at=f.started_at,
            continued=f.continued,
            workspace_queue=f.workspace_queue,
            lost_queue=f.lost_queue,
            ledger=self.ledger,
            budget=u.limits,
            spend=u.spend,
            refused=a.refused,
            last_refusal=a.last_refusal,
        )


class CarriedState(WireModel):
    """A leader's state as continue-as-new carries it: one flat object, field for field as
    every version has written it (new fields only ever added, with defaults)."""

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
    granted: dict[str, Granted] = Field(default_factory=dict)
    stall_levels: dict[str, int] = Field(default_factory=dict)  # by task id
    paused: bool = False
    pause_reason: str | None = None
    review: Literal["none", "waiting", "approved", "approved_by_timeout"] = "none"
    resumes: str | None = None
    review_deadline: datetime | None = None
    auto_replans: int = 0
    defined_roles: dict[str, RoleCapabilityModel] = Field(default_factory=dict)
    approved_rules: list[ApprovedRule] = Field(default_factory=list)
    audit: list[AuditEntry] = Field(default_factory=list)
    audit_dropped: int = 0
    started_at: datetime | None = None
    continued: int = 0
    workspace_queue: str | None = None
    lost_queue: str | None = None
    ledger: Ledger = Field(default_factory=Ledger)
    budget: RunBudget | None = None
    spend: Spend = Field(default_factory=Spend)
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

    def parts(self) -> dict[str, Any]:
        """The components' parts of a :class:`LeaderState`."""
        return {
            "plan": PlanState(
                plan=self.plan,
                version=self.plan_version,
                history=self.plan_history,
                review=self.review,
                review_deadline=self.review_deadline,
                auto_replans=self.auto_replans,
                resumes=self.resumes,
                defined_roles=self.defined_roles,
            ),
            "board": BoardState(tasks=self.tasks, removed=self.removed_tasks),
            "requests": RequestState(requests=self.requests, seq=self.request_seq),
            "briefs": BriefState(
                answers=self.answers,
                approvals=self.approvals,
                granted=self.granted,
                approved_rules=self.approved_rules,
                nudges=self.nudges,
            ),
            "ladder": LadderState(levels=self.stall_levels),
            "budget": BudgetState(limits=self.budget, spend=self.spend),
            "ledger": self.ledger,
            "audit": AuditState(
                entries=self.audit,
                dropped=self.audit_dropped,
                refused=self.refused,
                last_refusal=self.last_refusal,
            ),
            "run": RunFacts(
                started_at=self.started_at,
                continued=self.continued,
                paused=self.paused,
                pause_reason=self.pause_reason,
                workspace_queue=self.workspace_queue,
                lost_queue=self.lost_queue,
            ),
        }


# -- messages: updates ---------------------------------------------------------------------


class PersonRequest(WireModel):
    """A request a person types (an update's or a signal's input, from the stock ``temporal``
    CLI or the Web UI). Decoding ignores a field the model does not have, as every model's does
    (a history recorded with a field since removed must replay), but notes it: an update's
    validator — which runs for a new update only, never on replay — refuses the request with
    :meth:`unknown_problem`, so a misspelt field (``{"decison": "deny"}``) is not taken for
    its default (``allow_once``)."""

    _unknown: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _note_unknown(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        made = handler(data)
        if isinstance(made, PersonRequest):
            # (one left empty — null, false, 0, "" — asks nothing: a newer client sends every
            # field of its request, those it added among them, and a person typed none of them)
            made._unknown = [k for k in unknown_fields(type(made), data) if data[k]]
        return made

    def unknown_problem(self) -> str | None:
        """Why the request is refused for fields it does not have; None: it names none."""
        if not self._unknown:
            return None
        return f"{type(self).__name__}: {unknown_sentence(type(self), self._unknown)}; nothing was changed"


class ReplanRequest(PersonRequest):
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


class ApprovePlanRequest(PersonRequest):
    version: int | None = None  # the plan version approved; refused if the plan changed since
    comment: str | None = None


class TaskRequest(PersonRequest):
    """A request about one agent and nothing more (``pause_task``, ``resume_task``,
    ``cancel_task``, the ``nudges`` query). The requests below that name one agent and say
    more declare ``task_id`` themselves, so no request sits deeper than one level under
    :class:`PersonRequest`."""

    task_id: str


class DispatchRequest(WireModel):
    """Input of the ``dispatch_news`` query: one dispatch of one task, asked by its agent."""

    task_id: str
    dispatch: int


class DispatchNews(WireModel):
    """What a running model agent learns before each call (``dispatch_news``): its supervisor's
    nudges, and the share of the budget it may spend now — lowered (or set) by a person since
    it was dispatched. ``share_known`` False: the leader holds no share for it (no budget, or
    not this dispatch): the one its input brought stands."""

    nudges: list[str] = Field(default_factory=list)
    share: BudgetShare | None = None
    share_known: bool = False


class RetryTaskRequest(PersonRequest):
    task_id: str
    task: str | None = None  # new task text


class SkipTaskRequest(PersonRequest):
    task_id: str
    result: str = ""


class ResetTaskRequest(PersonRequest):
    """``reset_task``: start one agent's attempt again — from its checkpoint (its conversation
    so far), or with ``fresh`` from scratch."""

    task_id: str
    fresh: bool = False


class TaskTimeoutRequest(PersonRequest):
    """``set_task_timeout``: seconds one agent's next attempt may take (start to close)."""

    task_id: str
    seconds: float


class AnswerRequest(PersonRequest):
    request_id: str
    text: str


class ApproveToolRequest(PersonRequest):
    request_id: str
    decision: ToolDecision = "allow_once"
    message: str | None = None


class DefineRoleRequest(PersonRequest):
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


class EndRunRequest(PersonRequest):
    """``end_run``: close a run that is held open (failed tasks waiting for a decision, or
    paused): its pending requests are withdrawn and it ends with the status its tasks have."""

    reason: str | None = None


class SetBudgetRequest(PersonRequest):
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
    # the run that does it, when not this one: a retry of an ended run's task is a follow-up run
    follow_up: str | None = None


# How the lines begin that a replan's reply adds after its first, on what reading its XML said
# (xsky/leader/people.py: People.replan_result).
REPLY_READ_MARKS = ("warning: <plan>:", "… and ")


# -- messages: signals ----------------------------------------------------------------------


class PauseRequest(PersonRequest):
    cancel_running: bool = False
    reason: str | None = None


class ResumeRequest(PersonRequest):
    reason: str | None = None


class NudgeRequest(PersonRequest):
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

    def page(self, req: PageRequest) -> BoardPage:
        """A page of this page, as the ``task_board`` query pages the board: for the whole
        board of a run that ended, stored as it ended (RunResult.board_ref), read without
        asking a worker to replay the run."""
        chosen = [t for t in self.tasks if req.status is None or t.status == req.status]
        return self.model_copy(
            update={
                "total": len(chosen),
                "offset": req.offset,
                "tasks": chosen[req.offset : req.offset + req.limit],
            }
        )
