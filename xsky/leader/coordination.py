"""The leader's judgment: what the coordinator is asked, and how its answers are applied.

The coordinator (a model, run as the ``coordinate`` activity — never a model call in
workflow code) is consulted at four points: a model agent's completed result (does it do
its task?), a worker's question or tool request, a stall past the nudge (its root cause),
and the run's end (is the goal met?). Its answers are recorded in history; this layer
applies them deterministically and holds them to the person's bounds:

* ``act`` applies them, ``advise`` records them as suggestions, ``off`` asks nothing;
* an approval is granted only for a call the person's delegated rules cover (never beyond
  them, never against a deny rule, never for an approval only a person may give), whatever
  the model proposed; the model may only *deny* an off-goal call, or leave it to a person;
* automatic replans stay within ``max_auto_replans``; a result goes back at most
  ``coordinator_retries`` times.

Mechanical rules apply in every mode, with or without a model: an empty answer, or a model
that stopped without a final answer, is not accepted.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from xsky.leader.commands import (
    Rejected,
)
from xsky.leader.judgment import EMPTY, RESULT_CHARS, Judgment
from xsky.leader.ledger import (
    DETAIL_CHARS,
    ConsultInput,
    ConsultOutcome,
    Verdict,
    cut,
)
from xsky.leader.state import (
    Answer,
    AnswerRequest,
    AuditEntry,
    HumanRequest,
    InterventionResult,
    Nudge,
    ToolApproval,
)
from xsky.leader.tasks import TaskState
from xsky.outcomes import NO_FINAL_ANSWER, OFFLINE_PROVIDER
from xsky.runs import AgentOutcome
from xsky.security.delegation import delegation


class Coordination(Judgment):
    """A model agent's result, a worker's question or tool request: judged, and applied
    within bounds (the person's delegated rules, ``coordinator_retries``)."""

    # -- a completed result -------------------------------------------------------------------------

    @staticmethod
    def _unfinished(outcome: AgentOutcome) -> str | None:
        """A mechanical rule's objection to a model's or an offline answer, if any."""
        text = outcome.result
        if text is not None and not text.strip():
            return EMPTY
        if text is not None and text.startswith(NO_FINAL_ANSWER):
            return "the model stopped calling tools without giving its final answer"
        return None

    def review_of(
        self, agent_id: str, dispatch: int, outcome: AgentOutcome, now: datetime | None = None
    ) -> ConsultInput | None:
        """What to ask the coordinator before this attempt's outcome is taken (None: nothing,
        or the run's budget has no room for the question: its hold is taken here).

        A model agent's completed answer (not one a mechanical rule already refuses), a
        question, a tool request."""
        asked = self._review(agent_id, dispatch, outcome)
        if asked is None or now is None:
            return asked
        task = self.tasks[agent_id]
        task.check = None
        return self._hold_consult(asked, now)

    def _review(self, agent_id: str, dispatch: int, outcome: AgentOutcome) -> ConsultInput | None:
        task = self.tasks.get(agent_id)
        if (
            not self._asks_model(outcome.provider)
            or task is None
            or task.attempt != dispatch
            or agent_id in self.intents  # being stopped: what it returned is not taken
        ):
            return None
        if outcome.kind == "completed":
            if outcome.provider in (None, OFFLINE_PROVIDER) or self._unfinished(outcome):
                return None
            judged = self._evidence(task, RESULT_CHARS).model_copy(
                update={
                    "result": cut(outcome.result, RESULT_CHARS),
                    "result_ref": outcome.result_ref if outcome.result is None else None,
                    "status": "completed",
                }
            )
            return self._consult_input("result", task, task=judged)
        request = outcome.request
        if request is None:
            return None
        evidence = self._evidence(task, RESULT_CHARS)
        if outcome.kind == "question":
            return self._consult_input(
                "question", task, task=evidence, question=cut(request.question, DETAIL_CHARS)
            )
        covered, _ = self._delegated(request.tool or "", request.arguments or {}, request.hard)
        return self._consult_input(
            "approval",
            task,
            task=evidence,
            tool=request.tool,
            arguments=request.arguments,
            delegated=covered,
        )

    def _take_result(
        self,
        task: TaskState,
        outcome: AgentOutcome,
        now: datetime,
        judged: ConsultOutcome | None,
    ) -> None:
        if self.coordinating and outcome.provider is not None:
            ledger = self.state.ledger
            if outcome.provider == OFFLINE_PROVIDER and ledger.mode == "auto":
                # an offline answer: the workers have no model, so there is no one to ask
                ledger.mode = "off"
                ledger.note = f"no model configured on the workers ({task.id} was answered offline)"
            objection = self._unfinished(outcome)
            if objection is not None:
                self._mechanical(task, outcome, objection, now)
                return
            if judged is not None and self._judge_result(task, judged, now):
                return
        super()._take_result(task, outcome, now, judged)

    def _mechanical(
        self, task: TaskState, outcome: AgentOutcome, objection: str, now: datetime
    ) -> None:
        """An answer a fixed rule refuses: sent back while tries remain (a model's), else
        failed when empty, kept (with its true note) when the work was done but unsaid."""
        mechanical = "leader (mechanical)"
        tries_left = task.leader_retries < self.options.coordinator_retries
        if outcome.provider != OFFLINE_PROVIDER and tries_left:
            instruction = (
                "Your last reply gave no answer to your task. Give your final answer now."
                if objection == EMPTY
                else "You stopped without a final answer. State your final answer to your task now."
            )
            self._send_back(task, instruction, now)
            self._entry("result", task, "retry", objection, now, detail=instruction, by=mechanical)
        elif objection == EMPTY:
            self._entry("result", task, "retry", f"{objection}; no tries left", now, by=mechanical)
            self._finish(task, "failed", now, error=f"not accepted by the leader: {objection}")
        else:
            self._entry("result", task, "accept", f"{objection}; kept as it is", now, by=mechanical)
            super()._take_result(task, outcome, now, None)

    def _send_back(self, task: TaskState, instruction: str, now: datetime) -> None:
        """The task runs again from its conversation, with the leader's instruction."""
        task.leader_retries += 1
        self._add_nudge(Nudge(task_id=task.id, message=instruction, at=now, source="leader"))
        self._set_stored(task, "pending")
        task.started_at = None
        task.last_progress = f"sent back by the leader: {cut(instruction, 80)}"
        self.changed = True

    def _judge_result(self, task: TaskState, judged: ConsultOutcome, now: datetime) -> bool:
        """Apply the coordinator's verdict on a result; True when the task was sent back."""
        if not self._heard(judged):
            return False
        self._learn(judged, task.id, now)
        if judged.verdict == "retry" and self._acts():
            if task.leader_retries < self.options.coordinator_retries:
                instruction = judged.instruction or judged.reason or "Do the task as asked."
                self._send_back(task, instruction, now)
                self._entry("result", task, "retry", judged.reason, now, detail=instruction)
                return True
            self._entry(
                "result",
                task,
                "accept",
                f"kept: it was sent back {task.leader_retries} time(s) already; still doubted: "
                f"{judged.reason}",
                now,
            )
            return False
        verdict: Verdict = (
            judged.verdict if judged.verdict in ("accept", "retry", "unsure") else "unsure"
        )
        self._entry("result", task, verdict, judged.reason, now, detail=judged.instruction)
        if self.mode() == "advise" and verdict == "retry":
            task.last_progress = f"leader (advice): {cut(judged.reason, 80)}"
        return False

    # -- questions and tool requests ------------------------------------------------------------------

    def _delegated(self, tool: str, arguments: dict[str, Any], hard: bool) -> tuple[bool, str]:
        if hard:
            return False, "only a person may approve this call"
        rules = self.delegated + list(self.options.delegate)
        deny = self.denied + [r for layer in self.input.permissions.layers for r in layer.deny]
        return delegation(
            tool, arguments, rules, deny, self.options.workspace, self.delegation_programs
        )

    def _requested(
        self, task: TaskState, request: HumanRequest, now: datetime, judged: ConsultOutcome | None
    ) -> None:
        if not self.coordinating:
            return
        heard = judged is not None and self._heard(judged)
        if judged is not None and heard:
            self._learn(judged, task.id, now)
        if request.kind == "question":
            if judged is not None and heard:
                self._judge_question(task, request, judged, now)
            return
        self._judge_approval(task, request, judged if heard else None, now)

    def _judge_question(
        self, task: TaskState, request: HumanRequest, judged: ConsultOutcome, now: datetime
    ) -> None:
        answer = cut(judged.answer, DETAIL_CHARS)
        if judged.verdict != "answer" or not answer:
            request.suggestion = f"the leader left it to you: {cut(judged.reason, 300)}"
            self._entry("question", task, "leave", judged.reason, now, applied=False)
            return
        if self.mode() == "advise":
            request.suggestion = answer
            self._entry("question", task, "answer", judged.reason, now, detail=answer)
            return
        self._close_request(request, "answered", now)
        request.by, request.answer = "leader", answer
        self.state.answers.setdefault(task.id, []).append(
            Answer(request_id=request.id, question=request.text, answer=answer, by="leader")
        )
        self._set_waiting(task, None)
        task.last_progress = f"{request.id} answered by the leader: {cut(answer, 80)}"
        self._entry("question", task, "answer", judged.reason, now, detail=answer)

    def _judge_approval(
        self, task: TaskState, request: HumanRequest, judged: ConsultOutcome | None, now: datetime
    ) -> None:
        tool, arguments = request.tool or "", request.arguments or {}
        if judged is not None and judged.verdict == "deny":
            if self.mode() == "advise":
                request.suggestion = f"deny: {cut(judged.reason, 300)}"
                self._entry("approval", task, "deny", judged.reason, now)
                return
            self._decide_request(task, request, "deny", f"off the goal: {judged.reason}", now)
            self._entry("approval", task, "deny", judged.reason, now)
            return
        covered, why = self._delegated(tool, arguments, request.hard)
        if not covered:
            reason = why if judged is None else f"{why} (the leader's view: {judged.reason})"
            request.suggestion = f"left to you: {cut(reason, 300)}"
            self._entry(
                "approval", task, "leave", reason, now, by="leader (mechanical)", applied=False
            )
            return
        # Delegated rules are the person's own: applied in every mode, as allow rules are.
        self._decide_request(task, request, "allow_once", why, now)
        self._entry(
            "approval",
            task,
            "allow",
            why,
            now,
            by="leader (mechanical)" if judged is None else "leader",
        )

    def _decide_request(
        self, task: TaskState, request: HumanRequest, decision: str, reason: str, now: datetime
    ) -> None:
        """Decide a tool request in a person's place: as approve_tool does, by the leader."""
        self._close_request(request, "answered", now)
        request.by, request.decision = "leader", decision  # type: ignore[assignment]
        request.answer = reason
        self.state.audit.append(
            AuditEntry(
                at=now,
                task_id=task.id,
                tool=request.tool or "",
                arguments=request.text,
                effect="deny" if decision == "deny" else "allow",
                reason=f"{decision} by the leader: {reason}",
                by="leader",
                request_id=request.id,
            )
        )
        self.state.approvals.setdefault(task.id, []).append(
            ToolApproval(
                request_id=request.id,
                tool=request.tool or "",
                arguments=request.arguments or {},
                decision=decision,  # type: ignore[arg-type]
                message=f"the leader: {reason}",
                by="leader",
            )
        )
        self._set_waiting(task, None)
        task.last_progress = f"{request.id} {decision} by the leader: {cut(reason, 80)}"

    # -- a person overrides the leader's answer -----------------------------------------------------

    def _overridable(self, request_id: str) -> HumanRequest | None:
        request = self.request(request_id)
        if (
            request is not None
            and request.kind == "question"
            and request.status == "answered"
            and request.by == "leader"
        ):
            return request
        return None

    def check_answer(self, req: AnswerRequest, now: datetime | None = None) -> None:
        request = self._overridable(req.request_id)
        if request is None:
            super().check_answer(req)
            return
        self._require_open()
        answered = request.answered_at or request.created_at
        if now is not None and now > answered + timedelta(seconds=self.options.answer_grace):
            raise Rejected(
                f"{request.id} was answered by the leader and the {self.options.answer_grace:g}s "
                "in which a person may override that answer are over"
            )
        task = self.task_by_id(request.task_id)
        if task is None or task.terminal:
            raise Rejected(
                f"{request.task_id} already finished with the leader's answer to {request.id}; "
                f"retry_task {request.task_id} to run it again, and answer it then"
            )
        if not req.text.strip():
            raise Rejected("the answer is empty")

    def answer(self, req: AnswerRequest, now: datetime) -> InterventionResult:
        asked = self.request(req.request_id)
        if asked is not None and asked.about == "goal":
            self._close_request(asked, "answered", now)
            asked.by, asked.answer = "person", req.text
            self._answered_run_request(asked, req.text)
            return InterventionResult(
                message=f"{asked.id} answered; the plan is changed with your answer",
                plan_version=self.state.plan_version,
            )
        request = self._overridable(req.request_id)
        if request is None:
            return super().answer(req, now)
        task = self.task_by_id(request.task_id)
        assert task is not None  # checked by check_answer
        answers = self.state.answers.setdefault(task.id, [])
        mine = Answer(request_id=request.id, question=request.text, answer=req.text)
        answers[:] = [mine if a.request_id == request.id else a for a in answers]
        leaders = request.answer
        request.by, request.answer, request.answered_at = "person", req.text, now
        self._add_nudge(
            Nudge(
                task_id=task.id,
                message=f"A person corrects the answer to your question {request.text!r}: {req.text}",
                at=now,
                source="person",
            )
        )
        self._entry(
            "question",
            task,
            "answer",
            f"a person overrode the leader's answer ({cut(leaders, 200)})",
            now,
            detail=req.text,
            by="person",
        )
        self.changed = True
        return InterventionResult(
            message=f"{request.id}: your answer replaces the leader's; {task.id} is told",
            plan_version=self.state.plan_version,
        )
