"""A run's event stream: what changed between two pictures of a run, as events a live view
(the `ui` page, `starter.py events`, any other client) applies in order.

A picture is what the run's queries say at one moment (the board, the requests waiting for a
person, the plan's versions, the leader's decisions, Temporal's status). The watcher
(client/events.py) takes one each time the run's history moves; this module only compares
two of them, so the stream is the same whoever watches and is tested without a server.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from xsky.leader.ledger import LedgerEntry
from xsky.leader.state import BoardPage, HumanRequest, PlanVersion
from xsky.leader.tasks import TaskView, note_of, status_shown, subject_of, summary_after

# What an agent's new status is called in the stream ("agent.<verb>").
STATUS_EVENTS: dict[str, str] = {
    "pending": "agent.reset",
    "dispatched": "agent.dispatched",
    "in_progress": "agent.started",
    "completed": "agent.completed",
    "failed": "agent.failed",
    "blocked": "agent.blocked",
    "cancelled": "agent.cancelled",
    "skipped": "agent.skipped",
}

# Every event type the stream has, for the documentation and for clients that check them.
EVENT_TYPES: tuple[str, ...] = (
    "plan",
    *dict.fromkeys(STATUS_EVENTS.values()),
    "agent.unblocked",
    "agent.step",
    "request.raised",
    "request.answered",
    "budget",
    "coordinator.decision",
    "run.state",
    "run.ended",
    "watch.lost",
    "watch.back",
)


class AgentBrief(BaseModel):
    """One agent as the stream shows it: enough to draw it in the graph and say how it is."""

    task: str  # T-<id>
    agent: str  # its agent id
    kind: str  # its role or tool kind
    subject: str
    depends: list[str] = Field(default_factory=list)  # task ids
    status: str = "pending"
    shown: str = "pending"  # the status as people read it ("completed (offline)")
    note: str = ""
    attempt: int = 0
    iterations: int = 0
    tokens: int = 0
    progress: str | None = None

    @classmethod
    def of(cls, t: TaskView) -> AgentBrief:
        return cls(
            task=t.id,
            agent=t.agent_id,
            kind=t.assigned_agent,
            subject=subject_of(t.description, 80),
            depends=list(t.blocked_by),
            status=t.status,
            shown=status_shown(t.status, t.provider),
            note=note_of(t, t.status, t.blocked_reason),
            attempt=t.attempt,
            iterations=t.iterations,
            tokens=t.tokens,
            progress=t.last_progress,
        )


class RunPicture(BaseModel):
    """What a run looked like at one moment (the watcher's unit of comparison; kept with the
    event log so that a restarted server compares against what it last told)."""

    run: str
    status: str = "running"  # Temporal's: running, completed, failed, cancelled, terminated …
    state: str = "running"  # the leader's word: running, paused, waiting, reviewing …
    plan_version: int = 1
    plan_reason: str = ""
    agents: list[AgentBrief] = Field(default_factory=list)
    requests: list[HumanRequest] = Field(default_factory=list)
    budget: str | None = None
    decisions: int = 0  # judgments in the leader's progress ledger so far
    summary: str | None = None  # how it ended, once it has

    @classmethod
    def of(
        cls,
        run: str,
        status: str,
        board: BoardPage,
        requests: list[HumanRequest],
        history: list[PlanVersion],
        decisions: int,
        summary: str | None = None,
    ) -> RunPicture:
        last = history[-1] if history else None
        return cls(
            run=run,
            status=status,
            state=board.state if status == "running" else status,
            plan_version=last.version if last else 1,
            plan_reason=last.reason if last else "",
            agents=[AgentBrief.of(t) for t in board.tasks],
            requests=list(requests),
            budget=board.budget.summary() if board.budget is not None else None,
            decisions=decisions,
            summary=summary,
        )


def plan_event(p: RunPicture) -> tuple[str, dict[str, Any]]:
    """The whole graph: the first event of a stream, and again when the plan changes."""
    return "plan", {
        "version": p.plan_version,
        "reason": p.plan_reason,
        "state": p.state,
        "status": p.status,
        "agents": [a.model_dump() for a in p.agents],
    }


def diff_pictures(
    before: RunPicture | None, after: RunPicture, decisions: Sequence[LedgerEntry] = ()
) -> list[tuple[str, dict[str, Any]]]:
    """The events (type, data) that take a view from ``before`` to ``after``, in the order a
    view should apply them. ``decisions`` are the ledger's entries from ``before.decisions``
    on (the picture keeps only their count: the ledger is the leader's, not the stream's)."""
    out: list[tuple[str, dict[str, Any]]] = []
    old_agents = {a.task: a for a in before.agents} if before else {}
    graph_changed = (
        before is None
        or before.plan_version != after.plan_version
        or [(a.task, a.depends) for a in before.agents]
        != [(a.task, a.depends) for a in after.agents]
    )
    if graph_changed:
        out.append(plan_event(after))
    if before is not None and before.state != after.state and after.status == "running":
        out.append(("run.state", {"state": after.state, "was": before.state}))
    for a in after.agents:
        old = old_agents.get(a.task)
        if old is None:  # a new agent: the plan event above shows it
            continue
        if old.status != a.status or (a.status != "completed" and old.attempt != a.attempt):
            # a task no longer blocked waits for its turn: not a reset of it
            unblocked = old.status == "blocked" and a.status == "pending"
            out.append(
                ("agent.unblocked" if unblocked else STATUS_EVENTS[a.status], a.model_dump())
            )
        elif (old.iterations, old.progress, old.tokens) != (a.iterations, a.progress, a.tokens):
            out.append(
                (
                    "agent.step",
                    {
                        "task": a.task,
                        "iterations": a.iterations,
                        "progress": a.progress,
                        "tokens": a.tokens,
                    },
                )
            )
    old_requests = {r.id for r in before.requests} if before else set()
    new_requests = {r.id for r in after.requests}
    for r in after.requests:
        if r.id not in old_requests:
            out.append(("request.raised", r.model_dump(mode="json", by_alias=True)))
    for r in before.requests if before else []:
        if r.id not in new_requests:
            out.append(("request.answered", {"id": r.id, "kind": r.kind, "task": r.task_id}))
    if (before.budget if before else None) != after.budget and after.budget is not None:
        out.append(("budget", {"summary": after.budget}))
    for entry in decisions:
        out.append(("coordinator.decision", entry.model_dump(mode="json", by_alias=True)))
    if after.status != "running" and (before is None or before.status == "running"):
        said = summary_after(after.status, after.summary) if after.summary else after.summary
        out.append(("run.ended", {"status": after.status, "summary": said}))
    return out


class RunEvent(BaseModel):
    """One event of a run's stream, as SSE's data and as `starter.py events`' JSON lines.

    ``id`` counts up from 1 in the stream that told it (an SSE client resumes after the last id
    it saw); ``at`` is when the watcher saw the change, not when the run made it."""

    id: int
    run: str
    at: datetime
    type: str
    data: dict[str, Any] = Field(default_factory=dict)

    def line(self) -> str:
        return self.model_dump_json()
