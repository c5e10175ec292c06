"""LeaderCore: the leader's decisions as a pure, deterministic state machine.

The scheduler, the task board, people's requests, the stall ladder, replan merging and
the rules of every intervention live here, with no Temporal import: the core takes
``now`` and events (an attempt ended, an update, a signal, a timer) and returns commands
(:class:`StartAgent`, :class:`StopAgent`, :class:`CallPlanner`). ``workflows/leader.py``
turns Temporal events into calls and commands into activities and cancellations, so all
of this is tested without a server (tests/unit/test_leader_core.py drives it through
generated event sequences).

Per-event cost does not grow with the plan: the ready set is a heap of plan positions,
each task counts its unfinished dependencies, and status counters are kept as states
change. Whole-board work (derived ``blocked`` statuses, the board's rows) happens only
in queries and when the board is published.

Validators (``check_*``) raise :class:`Rejected` and change nothing; handlers assume the
check passed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from xsky.artifacts import marker
from xsky.errors import PlanError, Problem, WorkflowValidationError
from xsky.kinds import AgentInfo
from xsky.leader.replan import merge_plan, new_task
from xsky.leader.stall import ESCALATED, seconds_to_next_step, stall_message, stall_step
from xsky.leader.state import (
    Answer,
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    AuditEntry,
    BoardPage,
    DefineRoleRequest,
    HumanRequest,
    InterventionResult,
    LeaderState,
    Nudge,
    NudgeRequest,
    PageRequest,
    PauseRequest,
    PlanVersion,
    ReplanRequest,
    RequestKind,
    RequestStatus,
    RetryTaskRequest,
    SkipTaskRequest,
    TaskRequest,
    ToolApproval,
)
from xsky.leader.tasks import StoredStatus, TaskState, TaskView, derive_statuses, subject_of
from xsky.plan import dag
from xsky.plan.agent_config import activity_settings, stall_windows, tool_name
from xsky.plan.dep_context import dependency_context, wants_context
from xsky.plan.models import RoleCapabilityModel, Workflow, WorkflowAgent
from xsky.plan.planning import problems_text
from xsky.plan.variables import render, render_command, render_config
from xsky.plan.xml import parse_workflow, workflow_to_xml
from xsky.runs import (
    AgentInput,
    AgentOutcome,
    AgentReport,
    DecisionRecord,
    FinalStatus,
    ProgressReport,
    ResultsPage,
    RunInput,
    RunResult,
)
from xsky.security.permissions import ApprovedRule, run_rules_for
from xsky.security.roles import BUILTIN_ROLES, effective_roles, plan_role_problems, role_problems
from xsky.security.tools import EXEC_OR_NETWORK_TOOLS

# Agent kinds with their own task queue; every other name (llm and roles) goes to "llm".
QUEUE_KINDS = ("browser", "file", "shell")
# A noop this short runs as a local activity where the leader's worker runs agents (longer
# ones stay activities: a local one holds the workflow task, so the board would not move).
LOCAL_SECONDS = 0.05
# The run's result carries inline results up to this many bytes in all; beyond it, refs only.
INLINE_RESULT_BUDGET = 512 * 1024
# Retry notes a task keeps (the newest).
MAX_RETRY_NOTES = 20
# Runs with more agents than this report them by reference (RunResult.results_ref).
INLINE_AGENTS = 200
# The plan query shows this many agents per page.
PLAN_PAGE = 1000
# Results shown to the planner are cut to this many characters each.
PLANNER_RESULT_CHARS = 2000
SATISFIED = ("completed", "skipped")
RUNNING = ("dispatched", "in_progress")
# The permission audit log keeps this many entries (older ones are counted, not kept).
AUDIT_KEEP = 1000
# Why a running attempt is being stopped, weakest first; a stronger reason wins.
INTENT_RANK = {
    "pause": 0,
    "restart": 1,
    "changed": 2,
    "abandon": 3,
    "removed": 4,
    "skip": 5,
    "cancel": 6,
    "run-cancel": 7,
}


class Rejected(Exception):
    """An intervention refused by its validator; the message says why and what to do."""


# -- commands ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartAgent:
    """Run the agent's next attempt (dispatch number ``dispatch``)."""

    agent_id: str
    dispatch: int


@dataclass(frozen=True)
class StopAgent:
    """Cancel the agent's running attempt; the core hears back through ``attempt_ended``."""

    agent_id: str


@dataclass(frozen=True)
class CallPlanner:
    """Replan automatically for ``reason`` (failures, stalls)."""

    reason: str


Command = StartAgent | StopAgent | CallPlanner


@dataclass(frozen=True)
class AttemptFailure:
    """How an attempt failed after Temporal's retries (``None`` for a cancelled one)."""

    message: str
    decisions: list[DecisionRecord] = field(default_factory=list)
    attempt: int = 0  # Temporal's attempt number of the last try (0: not known)
    lost: bool = False  # the last try's worker was lost (no heartbeat): not the agent's failure


