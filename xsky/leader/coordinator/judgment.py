"""The coordinator's judgment, what its parts share: its mode, its ledger's lines, what it is
shown of the run, and each consultation's hold on the run's budget.

The coordinator (a model, run as the ``coordinate`` activity — never a model call in workflow
code) is consulted at four points: a model agent's completed result (results.py), a worker's
question or tool request (requests.py), a stall past the nudge and the run's end
(oversight.py). Its answers are recorded in history; its parts apply them deterministically.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from xsky.leader.board import JUDGING, TaskBoard
from xsky.leader.budget import Budget
from xsky.leader.commands import SATISFIED
from xsky.leader.coordinator.prompts import ANSWER_TOKENS, READINGS, consult_tokens
from xsky.leader.ledger import (
    DETAIL_CHARS,
    REASON_CHARS,
    ConsultInput,
    ConsultOutcome,
    Evidence,
    Ledger,
    LedgerEntry,
    Point,
    Verdict,
    cut,
)
from xsky.leader.plans import PlanBook
from xsky.leader.requests import RequestBook
from xsky.leader.state import HumanRequest
from xsky.leader.tasks import TaskState
from xsky.outcomes import OFFLINE_PROVIDER
from xsky.runs import RunOptions

# How much of results the coordinator is shown (its input is recorded in history).
RESULT_CHARS = 6000
DEPENDENCY_CHARS = 1500
DEPENDENCIES_SHOWN = 8
GOAL_RESULT_CHARS = 800
GOAL_INPUT_CHARS = 40_000
FACTS_SHOWN = 20
EMPTY = "the answer is empty"
NOT_CHECKED = "not checked (budget)"


def consult_key(inp: ConsultInput) -> str:
    """Names a consultation's hold on the budget (one at a time per point and task)."""
    return f"{inp.point}:{inp.task.task_id if inp.task is not None else 'run'}"


