"""Refusals that are heard: the checks of the signals (and of their update twins, which answer)
and the record of every message refused.

A signal cannot be refused to its sender — the stock CLI and the Web UI say "signaled" whatever
the workflow does with it — so a malformed or oversized one (or a progress report that is not
from the attempt it names) is refused where people look: :meth:`Refusals.refuse` counts it,
shows the last on the board and writes it, with what was wrong, in the permission log. The
update twins (``pause_run``, ``resume_run``, ``nudge_task``) run the same checks in their
validators and answer.
"""

from __future__ import annotations

from datetime import datetime

from xsky.leader.commands import AUDIT_KEEP, Command, Rejected
from xsky.leader.interventions import Interventions
from xsky.leader.limits import (
    NUDGE_CHARS,
    NUDGES_PER_TASK,
    PAUSE_REASON_CHARS,
    PAYLOAD_CHARS,
    cut,
    over,
)
from xsky.leader.state import (
    AuditEntry,
    InterventionResult,
    NudgeRequest,
    PauseRequest,
    ResumeRequest,
)
from xsky.plan.agent_config import tool_name


class Refusals(Interventions):
    """The signals' checks, their twins' handlers, and the record of what was refused."""

    def refuse(self, what: str, payload: str, why: str, now: datetime, task_id: str = "") -> None:
        """Record a refused message: counted, the last on the board, each in the audit log."""
        self.state.refused += 1
        self.state.last_refusal = cut(f"{what}: {why}", 300)
        self.state.audit.append(
            AuditEntry(
                at=now,
                task_id=task_id,
                tool=what,
                arguments=cut(payload, PAYLOAD_CHARS),
                effect="deny",
                reason=f"refused: {why}",
                by="person",
            )
        )
        if len(self.state.audit) > AUDIT_KEEP:  # the log keeps its tail, as for decisions
            self.state.audit_dropped += len(self.state.audit) - AUDIT_KEEP
            del self.state.audit[: len(self.state.audit) - AUDIT_KEEP]
        self.changed = True

    # -- pause and resume ------------------------------------------------------------------------

    def check_pause(self, req: PauseRequest) -> None:
        self._require_open()
        if req.reason is not None:
            long = over("pause reason", req.reason, PAUSE_REASON_CHARS, "say it in fewer words")
            if long:
                raise Rejected(long)

    def check_resume(self, req: ResumeRequest) -> None:
        self._require_open()

    def pause_run(self, req: PauseRequest) -> tuple[InterventionResult, list[Command]]:
        commands = self.pause(req)
        said = (
            "paused; running agents stop and resume later"
            if req.cancel_running
            else "paused: running agents finish, no new ones start"
        )
        return InterventionResult(message=said, plan_version=self.state.plan_version), commands

    def resume_run(self) -> InterventionResult:
        was = self.state.paused
        self.resume()
        return InterventionResult(
            message="resumed" if was else "the run was not paused; it goes on",
            plan_version=self.state.plan_version,
        )

    # -- nudges ----------------------------------------------------------------------------------

    def check_nudge(self, req: NudgeRequest) -> None:
        """A nudge reaches an agent that runs or will run, and that reads messages (a model)."""
        self._require_open()
        task = self._require_task(req.task_id)
        if task.terminal:
            raise Rejected(
                f"{task.id} has already ended ({task.stored}): a nudge reaches only agents that run or wait"
            )
        tool = tool_name(self.agents[task.agent_id].config)
        if tool is not None:
            raise Rejected(
                f"{task.id} runs a direct {tool} tool (no model reads messages): it cannot read a "
                "nudge; use retry (with new task text), skip or replan instead"
            )
        if not req.message.strip():
            raise Rejected("the nudge message is empty: say what the agent should know")
        long = over(
            "nudge",
            req.message,
            NUDGE_CHARS,
            "put long material in a file in the run's workspace and point the agent to it",
        )
        if long:
            raise Rejected(long)
        if len(self._nudges.get(task.id, [])) >= NUDGES_PER_TASK:
            raise Rejected(
                f"{task.id} has {NUDGES_PER_TASK} nudges already, the most a task keeps (each goes "
                "to every later attempt); retry it with new task text instead"
            )

    def nudge_task(self, req: NudgeRequest, now: datetime) -> InterventionResult:
        self.nudge(req, now)
        task = self._require_task(req.task_id)
        return InterventionResult(
            message=f"nudge for {task.id} kept: its agent reads it at its next step",
            plan_version=self.state.plan_version,
        )