class _Results(Mapping[str, str]):
    """Completed agents' results for rendering: inline text, or a marker for stored ones."""

    def __init__(self, tasks: Mapping[str, TaskState]):
        self._tasks = tasks
        self.issued: list[
            str
        ] = []  # artifact URIs handed out as markers (the activity expands only these)

    def __getitem__(self, agent_id: str) -> str:
        task = self._tasks[agent_id]
        if task.stored not in SATISFIED:
            raise KeyError(agent_id)
        if task.result is not None:
            return task.result
        if task.result_ref is not None:
            self.issued.append(task.result_ref.uri)
            return marker(task.result_ref)
        return ""

    def __contains__(self, agent_id: object) -> bool:
        return (
            isinstance(agent_id, str)
            and agent_id in self._tasks
            and self._tasks[agent_id].stored in SATISFIED
        )

    def __iter__(self) -> Iterator[str]:
        return (k for k, t in self._tasks.items() if t.stored in SATISFIED)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LeaderCore:
    """One run's leader: its durable :class:`LeaderState` and the indexes kept beside it."""

    def __init__(self, inp: RunInput, run_id: str, now: datetime) -> None:
        self.input = inp
        self.options = inp.options
        self.run_id = run_id
        # A prompt-only run starts with an empty plan; the shell asks the planner for one.
        self.needs_plan = inp.state is None and inp.workflow is None
        first = (
            (inp.state.plan if inp.state is not None else None)
            or inp.workflow
            or Workflow(
                name=" ".join((inp.task_prompt or "").split())[:80],
                task_id=inp.task_id or run_id,
                task_prompt=inp.task_prompt,
            )
        )
        self.variables = {**first.variables, **inp.variables}
        if inp.state is not None:
            self.s = inp.state
        else:
            self.s = LeaderState(
                plan=first,
                plan_history=[]
                if self.needs_plan
                else [
                    PlanVersion(
                        version=1, xml=workflow_to_xml(first), reason="initial plan", at=now
                    )
                ],
                tasks=[new_task(a, run_id) for a in first.agents],
                started_at=now,
                review="waiting" if inp.options.review else "none",
                review_deadline=now + timedelta(seconds=inp.options.review_timeout)
                if inp.options.review
                else None,
            )
        self.active: dict[str, int] = {}  # agent id → the dispatch whose attempt has not ended yet
        self.intents: dict[str, str] = {}  # agent id → why its running attempt is being stopped
        self.replanning = False
        self.draining = False  # continue-as-new is due: start nothing new
        self.ended: str | None = None  # set when the run ends early (review timed out)
        self.closing = False  # the run is about to return
        self.changed = False  # something people can see changed since the last publish
        self.log: list[
            str
        ] = []  # what the shell should log (stall-ladder steps), taken and cleared by it
        self._index()

    # -- indexes ---------------------------------------------------------------------------------

    def _index(self) -> None:
        """Rebuild every index from the state (at start, and after a plan changes)."""
        self.tasks: dict[str, TaskState] = {t.agent_id: t for t in self.s.tasks}
        self.agents: dict[str, WorkflowAgent] = {a.id: a for a in self.s.plan.agents}
        self._order = {a.id: i for i, a in enumerate(self.s.plan.agents)}
        self._dependents: dict[str, list[str]] = {a.id: [] for a in self.s.plan.agents}
        for a in self.s.plan.agents:
            for d in a.depends:
                if d in self._dependents:
                    self._dependents[d].append(a.id)
        self._missing = {
            a.id: sum(
                1 for d in a.depends if d in self.tasks and self.tasks[d].stored not in SATISFIED
            )
            for a in self.s.plan.agents
        }
        self._heap: list[tuple[int, str]] = []
        for a in self.s.plan.agents:
            self._consider(a.id)
        self._pending_requests = [r for r in self.s.requests if r.status == "pending"]
        self.counts: dict[str, int] = {}  # tasks by stored status
        for t in self.s.tasks:
            self.counts[t.stored] = self.counts.get(t.stored, 0) + 1
        self._nudges: dict[str, list[str]] = {}
        for n in self.s.nudges:
            self._nudges.setdefault(n.task_id, []).append(n.message)

    def _consider(self, agent_id: str) -> None:
        """Push ``agent_id`` on the ready heap if it may be ready (checked again when popped)."""
        if self._is_ready(agent_id):
            heapq.heappush(self._heap, (self._order[agent_id], agent_id))

    def _is_ready(self, agent_id: str) -> bool:
        task = self.tasks.get(agent_id)
        return (
            task is not None
            and agent_id not in self.active  # an earlier attempt is still winding down
            and task.stored == "pending"
            and task.waiting_on is None
            and self._missing.get(agent_id, 0) == 0
        )

    def _set_stored(self, task: TaskState, status: StoredStatus) -> None:
        """Every change of a task's stored status goes through here (dependents' counts)."""
        was = task.stored in SATISFIED
        self.counts[task.stored] -= 1
        self.counts[status] = self.counts.get(status, 0) + 1
        task.stored = status
        now_ok = status in SATISFIED
        if was != now_ok:
            for child in self._dependents.get(task.agent_id, []):
                self._missing[child] += -1 if now_ok else 1
                if now_ok:
                    self._consider(child)
        if status == "pending":
            self._consider(task.agent_id)

    def _set_waiting(self, task: TaskState, request_id: str | None) -> None:
        task.waiting_on = request_id
        if request_id is None:
            self._consider(task.agent_id)

    def ready_ids(self) -> list[str]:
        """Ready tasks in plan order (the heap's valid entries; stale ones are dropped)."""
        valid = sorted({(o, a) for o, a in self._heap if self._is_ready(a)})
        self._heap = list(valid)
        heapq.heapify(self._heap)
        return [a for _, a in valid]

    def _any_ready(self) -> bool:
        while self._heap and not self._is_ready(self._heap[0][1]):
            heapq.heappop(self._heap)
        return bool(self._heap)

    # -- roles ---------------------------------------------------------------------------------

    def base_roles(self) -> dict[str, RoleCapabilityModel]:
        """The roles people gave: the run's (or built-ins) and define_role's."""
        return {**(self.input.roles or BUILTIN_ROLES), **self.s.defined_roles}

    def roles(self) -> dict[str, RoleCapabilityModel]:
        """Roles agents may take: the people's, and the plan's <role>s as far as a plan may go
        (narrowing known roles; new roles' privileged tools asked for until a person approved
        the plan: a review that timed out into "approve" leaves them asked for)."""
        base = self.base_roles()
        by_person = self.s.review == "approved"
        return {**base, **effective_roles(self.s.plan.roles, base, by_person)}

    def _plan_role_approved(self, name: str) -> bool:
        """Is ``name`` a role the plan invents, in a plan a person approved (approve_plan)?
        A review that timed out into an approval is nobody's word."""
        return (
            self.s.review == "approved"
            and name not in self.base_roles()
            and any(r.name == name for r in self.s.plan.roles)
        )

    def agent_infos(self) -> list[AgentInfo]:
        return [AgentInfo(name=r.name, description=r.description) for r in self.roles().values()]

    def checked(self, wf: Workflow) -> Workflow:
        """A new plan, if it fits this run (its agents, variables, context) and widens no role."""
        dag.ensure_valid(
            wf, list(self.roles()), variables=self.variables, context_keys=list(self.input.context)
        )
        widening = plan_role_problems(wf.roles, self.base_roles())
        if widening:
            raise WorkflowValidationError([Problem(p) for p in widening])
        return wf

    def privileged_changes(self, wf: Workflow) -> list[str]:
        """Agents of ``wf`` that are new or changed and can run commands or reach the network."""
        base = self.base_roles()
        roles = {**base, **effective_roles(wf.roles, base, approved=False)}
        risky = []
        for agent in wf.agents:
            old = self.agents.get(agent.id)
            if old is not None and old.name == agent.name and old.config == agent.config:
                continue
            role = roles.get(agent.name)
            tools = set(role.allowed_tools + role.requested_tools) if role else set()
            if tools & EXEC_OR_NETWORK_TOOLS or (
                agent.config and tool_name(agent.config) in EXEC_OR_NETWORK_TOOLS
            ):
                risky.append(agent.id)
        return risky

    # -- the run's course ------------------------------------------------------------------------

    def set_first_plan(self, wf: Workflow, provider: str, now: datetime) -> None:
        """Plan v1 of a run started from a sentence."""
        self.s.plan = wf
        self.s.tasks = [new_task(a, self.run_id) for a in wf.agents]
        self.s.plan_history = [
            PlanVersion(
                version=1,
                xml=workflow_to_xml(wf),
                reason=f"planned by {provider} from the request",
                at=now,
            )
        ]
        self.variables = {**wf.variables, **self.input.variables}
        self._index()
        self.needs_plan = False

    def review_timed_out(self, now: datetime) -> bool:
        """Nobody reviewed the plan in time: approve or end the run. True if it goes on."""
        if self.options.review_timeout_action == "approve":
            self.s.review = "approved_by_timeout"  # the plan runs; nobody vouched for its new roles
            self.note_history(
                f"approved automatically: nobody reviewed the plan within {self.options.review_timeout:g}s",
                now,
            )
            return True
        self.ended = f"cancelled: nobody approved the plan within {self.options.review_timeout:g}s"
        self.s.review = "none"
        for task in self.s.tasks:
            if not task.terminal:
                self._finish(task, "cancelled", now, error="the plan was never approved")
        return False

    def finished(self) -> bool:
        """Nothing runs and nothing can start: every task is terminal, blocked, or paused."""
        if self.ended:
            return not self.active
        if self.active or self.replanning:
            return False
        if self._pending_requests:
            return False  # a person still has to answer
        return not self._any_ready()  # ready work while paused waits for resume

    def dispatch(self, now: datetime) -> list[Command]:
        """Start ready agents, in plan order, while there is room."""
        if (
            self.s.paused
            or self.replanning
            or self.draining
            or self.ended
            or self.s.review == "waiting"
        ):
            return []
        room = self.options.max_parallel - len(self.active)
        starts: list[Command] = []
        while room > 0 and self._any_ready():
            _, agent_id = heapq.heappop(self._heap)
            starts.append(self._start(self.tasks[agent_id], now))
            room -= 1
        return starts

    def _start(self, task: TaskState, now: datetime) -> StartAgent:
        self._set_stored(task, "dispatched")
        task.attempt += 1
        task.dispatched_at = now
        task.started_at = task.ended_at = task.last_progress_at = None
        task.error = None
        task.tries += 1
        task.activity_attempt = 1
        self.active[task.agent_id] = task.attempt
        return StartAgent(task.agent_id, task.attempt)

    @staticmethod
    def _observe_attempt(task: TaskState, attempt: int, previous: str | None = None) -> None:
        """Temporal retried the dispatch: count the tries, and say why when it is known."""
        if attempt <= task.activity_attempt:
            return
        task.tries += attempt - task.activity_attempt
        task.retries.append(f"attempt {attempt} after " + (previous or "a failed or lost attempt"))
        del task.retries[:-MAX_RETRY_NOTES]
        task.activity_attempt = attempt

    # -- an attempt's input ----------------------------------------------------------------------

    def templated_command(self, agent_id: str) -> bool:
        """Does this agent's shell command get values beside it (see :meth:`render`)?"""
        config = self.agents[agent_id].config
        if not config:
            return False
        return tool_name(config) == "shell" and isinstance(config.get("command"), str)

    def runs_locally(self, agent_id: str) -> bool:
        """Cheap and side-effect free: a ``noop`` of at most LOCAL_SECONDS may run as a local
        activity on the leader's worker (no task queue round trip, no heartbeat needed)."""
        config = self.agents[agent_id].config
        if not self.options.local_tools or not config or tool_name(config) != "noop":
            return False
        seconds = config.get("seconds", 0)
        return isinstance(seconds, int | float) and 0 <= seconds <= LOCAL_SECONDS

    def wants_context(self, agent_id: str) -> bool:
        """Does this agent get its dependencies' results as input (see :mod:`xsky.plan.dep_context`)?"""
        return wants_context(self.agents[agent_id])

    def render(self, agent_id: str) -> tuple[WorkflowAgent, list[str]]:
        """The agent with its references rendered, and the artifact markers it was given.

        A templated shell command's values travel beside it as variables (data is never pasted
        into code); an agent with no input gets its dependencies' results."""
        agent = self.agents[agent_id]
        results = _Results(self.tasks)
        ctx = self.input.context
        config = agent.config
        if agent.config:
            config = render_config(agent.config, results, self.variables, ctx)
            if self.templated_command(agent_id):
                command, values = render_command(
                    agent.config["command"], results, self.variables, ctx
                )
                config = {**config, "command": command, **({"values": values} if values else {})}
        rendered = agent.model_copy(
            update={
                "task": render(agent.task, results, self.variables, ctx),
                "input": render(agent.input, results, self.variables, ctx)
                if agent.input
                else agent.input,
                "config": config,
            }
        )
        if self.wants_context(agent_id):
            given = dependency_context(agent, self.agents, self.tasks, results.issued)
            if given is not None:
                rendered = rendered.model_copy(update={"input": given})
        return rendered, list(dict.fromkeys(results.issued))

    def settings_for(self, agent_id: str) -> Any:
        return activity_settings(self.agents[agent_id].config, self.options)

    def queue_kind(self, agent_id: str) -> str:
        name = self.agents[agent_id].name
        return name if name in QUEUE_KINDS else "llm"

    def agent_input(
        self,
        agent_id: str,
        rendered: WorkflowAgent,
        dispatch: int,
        heartbeat: float,
        markers: list[str],
        execution_id: str | None,
        error_attempts: int = 0,
    ) -> AgentInput:
        task = self.tasks[agent_id]
        windows = stall_windows(self.agents[agent_id].config, self.options.stall)
        return AgentInput(
            run_id=self.run_id,
            execution_id=execution_id,
            task_id=task.id,
            agent=rendered,
            plan_version=self.s.plan_version,
            dispatch=dispatch,
            workspace=self.options.workspace,
            artifact_threshold=self.options.artifact_threshold,
            heartbeat_interval=max(0.2, min(10.0, heartbeat / 3)),
            progress_interval=max(0.2, min(5.0, windows.nudge_after / 3)),
            answers=list(self.s.answers.get(task.id, [])),
            approvals=self.s.approvals.pop(
                task.id, []
            ),  # a person's decisions go to the next dispatch only
            nudges=list(self._nudges.get(task.id, [])),
            role=self.roles().get(self.agents[agent_id].name),
            role_approved=self._plan_role_approved(self.agents[agent_id].name),
            # The input's rules (whoever started the run wrote them, approvedRules included) and
            # the answers people gave in this run travel apart, so decisions say which decided.
            permissions=self.input.permissions.model_copy(
                update={
                    "run_rules": list(
                        dict.fromkeys(
                            self.input.permissions.run_rules
                            + [a.rule for a in self.input.permissions.approved_rules]
                        )
                    ),
                    "approved_rules": list(self.s.approved_rules),
                }
            ),
            goal=self.s.plan.task_prompt or self.s.plan.name or None,
            markers=markers,
            error_attempts=error_attempts,
        )

    # -- an attempt's end ------------------------------------------------------------------------

    def cannot_start(self, agent_id: str, why: str, now: datetime) -> None:
        self._finish(self.tasks[agent_id], "failed", now, error=f"cannot start: {why}")

    def _current(self, agent_id: str, dispatch: int, task: TaskState) -> bool:
        """Is this the task's latest dispatch, and the task still on the board?"""
        return dispatch == task.attempt and self.tasks.get(agent_id) is task

    def attempt_failed(
        self,
        agent_id: str,
        task: TaskState,
        dispatch: int,
        failure: AttemptFailure | None,
        now: datetime,
    ) -> list[Command]:
        """The attempt raised (``failure``) or was cancelled (``None``)."""
        intent = self.intents.pop(agent_id, None)
        if not self._current(agent_id, dispatch, task):
            return []  # an earlier dispatch, or a task a replan removed
        if failure is not None:
            self._audit(task, failure.decisions)
            self._observe_attempt(task, failure.attempt)
        if intent is not None:
            self._after_stop(task, intent, now)
        elif failure is not None:
            self._finish(task, "failed", now, error=failure.message)
            if failure.lost:
                return []  # workers kept dying: replanning the agent would not help
            return self.auto_replan(f"{task.id} failed: {task.error}")
        return []

    def attempt_succeeded(
        self, agent_id: str, task: TaskState, dispatch: int, outcome: AgentOutcome, now: datetime
    ) -> None:
        intent = self.intents.pop(agent_id, None)
        if not self._current(agent_id, dispatch, task):
            return  # a late completion of an earlier dispatch: dropped
        if intent is not None and intent not in ("pause", "restart"):
            # It finished just as it was stopped: the decision already made stands (and a
            # result of a definition the plan has since changed is not kept).
            self._audit(task, outcome.decisions)
            self._after_stop(task, intent, now)
            return
        self._on_outcome(task, outcome, now)

    def attempt_ended(self, agent_id: str, dispatch: int) -> None:
        """The attempt's activity is over, whatever its end; its slot is free."""
        if self.active.get(agent_id) == dispatch:
            del self.active[agent_id]
            self._consider(agent_id)
        self.changed = True

    def _on_outcome(self, task: TaskState, outcome: AgentOutcome, now: datetime) -> None:
        self._audit(task, outcome.decisions)
        self._observe_attempt(task, outcome.attempt)
        task.tokens += outcome.tokens
        task.iterations = max(task.iterations, outcome.iterations)
        if outcome.started_at is not None:
            task.started_at = (
                outcome.started_at
            )  # the attempt that ended: time queued after a lost worker is not work
        if outcome.kind == "completed":
            task.result = outcome.result
            task.result_ref = outcome.result_ref
            task.artifacts = outcome.artifacts
            self._finish(task, "completed", now)
            return
        req = outcome.request
        assert req is not None, "a question or approval outcome carries its request"
        if outcome.kind == "question":
            request = self._new_request("question", task, req.question or "(no question text)", now)
        else:
            args = ", ".join(f"{k}={v!r}" for k, v in (req.arguments or {}).items())
            request = self._new_request("approval", task, f"{req.tool}({args[:300]})", now)
            request.tool, request.arguments, request.rule = req.tool, req.arguments, req.rule
        self._set_stored(task, "pending")
        self._set_waiting(task, request.id)
        task.last_progress = f"waiting for {request.id}: {request.text[:100]}"

    def _after_stop(self, task: TaskState, intent: str, now: datetime) -> None:
        """A running attempt we stopped on purpose has ended; put the task where it belongs."""
        if intent in ("pause", "restart", "changed"):
            self._set_stored(
                task, "pending"
            )  # runs again (from its checkpoint) when its turn comes
            task.started_at = None
        elif intent == "run-cancel":
            self._finish(task, "cancelled", now, error="the run was cancelled")
        # "cancel", "skip" and "abandon" set the task's state when they were decided;
        # "removed": the task left the board.

    def _finish(
        self, task: TaskState, status: StoredStatus, now: datetime, *, error: str | None = None
    ) -> None:
        self._set_stored(task, status)
        task.error = error
        task.ended_at = now
        if task.started_at is None:
            task.started_at = task.dispatched_at
        self.changed = True

    def _stop(self, agent_id: str, intent: str) -> list[Command]:
        """Ask a running attempt to stop (it ends after the activity acknowledges).

        A stronger reason is never replaced by a weaker one: a task cancelled by a person
        and then caught by a pause must stay cancelled.
        """
        if agent_id not in self.active:
            return []
        current = self.intents.get(agent_id)
        if current is None or INTENT_RANK[intent] > INTENT_RANK[current]:
            self.intents[agent_id] = intent
        return [StopAgent(agent_id)]

    def stop_everything(self, intent: str) -> list[Command]:
        return [c for agent_id in list(self.active) for c in self._stop(agent_id, intent)]

    def _audit(self, task: TaskState, records: list[DecisionRecord]) -> None:
        for r in records:
            self.s.audit.append(
                AuditEntry(
                    at=r.at,
                    task_id=task.id,
                    tool=r.tool,
                    arguments=r.arguments,
                    effect=r.effect,
                    reason=r.reason,
                )
            )
        if len(self.s.audit) > AUDIT_KEEP:
            self.s.audit_dropped += len(self.s.audit) - AUDIT_KEEP
            del self.s.audit[: len(self.s.audit) - AUDIT_KEEP]

    # -- progress --------------------------------------------------------------------------------

    def report_progress(self, report: ProgressReport, now: datetime) -> None:
        task = self.task_by_id(report.task_id)
        if task is None or report.dispatch != task.attempt or task.stored not in RUNNING:
            return  # a report from an earlier dispatch, or about a finished task
        self._observe_attempt(task, report.activity_attempt, report.previous)
        if report.started_at is not None and report.activity_attempt >= task.activity_attempt:
            task.started_at = (
                report.started_at
            )  # this attempt's real start, not when the signal came
        if task.stored == "dispatched":
            self._set_stored(task, "in_progress")
            task.started_at = task.started_at or now
        if report.progress:
            task.last_progress_at = now
            task.last_progress = report.message or task.last_progress
            if self.s.stall_levels.get(task.id, 0) < ESCALATED:
                self.s.stall_levels.pop(task.id, None)  # progress starts the ladder over
        task.iterations = max(task.iterations, report.iteration)
        task.tokens = max(task.tokens, report.tokens)
        self.changed = True

    # -- people: requests ------------------------------------------------------------------------

    def _new_request(
        self, kind: RequestKind, task: TaskState, text: str, now: datetime
    ) -> HumanRequest:
        self.s.request_seq += 1
        prefix = {"question": "Q", "approval": "A", "escalation": "E"}[kind]
        request = HumanRequest(
            id=f"{prefix}-{self.s.request_seq}",
            kind=kind,
            task_id=task.id,
            dispatch=task.attempt,
            text=text,
            created_at=now,
            deadline=now + timedelta(seconds=self.options.request_timeout),
        )
        self.s.requests.append(request)
        self._pending_requests.append(request)
        self.changed = True
        return request

    def request(self, request_id: str) -> HumanRequest | None:
        return next((r for r in self.s.requests if r.id == request_id), None)

    def pending_requests(self, with_review: bool = False) -> list[HumanRequest]:
        """Requests waiting for a person; ``with_review``: the plan review as one of them."""
        pending = list(self._pending_requests)
        if with_review and self.s.review == "waiting" and not self.needs_plan:
            at = self.s.plan_history[-1].at if self.s.plan_history else self.s.started_at
            pending.insert(
                0,
                HumanRequest(
                    id=f"R-{self.s.plan_version}",
                    kind="review",
                    task_id="plan",
                    dispatch=0,
                    # A plan exists (not needs_plan), so plan_history holds its version and ``at`` is set.
                    created_at=at or self.s.started_at,  # type: ignore[arg-type]
                    deadline=self.s.review_deadline,
                    text=f"review plan v{self.s.plan_version} ({len(self.s.plan.agents)} agents), then approve_plan with version "
                    f"{self.s.plan_version}, or replan",
                ),
            )
        return pending

    def _close_request(self, request: HumanRequest, status: RequestStatus, now: datetime) -> None:
        request.status = status
        request.answered_at = now
        if request in self._pending_requests:
            self._pending_requests.remove(request)

    def _withdraw(self, request_id: str | None, why: str, now: datetime) -> None:
        request = self.request(request_id) if request_id else None
        if request is not None and request.status == "pending":
            self._close_request(request, "withdrawn", now)
            request.answer = why

    def tick(self, now: datetime) -> list[Command]:
        """Time passed: requests past their deadline expire; the stall ladder climbs."""
        for request in list(self._pending_requests):
            if request.deadline is not None and now >= request.deadline:
                request.status = "expired"
                self._pending_requests.remove(request)
                task = self.task_by_id(request.task_id)
                if task is not None and task.waiting_on == request.id:
                    self._set_waiting(task, None)
                    self._finish(
                        task,
                        "failed",
                        now,
                        error=f"no answer to {request.id} within {self.options.request_timeout:g}s",
                    )
        return self._check_stalls(now)

    # -- the stall ladder ------------------------------------------------------------------------

    @staticmethod
    def _idle(task: TaskState, now: datetime) -> float:
        since = task.last_progress_at or task.started_at or task.dispatched_at or now
        return (now - since).total_seconds()

    def _check_stalls(self, now: datetime) -> list[Command]:
        commands: list[Command] = []
        for agent_id in list(self.active):
            task = self.tasks.get(agent_id)
            if task is None or task.stored not in RUNNING or agent_id in self.intents:
                continue
            windows = stall_windows(self.agents[agent_id].config, self.options.stall)
            level = self.s.stall_levels.get(task.id, 0)
            idle = self._idle(task, now)
            action = stall_step(
                level, idle, windows, self.s.auto_replans < self.options.max_auto_replans
            )
            if action is None:
                continue
            message = stall_message(action, idle)
            self.log.append(f"stall ladder: {task.id} {action} ({message})")
            if action == "nudge":
                self._add_nudge(Nudge(task_id=task.id, message=message, at=now, source="stall"))
                self.s.stall_levels[task.id] = 1
                task.last_progress = f"nudged: {message[:80]}"
            elif action == "restart":
                self.s.stall_levels[task.id] = 2
                task.last_progress = message
                commands += self._stop(agent_id, "restart")
            elif action == "replan":
                # Failed now, so the replan resets it; the stuck attempt is abandoned.
                commands += self._stop(agent_id, "abandon")
                self._finish(task, "failed", now, error=f"stalled: {message}")
                commands += self.auto_replan(f"{task.id} stalled ({message})", force=True)
            else:
                self.s.stall_levels[task.id] = ESCALATED
                request = self._new_request(
                    "escalation",
                    task,
                    f"{task.id} is stuck — {message}. Answer with guidance to "
                    "run it again with it, or use retry_task, skip_task or cancel_task.",
                    now,
                )
                self._set_waiting(task, request.id)
                task.last_progress = f"escalated as {request.id}"
                self._set_stored(
                    task, "pending"
                )  # blocked on the request from now; the stuck attempt is abandoned
                commands += self._stop(agent_id, "abandon")
            self.changed = True
        return commands

    def next_deadline(self, now: datetime) -> datetime | None:
        due: list[datetime] = [r.deadline for r in self._pending_requests if r.deadline is not None]
        for agent_id in self.active:
            task = self.tasks.get(agent_id)
            if task is None or task.stored not in RUNNING:
                continue
            windows = stall_windows(self.agents[agent_id].config, self.options.stall)
            wait = seconds_to_next_step(
                self.s.stall_levels.get(task.id, 0), self._idle(task, now), windows
            )
            if wait is not None:
                due.append(now + timedelta(seconds=wait))
        return min(due) if due else None

    # -- replanning ------------------------------------------------------------------------------

    def auto_replan(self, reason: str, force: bool = False) -> list[Command]:
        """Replan automatically (failures, stalls) while the run's budget lasts."""
        if self.replanning or self.s.auto_replans >= self.options.max_auto_replans:
            return []
        if not force and self.options.max_auto_replans == 0:
            return []
        self.s.auto_replans += 1
        self.replanning = True
        return [CallPlanner(reason)]

    def auto_replan_label(self, reason: str) -> str:
        return f"automatic replan {self.s.auto_replans}/{self.options.max_auto_replans}: {reason}"

    def require_review(self, risky: list[str], now: datetime) -> None:
        """Nobody asked for these: a model did. Shell, Python or network in new hands waits for a person."""
        self.s.review = "waiting"
        self.note_history(
            f"the automatic replan gives agents {', '.join(risky)} shell, Python or network tools: "
            f"waiting for approve_plan (version {self.s.plan_version})",
            now,
        )

    def planner_xml(self, window: list[WorkflowAgent] | None = None) -> str:
        """The current plan with statuses and (cut) results, as the planner should see it."""
        status_map = {
            "completed": "done",
            "skipped": "done",
            "failed": "error",
            "cancelled": "error",
            "dispatched": "running",
            "in_progress": "running",
        }
        agents = []
        for agent in self.s.plan.agents if window is None else window:
            task = self.tasks[agent.id]
            result = (
                task.result
                if task.result is not None
                else (task.result_ref.preview if task.result_ref else None)
            )
            if task.error:
                result = f"ERROR: {task.error}"
            if result is not None and len(result) > PLANNER_RESULT_CHARS:
                result = result[:PLANNER_RESULT_CHARS] + " …[cut]"
            agents.append(
                agent.model_copy(
                    update={"status": status_map.get(task.stored, "init"), "result": result}
                )
            )
        return workflow_to_xml(self.s.plan.model_copy(update={"agents": agents}))

    def apply_plan(self, wf: Workflow, reason: str, now: datetime) -> tuple[str, list[Command]]:
        """Make ``wf`` the plan: (what changed, the attempts to stop)."""
        change = merge_plan(self.s.plan, self.tasks, wf, self.run_id)
        commands: list[Command] = []
        for agent_id in change.stop:
            commands += self._stop(
                agent_id, "changed" if agent_id in change.restarted else "removed"
            )
        for request_id in change.withdrawn_requests:
            self._withdraw(request_id, "withdrawn: the plan changed", now)
        for task in change.removed:
            self.s.stall_levels.pop(task.id, None)
        # Removed tasks are kept for the record, without results (continue-as-new carries them).
        self.s.removed_tasks += [t.model_copy(update={"result": None}) for t in change.removed]
        self.s.plan = wf
        self.s.tasks = change.tasks
        self.s.plan_version += 1
        for task in change.tasks:  # a replan starts every ladder over
            self.s.stall_levels.pop(task.id, None)
        summary = change.summary()
        self.s.plan_history.append(
            PlanVersion(
                version=self.s.plan_version,
                xml=workflow_to_xml(wf),
                reason=f"{reason} — {summary}",
                at=now,
            )
        )
        self._index()
        self.changed = True
        return summary, commands

    def note_history(self, note: str, now: datetime) -> None:
        """A note about the current version (no XML copy: the version's own entry holds it)."""
        version = self.s.plan_history[-1].version if self.s.plan_history else self.s.plan_version
        self.s.plan_history.append(PlanVersion(version=version, xml="", reason=note, at=now))

    # -- lookups -------------------------------------------------------------------------------

    def task_by_id(self, task_id: str) -> TaskState | None:
        """A task by ``T-3`` or ``3``."""
        agent_id = task_id[2:] if task_id.startswith("T-") else task_id
        return self.tasks.get(agent_id)

    def _require_task(self, task_id: str) -> TaskState:
        task = self.task_by_id(task_id)
        if task is None:
            known = ", ".join(t.id for t in self.s.tasks[:20])
            raise Rejected(f"no task {task_id!r} in plan v{self.s.plan_version}; tasks: {known}")
        return task

    def _status(self, task: TaskState) -> str:
        return derive_statuses({t.id: t for t in self.s.tasks})[task.id][0]

    def _require_open(self) -> None:
        if self.ended or self.closing:
            raise Rejected("the run has finished; start a new run instead")

    # -- interventions: replan and review ---------------------------------------------------------

    def check_replan(self, req: ReplanRequest) -> None:
        self._require_open()
        if self.replanning:
            raise Rejected("a replan is already in progress; wait for it to finish")
        if (problem := req.problem()) is not None:
            raise Rejected(problem)
        if req.xml is not None:
            try:
                self.checked(parse_workflow(req.xml))
            except PlanError as e:
                raise Rejected(f"the new plan is not valid:\n{problems_text(e)}") from None

    def replan_result(self, summary: str) -> InterventionResult:
        review = " — review it and approve_plan" if self.s.review == "waiting" else ""
        return InterventionResult(
            message=f"plan v{self.s.plan_version}: {summary}{review}",
            plan_version=self.s.plan_version,
        )

    def check_approve_plan(self, req: ApprovePlanRequest) -> None:
        self._require_open()
        if self.needs_plan or not self.s.plan_history:
            raise Rejected(
                "the plan is still being made; look at it (`starter.py plan ID`, or the plan query) once it is there, then approve it"
            )
        if self.replanning:
            raise Rejected("a replan is in progress; approve the plan it produces")
        if self.s.review != "waiting":
            raise Rejected(
                "no plan is waiting for review"
                + (" (it was already approved)" if self.s.review == "approved" else "")
            )
        if req.version is not None and req.version != self.s.plan_version:
            raise Rejected(
                f"you reviewed v{req.version} but the plan is now v{self.s.plan_version}; look at it again (`starter.py plan ID`, or the plan query) and approve that"
            )

    def approve_plan(self, req: ApprovePlanRequest, now: datetime) -> InterventionResult:
        self.s.review = "approved"
        note = f"plan v{self.s.plan_version} approved" + (f": {req.comment}" if req.comment else "")
        self.note_history(note, now)
        self.changed = True
        return InterventionResult(message=note, plan_version=self.s.plan_version)

    # -- interventions: tasks ----------------------------------------------------------------------

    def check_retry(self, req: RetryTaskRequest) -> None:
        self._require_open()
        if self.replanning:
            raise Rejected("a replan is in progress; retry once it is done")
        task = self._require_task(req.task_id)
        escalated = (
            task.waiting_on is not None
            and (r := self.request(task.waiting_on)) is not None
            and r.kind == "escalation"
        )
        if task.stored not in ("failed", "cancelled") and not escalated:
            raise Rejected(
                f"{task.id} is {self._status(task)}; only failed, cancelled or escalated tasks can be retried"
            )
        if req.task is not None and not req.task.strip():
            raise Rejected("the new task text is empty")

    def retry(self, req: RetryTaskRequest, now: datetime) -> InterventionResult:
        task = self._require_task(req.task_id)
        if req.task:
            # Only this agent's text changes: a new plan version, nothing else reset.
            agent = self.agents[task.agent_id].model_copy(update={"task": req.task})
            self.s.plan = self.s.plan.model_copy(
                update={"agents": [agent if a.id == agent.id else a for a in self.s.plan.agents]}
            )
            self.s.plan_version += 1
            self.s.plan_history.append(
                PlanVersion(
                    version=self.s.plan_version,
                    xml=workflow_to_xml(self.s.plan),
                    reason=f"{task.id} retried with new task text",
                    at=now,
                )
            )
            task.description, task.subject = req.task, subject_of(req.task)
            self._index()
        self._withdraw(task.waiting_on, f"withdrawn: {task.id} retried", now)
        task.waiting_on = None
        task.error = None
        task.ended_at = None
        self._set_stored(task, "pending")
        self.s.stall_levels.pop(task.id, None)
        self.changed = True
        return InterventionResult(
            message=f"{task.id} will run again", plan_version=self.s.plan_version
        )

    def _end_by_person(
        self, task: TaskState, intent: str, done: str, now: datetime
    ) -> list[Command]:
        """Before a person's skip or cancel: stop the running attempt, withdraw its request."""
        commands = self._stop(task.agent_id, intent) if task.stored in RUNNING else []
        self._withdraw(task.waiting_on, f"withdrawn: {task.id} {done}", now)
        task.waiting_on = None
        return commands

    def check_skip(self, req: SkipTaskRequest) -> None:
        self._require_open()
        task = self._require_task(req.task_id)
        if task.stored in SATISFIED:
            raise Rejected(f"{task.id} is already {task.stored}")

    def skip(self, req: SkipTaskRequest, now: datetime) -> tuple[InterventionResult, list[Command]]:
        task = self._require_task(req.task_id)
        commands = self._end_by_person(task, "skip", "skipped", now)
        task.result = req.result
        task.result_ref = None
        self._finish(task, "skipped", now)
        return InterventionResult(
            message=f"{task.id} skipped; its dependents get {len(req.result)} characters",
            plan_version=self.s.plan_version,
        ), commands

    def check_cancel(self, req: TaskRequest) -> None:
        self._require_open()
        task = self._require_task(req.task_id)
        if task.terminal:
            raise Rejected(f"{task.id} is already {task.stored}")

    def cancel(self, req: TaskRequest, now: datetime) -> tuple[InterventionResult, list[Command]]:
        task = self._require_task(req.task_id)
        commands = self._end_by_person(task, "cancel", "cancelled", now)
        self._finish(task, "cancelled", now, error="cancelled by a person")
        blocked = dag.descendants(self.s.plan, task.agent_id)
        note = f"; blocked now: {', '.join('T-' + b for b in blocked[:10])}" if blocked else ""
        return InterventionResult(
            message=f"{task.id} cancelled{note}", plan_version=self.s.plan_version
        ), commands

    # -- interventions: answers and approvals -------------------------------------------------------

    def _require_pending(self, request_id: str) -> HumanRequest:
        self._require_open()
        request = self.request(request_id)
        if request is None and request_id.startswith("R-") and self.s.review == "waiting":
            raise Rejected(
                f"{request_id} is the plan review: approve it with approve_plan (version {self.s.plan_version}), or replan"
            )
        if request is None:
            pending = ", ".join(r.id for r in self._pending_requests) or "none"
            raise Rejected(f"no request {request_id!r}; pending requests: {pending}")
        if request.status != "pending":
            raise Rejected(f"{request.id} is already {request.status}")
        return request

    def _answered(self, request_id: str, now: datetime) -> tuple[HumanRequest, TaskState | None]:
        """Mark a request answered; return it and its task if that task still waits on it."""
        request = self.request(request_id)
        assert request is not None
        self._close_request(request, "answered", now)
        self.changed = True
        task = self.task_by_id(request.task_id)
        if task is None or task.waiting_on != request.id:
            return request, None
        self._set_waiting(task, None)
        return request, task

    def check_answer(self, req: AnswerRequest) -> None:
        request = self._require_pending(req.request_id)
        if request.kind == "approval":
            raise Rejected(
                f"{request.id} asks to approve a tool call; decide it with `starter.py approve ID {request.id}` "
                "(the approve_tool update)"
            )
        if not req.text.strip():
            raise Rejected("the answer is empty")

    def answer(self, req: AnswerRequest, now: datetime) -> InterventionResult:
        request, task = self._answered(req.request_id, now)
        request.answer = req.text
        if task is not None:
            if request.kind == "question":
                self.s.answers.setdefault(task.id, []).append(
                    Answer(request_id=request.id, question=request.text, answer=req.text)
                )
            else:  # escalation: the answer is guidance for the next attempt
                self._add_nudge(Nudge(task_id=task.id, message=req.text, at=now, source="person"))
                self.s.stall_levels.pop(task.id, None)
        return InterventionResult(
            message=f"{request.id} answered; {request.task_id} will continue",
            plan_version=self.s.plan_version,
        )

    def check_approve_tool(self, req: ApproveToolRequest) -> None:
        request = self._require_pending(req.request_id)
        if request.kind != "approval":
            raise Rejected(f"{request.id} is a {request.kind}, not a tool approval; use answer")

    def approve_tool(self, req: ApproveToolRequest, now: datetime) -> InterventionResult:
        request, task = self._answered(req.request_id, now)
        request.decision = req.decision
        request.answer = req.message
        self.s.audit.append(
            AuditEntry(
                at=now,
                task_id=request.task_id,
                tool=request.tool or "",
                arguments=request.text,
                effect="deny" if req.decision == "deny" else "allow",
                reason=f"{req.decision} by a person" + (f": {req.message}" if req.message else ""),
                by="person",
                request_id=request.id,
            )
        )
        if req.decision == "allow_run" and request.tool:
            kept = {a.rule for a in self.s.approved_rules}
            for rule in run_rules_for(request.tool, request.arguments or {}):
                if rule not in kept:
                    kept.add(rule)
                    self.s.approved_rules.append(ApprovedRule(rule=rule, request_id=request.id))
        if task is not None:
            self.s.approvals.setdefault(task.id, []).append(
                ToolApproval(
                    request_id=request.id,
                    tool=request.tool or "",
                    arguments=request.arguments or {},
                    decision=req.decision,
                    message=req.message,
                )
            )
        return InterventionResult(
            message=f"{request.id}: {req.decision}; {request.task_id} will continue",
            plan_version=self.s.plan_version,
        )

    # -- interventions: roles --------------------------------------------------------------------

    def check_define_role(self, req: DefineRoleRequest) -> None:
        self._require_open()
        problems = role_problems(req)
        if problems:
            raise Rejected("; ".join(problems))
        try:
            RoleCapabilityModel(**req.model_dump(by_alias=False))
        except ValueError as e:  # pydantic's ValidationError: say it here, not in the handler
            raise Rejected(f"role {req.name}: {' '.join(str(e).split())[:300]}") from None
        busy = [t.id for t in self.s.tasks if t.assigned_agent == req.name and t.stored in RUNNING]
        if busy:
            raise Rejected(
                f"role {req.name} is in use by running {', '.join(busy)}; wait for them to finish, or cancel them first"
            )

    def define_role(self, req: DefineRoleRequest) -> InterventionResult:
        role = RoleCapabilityModel(**req.model_dump(by_alias=False))
        existed = role.name in self.roles()
        self.s.defined_roles[role.name] = role
        self.changed = True
        verb = "redefined" if existed else "defined"
        return InterventionResult(
            message=f"role {role.name} {verb}; agents named {role.name} use it from their next dispatch"
        )

    # -- signals ---------------------------------------------------------------------------------

    def pause(self, req: PauseRequest) -> list[Command]:
        self.s.paused = True
        self.s.pause_reason = req.reason
        self.changed = True
        return self.stop_everything("pause") if req.cancel_running else []

    def resume(self) -> None:
        self.s.paused = False
        self.s.pause_reason = None
        self.changed = True

    def nudge(self, req: NudgeRequest, now: datetime) -> bool:
        task = self.task_by_id(req.task_id)
        if task is None or not req.message.strip():
            return False
        self._add_nudge(Nudge(task_id=task.id, message=req.message, at=now, source="person"))
        self.changed = True
        return True

    def _add_nudge(self, nudge: Nudge) -> None:
        self.s.nudges.append(nudge)
        self._nudges.setdefault(nudge.task_id, []).append(nudge.message)

    def nudges_for(self, task_id: str) -> list[str]:
        task = self.task_by_id(task_id)
        return list(self._nudges.get(task.id, [])) if task is not None else []

    # -- what people see ---------------------------------------------------------------------------

    def board(self, now: datetime, req: PageRequest | None = None) -> BoardPage:
        """A page of the board (derived statuses need the whole board: queries only)."""
        req = req or PageRequest()
        derived = derive_statuses({t.id: t for t in self.s.tasks})
        counts: dict[str, int] = {}
        for status, _ in derived.values():
            counts[status] = counts.get(status, 0) + 1
        chosen = [t for t in self.s.tasks if req.status is None or derived[t.id][0] == req.status]
        page = chosen[req.offset : req.offset + req.limit]
        return BoardPage(
            total=len(chosen),
            offset=req.offset,
            counts=dict(sorted(counts.items())),
            tasks=[TaskView.of(t, *derived[t.id], now) for t in page],
            state=self.run_state(),
            notes=self.notices(),
        )

    def results_page(self, req: PageRequest | None = None) -> ResultsPage:
        req = req or PageRequest()
        reports = [
            r
            for r in self.reports(INLINE_RESULT_BUDGET)
            if req.status is None or r.status == req.status
        ]
        return ResultsPage(
            total=len(reports),
            offset=req.offset,
            agents=reports[req.offset : req.offset + req.limit],
        )

    def plan_page(self, req: PageRequest | None = None) -> str:
        """The plan as XML with statuses and results; a large plan one page of agents at a time."""
        req = req or PageRequest(limit=PLAN_PAGE)
        total = len(self.s.plan.agents)
        if total <= req.limit and req.offset == 0:
            return self.planner_xml()
        window = self.s.plan.agents[req.offset : req.offset + req.limit]
        xml = self.planner_xml(window)
        last = req.offset + len(window)
        return (
            f"<!-- agents {req.offset + 1}–{last} of {total}"
            + (f'; the next page: query plan with {{"offset": {last}}}' if last < total else "")
            + " -->\n"
            + xml
        )

    def history_page(self, req: PageRequest | None = None) -> list[PlanVersion]:
        req = req or PageRequest()
        return list(self.s.plan_history[req.offset : req.offset + req.limit])

    def snapshot(self) -> str:
        """The state for the next run, as JSON: results by reference whenever stored."""
        tasks = [
            t.model_copy(update={"result": None}) if t.result_ref is not None else t
            for t in self.s.tasks
        ]
        return self.s.model_copy(update={"tasks": tasks}).model_dump_json(
            by_alias=True, exclude_defaults=True
        )

    def large(self) -> bool:
        return len(self.s.tasks) > INLINE_AGENTS

    def reports_jsonl(self) -> str:
        return "".join(
            r.model_dump_json(by_alias=True, exclude_none=True) + "\n" for r in self.reports(0)
        )

    def reports(self, budget: int = INLINE_RESULT_BUDGET) -> list[AgentReport]:
        derived = derive_statuses({t.id: t for t in self.s.tasks})
        reports = []
        for task in self.s.tasks:
            inline = task.result
            if inline is not None:
                size = len(inline.encode("utf-8"))
                if size > budget and task.result_ref is not None:
                    inline = None  # the run's result must stay well under the payload limit
                else:
                    budget -= size
            reports.append(
                AgentReport(
                    id=task.agent_id,
                    task_id=task.id,
                    name=task.assigned_agent,
                    status=derived[task.id][0],
                    result=inline,
                    result_ref=task.result_ref,
                    error=task.error or derived[task.id][1],
                    attempts=task.attempt,
                    started_at=task.started_at,
                    ended_at=task.ended_at,
                    artifacts=task.artifacts,
                )
            )
        return reports

    def run_state(self) -> str:
        """What the run is doing, in a word (the XskyStatus search attribute, ``status``)."""
        if self.closing or self.ended:
            return "finishing"
        if self.s.review == "waiting":
            return "reviewing"
        if self.s.paused:
            return "paused"
        if self._pending_requests:
            return "waiting"
        if self.replanning:
            return "replanning"
        return "running"

    def waiting_on_people(self) -> int:
        """Requests a person must answer, the plan review counted as one."""
        return len(self._pending_requests) + (1 if self.s.review == "waiting" else 0)

    def search_values(self) -> dict[str, str | int]:
        return {
            "XskyStatus": self.run_state(),
            "XskyPlan": self.s.plan.name or self.s.plan.task_id,
            "XskyFailed": self.counts.get("failed", 0),
            "XskyPending": self.waiting_on_people(),
        }

    def notices(self) -> list[str]:
        """The lines above the board: review, pause, questions, replanning, sandbox, mode."""
        notes = []
        if self.s.review == "waiting":
            notes.append(
                f"⏸ **waiting for plan review** — approve_plan (version {self.s.plan_version}) or replan"
            )
        if self.s.paused:
            notes.append(
                "⏸ **paused**"
                + (f": {self.s.pause_reason}" if self.s.pause_reason else "")
                + " — signal resume"
            )
        for r in self._pending_requests:
            notes.append(f"❓ **{r.id}** ({r.kind}, {r.task_id}): {' '.join(r.text.split())[:160]}")
        if self.replanning:
            notes.append("✎ replanning…")
        if any(a.tool == "sandbox-off" for a in self.s.audit[-50:]):
            notes.append(
                "⚠ **OS sandbox OFF** on a worker (security.sandbox: off): commands ran unconfined"
            )
        if self.input.permissions.mode != "default":
            warn = (
                " — only deny rules are enforced" if self.input.permissions.mode == "bypass" else ""
            )
            notes.append(f"🔒 permission mode **{self.input.permissions.mode}**{warn}")
        return notes

    def result(self, now: datetime) -> RunResult:
        """How the run ended. A large run's result holds only the agents that did not
        complete; the shell adds ``results_ref`` with every report."""
        reports = self.reports(INLINE_RESULT_BUDGET)
        counts: dict[str, list[str]] = {}
        for r in reports:
            counts.setdefault(r.status, []).append(r.task_id)
        total = len(reports)
        if self.large():
            reports = [
                r.model_copy(update={"result": None}) for r in reports if r.status not in SATISFIED
            ][:INLINE_AGENTS]
        done = len(counts.get("completed", [])) + len(counts.get("skipped", []))
        status: FinalStatus = (
            "completed" if done == total else ("cancelled" if self.ended else "failed")
        )
        parts = [f"{done} of {total} agents completed"]
        for name in ("failed", "blocked", "cancelled"):
            if counts.get(name):
                parts.append(f"{len(counts[name])} {name} ({', '.join(counts[name][:8])})")
        if self.ended:
            parts.insert(0, self.ended)
        return RunResult(
            workflow_id=self.run_id,
            name=self.s.plan.name,
            status=status,
            summary="; ".join(parts),
            agents=reports,
            counts={k: len(v) for k, v in sorted(counts.items())},
            agents_total=total,
            plan_version=self.s.plan_version,
            started_at=self.s.started_at,
            ended_at=now,
            permission_log=self.s.audit[-200:],
        )

    def continue_input(self) -> RunInput:
        """The next run's input: the same run, carrying the whole state."""
        self.s.continued += 1
        return RunInput(
            workflow=self.s.plan,
            variables=self.input.variables,
            context=self.input.context,
            options=self.options,
            roles=self.input.roles,
            permissions=self.input.permissions,
            task_prompt=self.input.task_prompt,
            state=self.s,
        )
