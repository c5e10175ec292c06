"""The plan book: the plan in force, every version of it with why it changed, the review that
holds a plan until a person approves it, and the automatic replans a run may still make.

How a new version meets the board (what keeps running, what starts again, what goes) is
:func:`xsky.leader.replan.merge_plan`; the router applies both (xsky/leader/core.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from xsky.leader.commands import PLANNER_RESULT_CHARS, Rejected
from xsky.leader.state import ApprovePlanRequest, PlanState, PlanVersion
from xsky.leader.tasks import TaskState
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.xml import workflow_to_xml
from xsky.runs import RunOptions

# How the planner is shown each task's state in the plan's XML.
_PLANNER_STATUS = {
    "completed": "done",
    "skipped": "done",
    "failed": "error",
    "cancelled": "error",
    "dispatched": "running",
    "in_progress": "running",
}


# Entries one forEach or watch keeps in the plan's history: its first version, one entry for
# the versions folded, and its newest. A watch writes a version per firing (up to 1,000), each
# with the whole plan's XML: unfolded, its history grew with the square of its firings.
GROWTH_LISTED = 20


class PlanBook:
    """The plan, its versions, its review and the automatic replans."""

    def __init__(self, state: PlanState, options: RunOptions) -> None:
        self.state = state
        self.options = options

    @property
    def plan(self) -> Workflow:
        return self.state.plan

    @property
    def version(self) -> int:
        return self.state.version

    # -- versions --------------------------------------------------------------------------------

    def first(self, wf: Workflow, provider: str, now: datetime) -> None:
        """Plan v1 of a run started from a sentence."""
        self.state.plan = wf
        self.state.history = [
            PlanVersion(
                version=1,
                xml=workflow_to_xml(wf),
                reason=f"planned by {provider} from the request",
                at=now,
            )
        ]

    def adopt(self, wf: Workflow, reason: str, now: datetime) -> None:
        """``wf`` is the plan from now on: a new version, kept with its XML and ``reason``."""
        self.state.plan = wf
        self.state.version += 1
        self.state.history.append(
            PlanVersion(version=self.state.version, xml=workflow_to_xml(wf), reason=reason, at=now)
        )

    def grow(self, wf: Workflow, reason: str, by: str, now: datetime, fold: bool = True) -> None:
        """A version the run wrote itself, by forEach or watch ``by``. Each is derived from the
        one before by what the plan says, so only ``by``'s newest version keeps its XML, and
        ``by`` keeps at most :data:`GROWTH_LISTED` entries: its first, one that counts the
        versions folded, and its newest. ``fold`` False: runs recorded before the patch
        plan-growth-folded, whose every version kept its XML and its entry."""
        if fold:
            for v in self.state.history:
                if v.grown_by == by:
                    v.xml, v.xml_ref = "", None
        self.adopt(wf, reason, now)
        if not fold:
            return
        self.state.history[-1].grown_by = by
        mine = [i for i, v in enumerate(self.state.history) if v.grown_by == by]
        if len(mine) <= GROWTH_LISTED:
            return
        into, oldest = self.state.history[mine[1]], self.state.history[mine[2]]
        if not into.folded:  # the first fold: the entry after the first becomes the fold
            into.folded, into.folded_from = 1, into.version
        into.folded += 1
        into.version, into.at = oldest.version, oldest.at
        into.reason = (
            f"{by}: v{into.folded_from}–v{into.version}, {into.folded} versions folded (each "
            "a step of it; its newest version holds what they added)"
        )
        del self.state.history[mine[2]]

    def retext(self, agent_id: str, text: str, reason: str, now: datetime) -> WorkflowAgent:
        """One agent's task text changes (retry with new text): a new version, nothing else."""
        agent = next(a for a in self.state.plan.agents if a.id == agent_id)
        agent = agent.model_copy(update={"task": text})
        self.adopt(
            self.state.plan.model_copy(
                update={"agents": [agent if a.id == agent_id else a for a in self.plan.agents]}
            ),
            reason,
            now,
        )
        return agent

    def note(self, note: str, now: datetime) -> None:
        """A note about the current version (no XML copy: the version's own entry holds it)."""
        version = self.state.history[-1].version if self.state.history else self.state.version
        self.state.history.append(PlanVersion(version=version, xml="", reason=note, at=now))

    def planner_xml(self, tasks: dict[str, TaskState], window: list[WorkflowAgent] | None) -> str:
        """The plan with statuses and (cut) results, as the planner should see it."""
        agents = []
        for agent in self.plan.agents if window is None else window:
            task = tasks[agent.id]
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
                    update={"status": _PLANNER_STATUS.get(task.stored, "init"), "result": result}
                )
            )
        return workflow_to_xml(self.plan.model_copy(update={"agents": agents}))

    # -- automatic replans -----------------------------------------------------------------------

    def may_replan(self, force: bool) -> bool:
        """Is an automatic replan within the run's allowance (``force``: a stall's, which the
        allowance of 0 does not forbid)? Counted when it is."""
        if self.state.auto_replans >= self.options.max_auto_replans:
            return False
        if not force and self.options.max_auto_replans == 0:
            return False
        self.state.auto_replans += 1
        return True

    def auto_label(self, reason: str) -> str:
        return (
            f"automatic replan {self.state.auto_replans}/{self.options.max_auto_replans}: {reason}"
        )

    # -- the review ------------------------------------------------------------------------------

    @property
    def reviewing(self) -> bool:
        return self.state.review == "waiting"

    def check_approve(self, req: ApprovePlanRequest, planning: bool, replanning: bool) -> None:
        if planning or not self.state.history:
            raise Rejected(
                "the plan is still being made; look at it (the plan query) once it is there, then approve it"
            )
        if replanning:
            raise Rejected("a replan is in progress; approve the plan it produces")
        if self.state.review != "waiting":
            raise Rejected(
                "no plan is waiting for review"
                + (" (it was already approved)" if self.state.review == "approved" else "")
            )
        if req.version is not None and req.version > self.state.version:
            raise Rejected(
                f"there is no plan v{req.version}: the plan waiting for review is v{self.state.version}; "
                "look at it (the plan query) and approve that version"
            )
        if req.version is not None and req.version != self.state.version:
            raise Rejected(
                f"you reviewed v{req.version} but the plan is now v{self.state.version}; look at it again (the plan query) and approve that"
            )

    def approve(self, req: ApprovePlanRequest, now: datetime) -> str:
        self.state.review = "approved"
        note = f"plan v{self.state.version} approved" + (f": {req.comment}" if req.comment else "")
        self.note(note, now)
        return note

    def require_review(self, risky: list[str], now: datetime, timed: bool = True) -> None:
        """Nobody asked for these: a model did. Shell, Python or network in new hands waits for a
        person — for ``review_timeout`` seconds, then ``review_timeout_action`` applies, as to a
        first plan's review (``timed`` False: runs recorded before the patch
        ``replan-review-deadline``, whose review waited for ever)."""
        self.state.review = "waiting"
        self.state.review_deadline = (
            now + timedelta(seconds=self.options.review_timeout) if timed else None
        )
        self.note(
            f"the automatic replan gives agents {', '.join(risky)} shell, Python or network tools: "
            f"waiting for approve_plan (version {self.state.version})",
            now,
        )

    def review_timed_out(self, now: datetime) -> bool:
        """Nobody reviewed the plan in time: approved (True, the run goes on) or not."""
        if self.options.review_timeout_action == "approve":
            self.state.review = (
                "approved_by_timeout"  # the plan runs; nobody vouched for its new roles
            )
            self.note(
                f"approved automatically: nobody reviewed the plan within {self.options.review_timeout:g}s",
                now,
            )
            return True
        self.state.review = "none"
        return False

    def review_due(self) -> datetime | None:
        return self.state.review_deadline if self.state.review == "waiting" else None

    def withdraw_review(self, why: str, now: datetime) -> None:
        """The run ends: nobody need review its plan any more."""
        if self.state.review == "waiting":
            self.state.review = "none"
            self.state.review_deadline = None
            self.note(f"the review of plan v{self.state.version} was withdrawn: {why}", now)
