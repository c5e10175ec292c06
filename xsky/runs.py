"""Inputs and outputs of the Temporal entry points: one model each, plain JSON on the wire.

Field names are camelCase on the wire (so the stock ``temporal`` CLI and the Web UI show
the seed's style), snake_case in Python. New fields always get defaults, so a running
workflow can read what an older client sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from xsky.artifacts import ArtifactRef, BlobRef
from xsky.leader.ledger import CoordinatorMode
from xsky.leader.state import Answer, AuditEntry, LeaderState, ToolApproval
from xsky.plan.agent_config import RetryOptions, StallWindows
from xsky.plan.budget import BudgetShare, BudgetView, RunBudget, StopReason, Usage, UsageReport
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.security.permissions import PermissionSettings
from xsky.security.roles import RoleCapabilityModel
from xsky.wire import WireModel as Wire

# Characters of an agent's progress message the leader keeps (the board shows a line of it).
PROGRESS_CHARS = 500


class RunOptions(Wire):
    max_parallel: int = Field(8, ge=1, le=1000)
    start_to_close_timeout: float = Field(600.0, gt=0, description="seconds, per agent attempt")
    heartbeat_timeout: float = Field(
        10.0, gt=0, description="seconds without a heartbeat before an attempt is lost"
    )
    lost_worker_retries: int = Field(
        20,
        ge=0,
        le=200,
        description="retries of attempts whose worker was lost (killed, "
        "crashed, cut off): a separate allowance from retry.maximumAttempts, which counts errors",
    )
    retry: RetryOptions = Field(default_factory=RetryOptions)
    artifact_threshold: int = Field(
        8192, ge=256, description="results larger than this many bytes travel as references"
    )
    workspace: str | None = Field(
        None, description="directory agents work in; default .xsky/runs/<id>/workspace"
    )
    review: bool = Field(
        False, description="wait for approve_plan (or a replan) before dispatching anything"
    )
    review_timeout: float = Field(3600.0, gt=0, description="seconds to wait for a review")
    review_timeout_action: Literal["approve", "cancel"] = "cancel"
    max_auto_replans: int = Field(
        2, ge=0, le=20, description="automatic replans per run (failures, stalls)"
    )
    replan_deterministic: bool = Field(
        False,
        description="replan automatically after a deterministic failure too (a non-zero exit, "
        "an HTTP 4xx, a refused argument); off: such a failure is final and waits for a person's "
        "retry, skip or replan",
    )
    hold_on_failure: float = Field(
        0.0,
        ge=0,
        description="seconds a run stays open after a task failed for good, with an escalation "
        "E-n (retry, skip, replan or end_run); 0: the run ends as soon as nothing can progress",
    )
    request_timeout: float = Field(
        86400.0, gt=0, description="seconds a question or approval may wait for a person"
    )
    stall: StallWindows = Field(default_factory=StallWindows)
    # Ignored since v0.5.0 (patch local-tools-off): kept so that inputs that set it still
    # parse, and runs started before replay as they ran (docs/deployment.md, "Local activities and queries").
    local_tools: bool = Field(
        False,
        description="ignored since v0.5.0: every agent runs as an activity (a local activity's "
        "result waited for a timer the server fires about a second late)",
    )
    allow_hosts: list[str] = Field(
        default_factory=list,
        description="hosts this run's agents may reach beyond the worker's rules: HOST or "
        "HOST:PORT (a local or private host needs its port), each an allow rule "
        "network(domain:HOST[:PORT]); only the starter sets them, never a plan or a replan",
    )
    inline_limit: int = Field(
        512 * 1024,
        ge=1024,
        description="characters of state a continued run carries inline; "
        "more goes to the artifact store by reference",
    )
    messages: Literal["queue", "interrupt", "reject"] = Field(
        "queue",
        description="what a nudge does when it reaches an agent in the middle of a step: queue "
        "(read at its next step: after the model call or tool call in progress), interrupt (the "
        "step is stopped and the attempt starts again from its checkpoint, reading it first), "
        "reject (refused while the agent is running; sent again once it is not)",
    )
    coordinator: CoordinatorMode = Field(
        "auto",
        description="the leader's judgment: act (a model checks results against their tasks and "
        "the goal, answers workers' questions, approves within the delegated rules, finds a "
        "stall's root cause), advise (the same, recorded as suggestions for a person), off "
        "(mechanical rules only); auto: act when the workers have a model, off when not",
    )
    coordinator_retries: int = Field(
        1,
        ge=0,
        le=5,
        description="times the leader may send one task's result back with an instruction",
    )
    answer_grace: float = Field(
        300.0,
        ge=0,
        description="seconds during which a person may override an answer the leader gave",
    )
    delegate: list[str] = Field(
        default_factory=list,
        description="permission rules (allow-rule grammar) within which the leader may approve "
        "tool calls in a person's place, beside the worker's permissions.delegate",
    )
    budget: RunBudget | None = Field(
        None,
        description="tokens, USD, minutes and agents the run may spend (and caps per agent and "
        "per role); None: no budget",
    )


class AgentReport(Wire):
    id: str
    task_id: str
    name: str
    status: str
    result: str | None = None
    result_ref: ArtifactRef | None = None
    error: str | None = None
    # dispatches: times the leader sent the task (a retry, an answer, a replan each send it
    # again) — not the board's `tries`, which count Temporal's retries inside each one too
    attempts: int = 0
    started_at: datetime | None = None
    ended_at: datetime | None = None
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    # who answered a completed agent: a model's name, "offline" (no model: extractive), None (a tool)
    provider: str | None = None
    usage: Usage | None = None  # what its model calls used (None: it made none)


class ResumeFrom(Wire):
    """A follow-up run that resumes an ended one (``Run.retry`` on an ended run): the agents
    that completed there are carried over with their results, and ``rerun`` (with every agent
    that depends on them) runs again, in the first run's workspace."""

    run_id: str  # the run this one resumes
    workspace_of: str  # the run whose default workspace agents use (the first of a chain)
    # A fork of an ended run works in a workspace of its own that starts as a copy of this
    # run's (its files as that run left them): two forks, or a fork and a follow-up, never
    # write each other's files, and the run forked keeps what it made.
    workspace_from: str | None = None
    carried: list[AgentReport] = Field(default_factory=list)  # completed/skipped agents' reports
    rerun: list[str] = Field(default_factory=list)  # agent ids to run again (and dependents)


