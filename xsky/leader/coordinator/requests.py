"""A worker's question or tool request, judged by the leader within the person's bounds.

A question is answered when the coordinator is confident ("answered by leader"; a person may
override it within ``answer_grace``). A tool request is approved only when the person's
delegated rules cover the call (never beyond them, never against a deny rule, never an approval
only a person may give), whatever the model proposed; the model may only *deny* an off-goal
call, or leave it to a person."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from xsky.leader.audit import AuditLog
from xsky.leader.board import TaskBoard
from xsky.leader.briefs import Briefs
from xsky.leader.commands import Rejected
from xsky.leader.coordinator.judgment import Judgment
from xsky.leader.ledger import DETAIL_CHARS, ConsultOutcome, cut
from xsky.leader.requests import RequestBook
from xsky.leader.shell_readings import as_replayed
from xsky.leader.state import Answer, AnswerRequest, AuditEntry, HumanRequest, Nudge, ToolApproval
from xsky.leader.tasks import TaskState
from xsky.security.delegation import delegation
from xsky.security.idempotence import choice_of
from xsky.security.permissions import PermissionSettings


class RequestJudge:
    """Questions and tool requests, decided in a person's place where the person allowed it."""

    def __init__(
        self,
        judgment: Judgment,
        board: TaskBoard,
        requests: RequestBook,
        briefs: Briefs,
        audit: AuditLog,
        permissions: PermissionSettings,
    ) -> None:
        self.judgment = judgment
        self.board = board
        self.requests = requests
        self.briefs = briefs
        self.audit = audit
        self.permissions = permissions
        self.options = judgment.options

    def delegated(self, tool: str, arguments: dict[str, Any], hard: bool) -> tuple[bool, str]:
        if hard:
            return False, "only a person may approve this call"
        j = self.judgment
        rules = j.delegated + list(self.options.delegate)
        deny = j.denied + [r for layer in self.permissions.layers for r in layer.deny]

        def decide() -> tuple[bool, str]:
            return delegation(tool, arguments, rules, deny, self.options.workspace, j.programs)

        if tool != "shell":
            return decide()
        return as_replayed(decide, self.requests.patched)

    def requested(
        self, task: TaskState, request: HumanRequest, now: datetime, judged: ConsultOutcome | None
    ) -> None:
        """A question or tool request was raised: the leader may decide it."""
        j = self.judgment
        if not j.on:
            return
        heard = judged is not None and j.heard(judged)
        if judged is not None and heard:
            j.learn(judged, task.id, now)
        if request.kind == "question":
            if judged is not None and heard:
                self._question(task, request, judged, now)
            elif request.choices:
                request.suggestion = (
                    "left to you: the call may have run, and no delegated rule lets the leader "
                    "decide whether to repeat it"
                )
            return
        self._approval(task, request, judged if heard else None, now)

    def _question(
        self, task: TaskState, request: HumanRequest, judged: ConsultOutcome, now: datetime
    ) -> None:
        j = self.judgment
        answer = cut(judged.answer, DETAIL_CHARS)
        if request.choices and answer and not choice_of(answer)[0]:
            judged = judged.model_copy(
                update={
                    "verdict": "leave",
                    "reason": f"its answer {answer[:60]!r} is none of {', '.join(request.choices)}",
                }
            )
        if judged.verdict != "answer" or not answer:
            request.suggestion = f"the leader left it to you: {cut(judged.reason, 300)}"
            j.entry("question", task, "leave", judged.reason, now, applied=False)
            return
        if j.mode() == "advise":
            request.suggestion = answer
            j.entry("question", task, "answer", judged.reason, now, detail=answer)
            return
        self.requests.close(request, "answered", now)
        request.by, request.answer = "leader", answer
        self.briefs.answer(
            task.id,
            Answer(request_id=request.id, question=request.text, answer=answer, by="leader"),
        )
        self.board.set_waiting(task, None)
        task.last_progress = f"{request.id} answered by the leader: {cut(answer, 80)}"
        j.entry("question", task, "answer", judged.reason, now, detail=answer)

    def _approval(
        self, task: TaskState, request: HumanRequest, judged: ConsultOutcome | None, now: datetime
    ) -> None:
        j = self.judgment
        tool, arguments = request.tool or "", request.arguments or {}
        if judged is not None and judged.verdict == "deny":
            if j.mode() == "advise":
                request.suggestion = f"deny: {cut(judged.reason, 300)}"
                j.entry("approval", task, "deny", judged.reason, now)
                return
            self._decide(task, request, "deny", f"off the goal: {judged.reason}", now)
            j.entry("approval", task, "deny", judged.reason, now)
            return
        covered, why = self.delegated(tool, arguments, request.hard)
        if not covered:
            reason = why if judged is None else f"{why} (the leader's view: {judged.reason})"
            request.suggestion = f"left to you: {cut(reason, 300)}"
            j.entry("approval", task, "leave", reason, now, by="leader (mechanical)", applied=False)
            return
        # Delegated rules are the person's own: applied in every mode, as allow rules are.
        self._decide(task, request, "allow_once", why, now)
        j.entry(
            "approval",
            task,
            "allow",
            why,
            now,
            by="leader (mechanical)" if judged is None else "leader",
        )

    def _decide(
        self, task: TaskState, request: HumanRequest, decision: str, reason: str, now: datetime
    ) -> None:
        """Decide a tool request in a person's place: as approve_tool does, by the leader."""
        self.requests.close(request, "answered", now)
        request.by, request.decision = "leader", decision  # type: ignore[assignment]
        request.answer = reason
        self.audit.add(
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
        self.briefs.approve(
            task.id,
            ToolApproval(
                request_id=request.id,
                tool=request.tool or "",
                arguments=request.arguments or {},
                decision=decision,  # type: ignore[arg-type]
                message=f"the leader: {reason}",
                by="leader",
            ),
        )
        self.board.set_waiting(task, None)
        task.last_progress = f"{request.id} {decision} by the leader: {cut(reason, 80)}"

    # -- a person overrides the leader's answer -----------------------------------------------------

    def overridable(self, request_id: str) -> HumanRequest | None:
        """A question the leader answered, which a person may answer again."""
        request = self.requests.get(request_id)
        if (
            request is not None
            and request.kind == "question"
            and request.status == "answered"
            and request.by == "leader"
        ):
            return request
        return None

    def check_override(
        self, request: HumanRequest, req: AnswerRequest, now: datetime | None
    ) -> None:
        answered = request.answered_at or request.created_at
        if now is not None and now > answered + timedelta(seconds=self.options.answer_grace):
            raise Rejected(
                f"{request.id} was answered by the leader and the {self.options.answer_grace:g}s "
                "in which a person may override that answer are over"
            )
        task = self.board.task_by_id(request.task_id)
        if task is None or task.terminal:
            raise Rejected(
                f"{request.task_id} already finished with the leader's answer to {request.id}; "
                f"retry_task {request.task_id} to run it again, and answer it then"
            )
        if not req.text.strip():
            raise Rejected("the answer is empty")

    def override(self, request: HumanRequest, req: AnswerRequest, now: datetime) -> str:
        """A person's answer replaces the leader's; the agent is told. Says so."""
        task = self.board.task_by_id(request.task_id)
        assert task is not None  # checked by check_override
        self.briefs.replace_answer(
            task.id, Answer(request_id=request.id, question=request.text, answer=req.text)
        )
        leaders = request.answer
        request.by, request.answer, request.answered_at = "person", req.text, now
        self.briefs.nudge(
            Nudge(
                task_id=task.id,
                message=f"A person corrects the answer to your question {request.text!r}: {req.text}",
                at=now,
                source="person",
            )
        )
        self.judgment.entry(
            "question",
            task,
            "answer",
            f"a person overrode the leader's answer ({cut(leaders, 200)})",
            now,
            detail=req.text,
            by="person",
        )
        return f"{request.id}: your answer replaces the leader's; {task.id} is told"
