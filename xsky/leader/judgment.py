"""The leader's judgment, its base: the coordinator's mode, the progress ledger's lines, and
what the coordinator is shown of the run. (:mod:`xsky.leader.coordination` applies its
verdicts on results and requests, :mod:`xsky.leader.oversight` on stalls and the goal.)"""

from __future__ import annotations

from datetime import datetime

from xsky.leader.commands import (
    SATISFIED,
    CallPlanner,
)
from xsky.leader.ledger import (
    DETAIL_CHARS,
    REASON_CHARS,
    ConsultInput,
    ConsultOutcome,
    Evidence,
    LedgerEntry,
    Point,
    Verdict,
    cut,
)
from xsky.leader.refusals import Refusals
from xsky.leader.state import (
    HumanRequest,
)
from xsky.leader.tasks import TaskState
from xsky.outcomes import OFFLINE_PROVIDER
from xsky.plan.coordinator_prompts import ANSWER_TOKENS, READINGS, consult_tokens

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


class Judgment(Refusals):
    """The coordinator's mode, ledger lines and inputs."""

    # -- the mode ---------------------------------------------------------------------------------

    def mode(self) -> str:
        """act | advise | off | auto (not yet known whether the workers have a model)."""
        if not self.coordinating:
            return "off"
        ledger = self.state.ledger
        return ledger.mode if ledger.mode != "auto" else self.options.coordinator

    def _asks_model(self, provider: str | None = None) -> bool:
        """Is the coordinator to be asked? In ``auto`` mode only once a model is known to be
        there — the leader's worker has one, the coordinator answered before, or ``provider``
        (who answered the outcome at hand) is a model: a run of tools alone, on workers
        without one, never waits on a coordinator nobody serves."""
        if not self.coordinating or self.mode() not in ("auto", "act", "advise"):
            return False
        # (With leader_budget, a consultation holds its own share instead: see _hold_consult.)
        if not self.leader_budget and self.no_room_to_judge() is not None:
            return False
        if self.mode() != "auto":
            return True
        known = self.state.ledger.model or self.worker_model
        return known is not None or provider not in (None, OFFLINE_PROVIDER)

    def no_room_to_judge(self) -> str | None:
        """Why the run's budget leaves no room for a consultation (None: it does, or the run
        has no budget): the coordinator's calls are spend like any agent's, so once what is
        left (less what running agents hold) is under one reservation, the leader judges by
        its mechanical rules alone."""
        budget = self.state.budget
        if budget is None:
            return None
        used, (held_tokens, held_usd) = self._used(), self._held()
        limits = budget.run
        if limits.tokens is not None:
            left = limits.tokens - used.tokens - held_tokens
            if left < budget.reserve_tokens():
                return f"the budget has {max(0, left):,} tokens left, less than one reservation"
        if limits.usd is not None and self.state.spend.price:
            left_usd = limits.usd - used.usd - held_usd
            if left_usd < budget.reserve_tokens() * self.state.spend.price:
                return f"the budget has ${max(0.0, left_usd):,.4f} left, less than one reservation"
        return None

    def _hold_consult(self, inp: ConsultInput, now: datetime) -> ConsultInput | None:
        """``inp`` with the share of the budget its consultation holds, or None when the budget
        has no room for it (the skip is recorded: the ledger, and the task's row says "not
        checked (budget)")."""
        hold = self.hold_leader_call(
            consult_key(inp), consult_tokens(inp), ANSWER_TOKENS, READINGS, now
        )
        if hold.no_room is not None:
            self._unchecked(inp, hold.no_room, now)
            return None
        return inp.model_copy(update={"budget_share": hold.share}) if hold.share else inp

    def _unchecked(self, inp: ConsultInput, why: str, now: datetime) -> None:
        """A consultation the budget had no room for: said where people look."""
        task = self.task_by_id(inp.task.task_id) if inp.task is not None else None
        reason = f"{NOT_CHECKED}: {why}"
        if inp.point == "goal":
            self._goal_unchecked(f"budget: {why}", now)
            return
        if task is not None and inp.point == "result":
            task.check = NOT_CHECKED
        verdict: Verdict = "leave" if inp.point in ("question", "approval") else "unsure"
        self._entry(inp.point, task, verdict, reason, now, by="leader (mechanical)", applied=False)
        self.changed = True

    def _goal_unchecked(self, why: str, now: datetime) -> None:
        ledger = self.state.ledger
        ledger.goal_verdict, ledger.goal_reason = None, f"not checked: {why}"
        self._entry(
            "goal", None, "unsure", ledger.goal_reason, now, by="leader (mechanical)", applied=False
        )

    def _acts(self) -> bool:
        return self.mode() in ("act", "auto")

    def _heard(self, outcome: ConsultOutcome) -> bool:
        """Learn from a consultation whether there is a model; False: there is none."""
        ledger = self.state.ledger
        ledger.consultations += 1
        ledger.tokens += outcome.usage.tokens
        self.settle("leader", outcome.usage)  # the coordinator's calls count against a budget
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
        ledger = self.state.ledger
        mode = self.mode()
        if not self.coordinating:
            return "off (this run started before the leader had a coordinator)"
        if mode == "off":
            why = ledger.note or "chosen for this run"
            return (
                f"off ({why}): mechanical rules only — empty or unfinished answers are sent "
                "back, delegated approvals are given, the goal is not checked"
            )
        if mode == "auto":
            return "auto (act once a model agent of the run has answered; none has yet)"
        return f"{mode} (model {ledger.model or 'of the workers'})"

    def _entry(
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
        self.state.ledger.add_entry(
            LedgerEntry(
                at=now,
                point=point,
                task_id=task.id if task else None,
                verdict=verdict,
                reason=cut(reason, REASON_CHARS) or "",
                detail=cut(detail, DETAIL_CHARS),
                by=by,  # type: ignore[arg-type]
                applied=applied,
                plan_version=self.state.plan_version,
            )
        )

    def _learn(self, outcome: ConsultOutcome, source: str, now: datetime) -> None:
        self.state.ledger.add_facts(outcome.facts, source, now)

    # -- what the coordinator is shown --------------------------------------------------------------

    def goal(self) -> str:
        plan = self.state.plan
        return plan.task_prompt or plan.name or "(no goal stated)"

    def _evidence(self, task: TaskState, chars: int) -> Evidence:
        result = task.result
        ref = None
        if result is None and task.result_ref is not None:
            ref = task.result_ref
        return Evidence(
            task_id=task.id,
            name=task.assigned_agent,
            task=cut(self.agents[task.agent_id].task, chars) or "",
            status=task.stored,
            result=cut(result, chars),
            result_ref=ref,
            error=cut(task.error, 500),
        )

    def _consult_input(
        self, point: Point, about: TaskState | None, **fields: object
    ) -> ConsultInput:
        """What the coordinator is shown about ``about`` (its dependencies' results, earlier
        verdicts on it) and the run (goal, facts), with ``fields`` for the point."""
        dependencies = []
        earlier = []
        if about is not None:
            for dep in self.agents[about.agent_id].depends[:DEPENDENCIES_SHOWN]:
                if dep in self.tasks and self.tasks[dep].stored in SATISFIED:
                    dependencies.append(self._evidence(self.tasks[dep], DEPENDENCY_CHARS))
            earlier = [
                f"{e.point}: {e.verdict} — {e.reason}"
                for e in self.state.ledger.entries[-50:]
                if e.task_id == about.id
            ][-3:]
        return ConsultInput(
            run_id=self.run_id,
            point=point,
            goal=cut(self.goal(), DETAIL_CHARS) or "",
            plan_version=self.state.plan_version,
            dependencies=dependencies,
            facts=self.state.ledger.facts[-FACTS_SHOWN:],
            earlier=earlier,
            **fields,  # type: ignore[arg-type]
        )

    def judging(self, agent_id: str, point: Point, now: datetime) -> None:
        """The coordinator is being asked about this attempt's outcome (its clock restarts:
        the stall ladder does not count the leader's own time against the task)."""
        task = self.tasks.get(agent_id)
        if task is not None:
            task.last_progress_at = now
            task.last_progress = {
                "result": "the leader checks the result against its task",
                "question": "the leader looks at the question",
                "approval": "the leader looks at the tool request",
            }.get(point, "the leader judges")
            self.changed = True

    def _run_request(self, about: str, text: str, now: datetime) -> HumanRequest:
        """An escalation about the whole run (``task_id`` "run")."""
        request = self._new_request("escalation", None, text, now)
        request.about = about
        return request

    def _answered_run_request(self, request: HumanRequest, text: str) -> None:
        """A person answered a run-level escalation about the goal: replan with their words."""
        if request.about == "goal":
            self.outbox.append(
                CallPlanner(
                    f"{request.id} answered by a person: {text}",
                    label=f"a person answered {request.id}",
                )
            )
            self.replanning = True