class RunInput(Wire):
    """The one input of ``LeaderWorkflow.run``; ``state`` is set only by continue-as-new.

    Either a ``workflow`` (a plan), or a ``task_prompt`` the leader plans first.
    """

    workflow: Workflow | None = None
    task_prompt: str | None = None
    task_id: str | None = None  # for a prompt-only run
    variables: dict[str, str] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    options: RunOptions = Field(default_factory=RunOptions)
    roles: dict[str, RoleCapabilityModel] = Field(
        default_factory=dict,
        description="roles resolved at start (built-ins < user < project settings); default: built-ins",
    )
    permissions: PermissionSettings = Field(
        default_factory=PermissionSettings, description="rules and mode from settings"
    )
    state: LeaderState | None = None
    resume: ResumeFrom | None = None
    plan_ref: BlobRef | None = Field(
        None, description="a plan too large for the input, as workflow XML in the artifact store"
    )
    state_ref: BlobRef | None = Field(
        None, description="set by continue-as-new: the run's state in the artifact store"
    )


class AgentInput(Wire):
    """The one input of the ``run_agent`` activity: the agent with references rendered."""

    run_id: str
    task_id: str
    agent: WorkflowAgent
    execution_id: str | None = (
        None  # the run's first execution: survives continue-as-new, not id reuse
    )
    plan_version: int = 1
    dispatch: int = 1
    workspace: str | None = None
    # A resumed run works in the workspace of the run it resumes (its default one).
    workspace_of: str | None = None
    # A fork's workspace, when the worker first makes it, is a copy of this run's (ResumeFrom).
    workspace_from: str | None = None
    artifact_threshold: int = 8192
    # (No heartbeat interval: a worker heartbeats at a quarter of the activity's own heartbeat
    # timeout, activities/beat.py; an older input's heartbeatInterval is ignored.)
    progress_interval: float = 5.0  # at most one progress report per this many seconds
    resume: bool = True  # pick up the agent's checkpoint when one exists
    answers: list[Answer] = Field(default_factory=list)
    approvals: list[ToolApproval] = Field(default_factory=list)
    nudges: list[str] = Field(default_factory=list)
    role: RoleCapabilityModel | None = None  # the agent's role, resolved by the leader
    # The role is one the plan's <role> defines, and a person approved that plan (approve_plan):
    # the worker gives it the tools it names though it does not know the role itself.
    role_approved: bool = False
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    allow_hosts: list[str] = Field(default_factory=list)  # RunOptions.allow_hosts, as started
    goal: str | None = None  # the run's goal, put before every task so agents do not drift
    markers: list[str] | None = (
        None  # artifact URIs the leader put in the texts; only these are expanded
    )
    error_attempts: int = (
        0  # attempts that may end in an error (0: Temporal's retry policy alone decides)
    )
    # Set (by a leader with the flat-retry-backoff patch): Temporal retries every attempt after
    # a flat interval, and an attempt that follows an error waits the rest of this backoff
    # itself (an attempt lost with its worker does not wait). None: Temporal's policy backs off.
    error_backoff: RetryOptions | None = None
    # What this dispatch may spend (a run with a budget, an agent that may call a model).
    budget_share: BudgetShare | None = None
    # The dispatch's token: its progress reports carry it, so the leader takes them from this
    # attempt only (a report_progress signal sent by anyone else is dropped). None: an older leader.
    report_token: str | None = None
    # Set when the input was too large for a payload: the whole input, in the artifact store
    # (the activity reads it; every other field is then the leader's placeholder).
    input_ref: BlobRef | None = None