class Judgment:
    """The coordinator's mode, ledger lines and inputs."""

    def __init__(
        self,
        ledger: Ledger,
        board: TaskBoard,
        plans: PlanBook,
        requests: RequestBook,
        budget: Budget,
        options: RunOptions,
        run_id: str,
    ) -> None:
        self.ledger = ledger
        self.board = board
        self.plans = plans
        self.requests = requests
        self.budget = budget
        self.options = options
        self.run_id = run_id
        # Set by the shell (patch leader-coordinator): the coordinator is consulted and the
        # mechanical rules apply. The rules the person delegated to the leader, and the deny
        # rules it never overrides (the worker's and the run's settings).
        self.on = False
        self.delegated: list[str] = []
        self.denied: list[str] = []
        self.worker_model: str | None = None  # the leader worker's coordinator model, if any
        # (patch delegation-program-forms) delegated rules approve no call running a program
        self.programs = True

    # -- the mode ---------------------------------------------------------------------------------

    def mode(self) -> str:
        """act | advise | off | auto (not yet known whether the workers have a model)."""
        if not self.on:
            return "off"
        return self.ledger.mode if self.ledger.mode != "auto" else self.options.coordinator

    def asks_model(self, provider: str | None = None) -> bool:
        """Is the coordinator to be asked? In ``auto`` mode only once a model is known to be
        there — the leader's worker has one, the coordinator answered before, or ``provider``
        (who answered the outcome at hand) is a model: a run of tools alone, on workers
        without one, never waits on a coordinator nobody serves."""
        if not self.on or self.mode() not in ("auto", "act", "advise"):
            return False
        # (With leader_budget, a consultation holds its own share instead: see hold.)
        if not self.budget.leader_budget and self.budget.no_room_to_judge() is not None:
            return False
        if self.mode() != "auto":
            return True
        known = self.ledger.model or self.worker_model
        return known is not None or provider not in (None, OFFLINE_PROVIDER)

    def acts(self) -> bool:
        return self.mode() in ("act", "auto")

    def heard(self, outcome: ConsultOutcome) -> bool:
        """Learn from a consultation whether there is a model; False: there is none (or its
        share ran out before it answered)."""
        ledger = self.ledger
        ledger.consultations += 1
        ledger.tokens += outcome.usage.tokens
        self.budget.settle("leader", outcome.usage)  # the coordinator's calls are spend
        if outcome.verdict == "unchecked":  # its share ran out before it could answer
            return False
        if outcome.verdict == "unavailable":
            if ledger.mode in ("auto", "act", "advise"):
                asked = self.options.coordinator
                ledger.mode = "off"
                ledger.note = (
                    "no model configured on the workers"
                    if asked == "auto"
                    else f"{asked} was asked for, but no model is configured on the workers"
                )
            return False
        ledger.model = outcome.model or ledger.model
        if ledger.mode == "auto":
            ledger.mode = "act" if self.options.coordinator == "auto" else self.options.coordinator
        return True

    def mode_label(self) -> str:
        mode = self.mode()
        if not self.on:
            return "off (this run started before the leader had a coordinator)"
        if mode == "off":
            why = self.ledger.note or "chosen for this run"
            return (
                f"off ({why}): mechanical rules only — empty or unfinished answers are sent "
                "back, delegated approvals are given, the goal is not checked"
            )
        if mode == "auto":
            if self.worker_model is None:  # (the docs' "off when the workers have no model")
                return "auto: off until a model answers (the leader's worker has none)"
            return "auto (act once a model agent of the run has answered; none has yet)"
        return f"{mode} (model {self.ledger.model or 'of the workers'})"

    # -- the ledger --------------------------------------------------------------------------------

    def entry(
        self,
        point: Point,
        task: TaskState | None,
        verdict: Verdict,
        reason: str,
        now: datetime,
        *,
        detail: str | None = None,
        by: str | None = None,
        applied: bool = True,
    ) -> None:
        """A line of the progress ledger. ``by`` None: the coordinator's model decided —
        applied in act mode, a suggestion in advise mode."""
        if by is None:
            by, applied = (
                ("leader (advice)", False) if self.mode() == "advise" else ("leader", applied)
            )
        self.ledger.add_entry(
            LedgerEntry(
                at=now,
                point=point,
                task_id=task.id if task else None,
                verdict=verdict,
                reason=cut(reason, REASON_CHARS) or "",
                detail=cut(detail, DETAIL_CHARS),
                by=by,  # type: ignore[arg-type]
                applied=applied,
                plan_version=self.plans.version,
            )
        )

    def learn(self, outcome: ConsultOutcome, source: str, now: datetime) -> None:
        self.ledger.add_facts(outcome.facts, source, now)

    def goal_unchecked(self, why: str, now: datetime) -> None:
        ledger = self.ledger
        ledger.goal_verdict, ledger.goal_reason = None, f"not checked: {why}"
        self.entry(
            "goal", None, "unsure", ledger.goal_reason, now, by="leader (mechanical)", applied=False
        )

    # -- what the coordinator is shown --------------------------------------------------------------

    def goal(self) -> str:
        plan = self.plans.plan
        return plan.task_prompt or plan.name or "(no goal stated)"

    def evidence(self, task: TaskState, chars: int) -> Evidence:
        result = task.result
        ref = None
        if result is None and task.result_ref is not None:
            ref = task.result_ref
        return Evidence(
            task_id=task.id,
            name=task.assigned_agent,
            task=cut(self.board.agents[task.agent_id].task, chars) or "",
            status=task.stored,
            result=cut(result, chars),
            result_ref=ref,
            error=cut(task.error, 500),
        )

    def consult_input(self, point: Point, about: TaskState | None, **fields: Any) -> ConsultInput:
        """What the coordinator is shown about ``about`` (its dependencies' results, earlier
        verdicts on it) and the run (goal, facts), with ``fields`` for the point."""
        dependencies = []
        earlier = []
        if about is not None:
            tasks = self.board.tasks
            for dep in self.board.agents[about.agent_id].depends[:DEPENDENCIES_SHOWN]:
                if dep in tasks and tasks[dep].stored in SATISFIED:
                    dependencies.append(self.evidence(tasks[dep], DEPENDENCY_CHARS))
            earlier = [
                f"{e.point}: {e.verdict} — {e.reason}"
                for e in self.ledger.entries[-50:]
                if e.task_id == about.id
            ][-3:]
        return ConsultInput(
            run_id=self.run_id,
            point=point,
            goal=cut(self.goal(), DETAIL_CHARS) or "",
            plan_version=self.plans.version,
            dependencies=dependencies,
            facts=self.ledger.facts[-FACTS_SHOWN:],
            earlier=earlier,
            **fields,
        )

    def judging(self, agent_id: str, point: Point, now: datetime) -> bool:
        """The coordinator is being asked about this attempt's outcome (its clock restarts:
        the stall ladder does not count the leader's own time against the task)."""
        task = self.board.tasks.get(agent_id)
        if task is None:
            return False
        task.last_progress_at = now
        task.last_progress = JUDGING.get(point, JUDGING[""])
        return True

    def run_request(self, about: str, text: str, now: datetime) -> HumanRequest:
        """An escalation about the whole run (``task_id`` "run")."""
        request = self.requests.new("escalation", None, text, now)
        request.about = about
        return request

    # -- a consultation's hold on the budget -------------------------------------------------------

    def hold(self, inp: ConsultInput, now: datetime) -> ConsultInput | None:
        """``inp`` with the share of the budget its consultation holds, or None when the budget
        has no room for it (the skip is recorded: the ledger, and the task's row says "not
        checked (budget)")."""
        hold = self.budget.hold_leader_call(
            consult_key(inp), consult_tokens(inp), ANSWER_TOKENS, READINGS, now
        )
        if hold.no_room is not None:
            self.unchecked(inp, hold.no_room, now)
            return None
        return inp.model_copy(update={"budget_share": hold.share}) if hold.share else inp

    def unchecked(self, inp: ConsultInput, why: str, now: datetime) -> None:
        """A consultation the budget had no room for: said where people look."""
        task = self.board.task_by_id(inp.task.task_id) if inp.task is not None else None
        reason = f"{NOT_CHECKED}: {why}"
        if inp.point == "goal":
            self.goal_unchecked(f"budget: {why}", now)
            return
        if task is not None and inp.point == "result":
            task.check = NOT_CHECKED
        verdict: Verdict = "leave" if inp.point in ("question", "approval") else "unsure"
        self.entry(inp.point, task, verdict, reason, now, by="leader (mechanical)", applied=False)
