"""The leader's ledgers (Magentic-One's task and progress ledgers, kept durably): what the
coordinator is asked, what it answers, and what the leader did with the answer.

The coordinator is a model run as an activity (``activities/coordinator.py``): its answers
are recorded in history like any activity result and *applied* by the deterministic core
(:mod:`xsky.leader.coordinator`), which holds them to the person's bounds — an approval
beyond the delegated rules is never granted, whatever the model says. Every model here is
plain JSON (the ``ledger`` query, the stock ``temporal`` CLI).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from xsky.artifacts import ArtifactRef
from xsky.plan.budget import BudgetShare, Usage
from xsky.plan.models import WireModel

# How the leader judges: "act" applies the coordinator's decisions, "advise" records them as
# suggestions for a person, "off" applies only mechanical rules. "auto": act when the workers
# have a model, off when they have none (found out at the first consultation).
CoordinatorMode = Literal["auto", "act", "advise", "off"]
# Where the coordinator is consulted.
Point = Literal["result", "goal", "stall", "question", "approval"]
# What it may answer, by point: result accept|retry|unsure; goal met|not_met|unsure; stall
# instruct|replan|escalate; question answer|leave; approval deny|allow|leave. "unavailable":
# no model on the workers (the leader falls back to its mechanical rules); "unchecked": the
# consultation's share of the run's budget ran out before the model answered.
Verdict = Literal[
    "accept",
    "retry",
    "unsure",
    "met",
    "not_met",
    "instruct",
    "replan",
    "escalate",
    "answer",
    "leave",
    "allow",
    "deny",
    "unavailable",
    "unchecked",
]

# Bounds on what a model's answer may put into the run's state (it is carried by every
# continue-as-new and shown in queries).
FACTS_KEEP = 50
FACT_CHARS = 300
REASON_CHARS = 600
DETAIL_CHARS = 4000
ENTRIES_KEEP = 500


def cut(text: str | None, limit: int) -> str | None:
    """``text`` at most ``limit`` characters (a cut one ends with an ellipsis)."""
    if text is None:
        return None
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Fact(WireModel):
    """Something the run has learned, and from where (``T-3``, ``Q-1``, ``leader``)."""

    text: str
    source: str
    at: datetime


class LedgerEntry(WireModel):
    """One judgment: where, on what, the verdict, why — and whether the leader applied it.

    ``by``: ``leader`` (the coordinator's model decided and it was applied), ``leader
    (advice)`` (recorded for a person, not applied), ``leader (mechanical)`` (a fixed rule,
    no model), ``person`` (a person overrode the leader)."""

    at: datetime
    point: Point
    task_id: str | None = None
    verdict: Verdict
    reason: str = ""
    detail: str | None = None  # the instruction, answer, gap or root cause
    by: Literal["leader", "leader (advice)", "leader (mechanical)", "person"] = "leader"
    applied: bool = True
    plan_version: int = 1


class Ledger(WireModel):
    """The task ledger (goal, facts; the plan's intent per task is the plan itself) and the
    progress ledger (every judgment, newest last), carried in the leader's state."""

    mode: CoordinatorMode = "auto"
    model: str | None = None  # the coordinator's model, once a consultation named it
    note: str = ""  # why the mode is what it is ("no model configured on the workers")
    facts: list[Fact] = Field(default_factory=list)
    entries: list[LedgerEntry] = Field(default_factory=list)
    entries_dropped: int = 0
    goal_verdict: Verdict | None = None  # of the plan version checked last
    goal_reason: str | None = None
    goal_checked_version: int = 0  # the plan version whose goal was checked (0: none)
    consultations: int = 0
    tokens: int = 0  # the coordinator's own model use

    def add_entry(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)
        if len(self.entries) > ENTRIES_KEEP:
            self.entries_dropped += len(self.entries) - ENTRIES_KEEP
            del self.entries[: len(self.entries) - ENTRIES_KEEP]

    def add_facts(self, texts: list[str], source: str, at: datetime) -> None:
        known = {f.text for f in self.facts}
        for text in texts[:10]:
            short = cut(text, FACT_CHARS)
            if short and short not in known:
                known.add(short)
                self.facts.append(Fact(text=short, source=source, at=at))
        del self.facts[: max(0, len(self.facts) - FACTS_KEEP)]


# -- the coordinator activity's input and output ---------------------------------------------------


class Evidence(WireModel):
    """A task as the coordinator sees it: what it was asked, and what it produced (cut)."""

    task_id: str
    name: str  # agent kind or role
    task: str
    status: str = ""
    result: str | None = None
    result_ref: ArtifactRef | None = None  # the activity reads a stored result's beginning
    error: str | None = None


class ConsultInput(WireModel):
    """The one input of the ``coordinate`` activity."""

    run_id: str
    point: Point
    goal: str
    plan_version: int = 1
    task: Evidence | None = None  # the task judged, asking or stuck
    dependencies: list[Evidence] = Field(default_factory=list)  # results the task was given
    tasks: list[Evidence] = Field(default_factory=list)  # the whole plan (goal check)
    omitted: int = 0  # tasks left out of ``tasks`` to keep the input small
    facts: list[Fact] = Field(default_factory=list)
    question: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    delegated: bool = False  # the call falls within the rules the person delegated
    stalled: str | None = None  # how long and since what the task made no progress
    earlier: list[str] = Field(default_factory=list)  # earlier verdicts on this task, for context
    model: str | None = None  # the run's coordinator model, if the run set one
    # What the consultation may spend (a run with a budget): checked before every request.
    budget_share: BudgetShare | None = None


class ConsultOutcome(WireModel):
    """What the coordinator answered (``unavailable``: no model on the worker)."""

    point: Point
    verdict: Verdict
    reason: str = ""
    instruction: str | None = None  # result: what to do better; stall: what to do now
    answer: str | None = None  # question
    gap: str | None = None  # goal: what is missing
    root_cause: str | None = None  # stall
    facts: list[str] = Field(default_factory=list)
    model: str | None = None
    # what its model calls used, priced by the worker's settings (counted against a budget)
    usage: Usage = Field(default_factory=Usage)

    def detail(self) -> str | None:
        return cut(
            self.instruction or self.answer or self.gap or self.root_cause,
            DETAIL_CHARS,
        )


# -- the ledger query -----------------------------------------------------------------------------


class TaskIntent(WireModel):
    task_id: str
    intent: str
    status: str


class LedgerView(WireModel):
    """The ``ledger`` query: the task ledger and a page of the progress ledger."""

    mode: str  # as shown: "act (model gpt-4o)", "off (no model configured): mechanical rules only"
    goal: str
    goal_check: str | None = None  # "met: …", "not met: …", "not checked: …"
    facts: list[Fact] = Field(default_factory=list)
    intents: list[TaskIntent] = Field(default_factory=list)
    intents_total: int = 0
    entries: list[LedgerEntry] = Field(default_factory=list)
    entries_total: int = 0
    entries_dropped: int = 0
    offset: int = 0