class LeaderSetup(Wire):
    """What a starting run learns from its worker (the ``leader_setup`` activity)."""

    search_attributes: list[str] = Field(default_factory=list)  # xsky's attributes the server has
    agents_here: bool = False  # the leader's queue runs every kind of agent: no per-kind queue
    # The worker's own settings (its user file: never a folder an agent can write): rules
    # within which the leader may approve tool calls, and the deny rules it never overrides.
    delegate: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    # The model the worker's coordinator would use (None: it has none): an ``auto`` run
    # consults its coordinator from the start when its leader's worker has one.
    model: str | None = None
    # The workers share an object store and have no disk in common: a run's workspace lives on
    # one host at a time, and its workspace agents go to that host's task queue.
    workspace_hosts: bool = False
    # The worker hands payloads over Temporal's threshold to the store (External Storage): a
    # state too large for the history may go to the next execution as its input.
    payloads_by_reference: bool = False


class WorkspaceClaim(Wire):
    """Input of ``claim_workspace``: which workspace a run's agents need a host for. One host
    holds a workspace for every run that uses it (activities/storage/claims.py): the run's own,
    a named one (``workspace``), or the first run's of a follow-up chain (``workspace_of``)."""

    run_id: str
    task_id: str  # the agent it is claimed for (for the log)
    lost: str | None = None  # the host queue the workspace was on, lost (None: a first claim)
    # (Leaders older than these fields send neither: the run's own workspace is claimed.)
    workspace: str | None = None  # the name the run gave its workspace
    workspace_of: str | None = None  # a follow-up run: the run whose workspace it works in
    window: float = 10.0  # seconds: a holder none of whose workers beat for longer is lost


class WorkspaceHost(Wire):
    """Where a run's workspace lives: a host and its task queue."""

    host: str
    queue: str


class HostCheck(Wire):
    """Input of ``host_alive``: does a worker still serve this host's queue?"""

    queue: str
    window: float = 10.0  # seconds: a worker silent longer than this is gone


class RequestPayload(Wire):
    """What an agent needs from a person: an answer to ``question``, or approval of a tool call."""

    question: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    rule: str | None = None
    hard: bool = False  # only a person may approve it (see HumanRequest.hard)
    # The only answers a question takes (a tool call in doubt: xsky/in_doubt.py); None: any.
    choices: list[str] | None = None


class DecisionRecord(Wire):
    """A permission decision an agent attempt made automatically (for the run's audit log)."""

    at: datetime
    tool: str
    arguments: str
    effect: Literal["allow", "ask", "deny"]
    reason: str
    # who decided: the rules, or the person (or the leader) whose approval answered its ask
    by: Literal["auto", "person", "leader"] = "auto"


# "budget": the agent stopped cleanly before a model call its share could not cover (its
# conversation is checkpointed); it runs again when the budget admits it.
OutcomeKind = Literal["completed", "question", "needs_approval", "budget"]


class AgentOutcome(Wire):
    """What an agent attempt ended with. Failures are raised, not returned."""

    kind: OutcomeKind = "completed"
    result: str | None = None  # inline when at most the threshold
    # A completed agent's whole result, stored: one over 256 bytes (a smaller one travels
    # inline only, activities/agents/activity.py INLINE_ONLY)
    result_ref: ArtifactRef | None = None
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    tokens: int = 0
    iterations: int = 0
    provider: str | None = None
    started_at: datetime | None = None  # when this attempt began working (activity clock)
    request: RequestPayload | None = None  # for question / needs_approval
    decisions: list[DecisionRecord] = Field(default_factory=list)  # permission decisions made
    attempt: int = 1  # Temporal's attempt number of this dispatch that ended so
    usage: UsageReport | None = None  # what its conversation has used (None: an older worker)
    need: Usage | None = None  # a budget stop: what its next model call needs
    stopped: StopReason | None = None  # a budget stop: which limit of its share it met
    host: str | None = None  # where the attempt ran (the worker's XSKY_HOST)


class ProgressReport(Wire):
    """Signal ``report_progress``: a running agent says it is alive and moving."""

    task_id: str
    dispatch: int
    message: str = ""
    iteration: int = 0
    tokens: int = 0
    activity_attempt: int = 1
    nudges_seen: int = 0  # nudges of this task the agent has taken in so far
    progress: bool = True  # False: only "I have started" (not progress for the stall ladder)
    started_at: datetime | None = None  # when this attempt began (the worker's clock)
    previous: str | None = None  # how the attempt before this one ended (error, or worker lost)
    usage: UsageReport | None = None  # what the agent's conversation has used so far
    final: bool = False  # sent as the attempt was stopped: its usage is all it used
    token: str | None = None  # the dispatch's report token (AgentInput.report_token)
    host: str | None = None  # the worker's host (XSKY_HOST): the board shows where a task runs


class PendingAttempt(Wire):
    """One of a run's agent activities the server holds as pending (``leader_attempts``):
    scheduled (no worker has started it: none polls its queue, or the one that had it was
    lost and the retry waits for another) or started by a worker."""

    activity_id: str
    state: Literal["scheduled", "started", "cancel_requested"]
    attempt: int = 1  # Temporal's attempt number
    scheduled_at: datetime | None = None  # when the current attempt was scheduled
    started_at: datetime | None = None  # when a worker last started it
    heartbeat_at: datetime | None = None
    worker: str | None = None  # the identity of the worker that last had it
    # Paused by an operator (Temporal's activity pause: `temporal activity pause`): not run
    # again until unpaused; while a worker still runs it (pause requested) ``state`` says started.
    paused: bool = False


class PendingAttempts(Wire):
    """A run's pending agent activities, as the server describes the run (``leader_attempts``)."""

    attempts: list[PendingAttempt] = Field(default_factory=list)


FinalStatus = Literal["completed", "failed", "cancelled"]


class ResultsPage(Wire):
    """One page of a run's per-agent results."""

    total: int
    offset: int
    agents: list[AgentReport] = Field(default_factory=list)


class RunResult(Wire):
    """How a run ended. Every agent's report is inline for runs up to ``INLINE_AGENTS``
    agents; beyond, ``agents`` holds those that did not complete (at most that many) and
    ``results_ref`` all of them, as JSON lines in the artifact store."""

    workflow_id: str
    name: str
    status: FinalStatus
    summary: str
    agents: list[AgentReport]
    counts: dict[str, int] = Field(default_factory=dict)  # agents by status
    agents_total: int = 0
    results_ref: BlobRef | None = None
    # A large run's whole board as it ended (a BoardPage), for `status` to read from the store.
    board_ref: BlobRef | None = None
    plan_version: int = 1
    started_at: datetime | None = None
    ended_at: datetime | None = None
    permission_log: list[AuditEntry] = Field(default_factory=list)
    # The leader's check of the goal: "met: …", "not met: …", "not checked: …" (None before
    # the coordinator existed).
    goal_check: str | None = None
    usage: Usage = Field(default_factory=Usage)  # every model call of the run, settled
    budget: BudgetView | None = None  # spend against the budget (None: the run had none)
