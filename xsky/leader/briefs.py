"""What a task's next dispatch is told besides its task: people's (and the leader's) answers
to its questions, their decisions on its tool requests, "allow for this run" rules, and
nudges — from a person, the stall ladder or the leader. Answers and nudges go to every later
dispatch; a decision on a tool call goes to the next one only, and what that dispatch was given
is kept so the worker can check its input against it (xsky/leader/grants.py)."""

from __future__ import annotations

from xsky.in_doubt import is_doubt
from xsky.leader.state import Answer, BriefState, Granted, Nudge, ToolApproval
from xsky.security.permissions import ApprovedRule


class Briefs:
    """Answers, approvals, run rules and nudges, by task."""

    def __init__(self, state: BriefState) -> None:
        self.state = state
        self._nudges: dict[str, list[str]] = {}
        for n in state.nudges:
            self._nudges.setdefault(n.task_id, []).append(n.message)

    # -- answers ---------------------------------------------------------------------------------

    def answer(self, task_id: str, answer: Answer) -> None:
        self.state.answers.setdefault(task_id, []).append(answer)

    def replace_answer(self, task_id: str, answer: Answer) -> None:
        """A person's answer in place of the leader's to the same request."""
        answers = self.state.answers.setdefault(task_id, [])
        answers[:] = [answer if a.request_id == answer.request_id else a for a in answers]

    def answers_for(self, task_id: str) -> list[Answer]:
        return list(self.state.answers.get(task_id, []))

    def forget_doubts(self, task_id: str) -> None:
        """A person runs the task again: what they decided about its calls in doubt (skip,
        done) was for the attempt that asked, not for this new start, which makes its calls."""
        answers = self.state.answers.get(task_id)
        if answers:
            answers[:] = [a for a in answers if not is_doubt(a.question)]

    # -- tool decisions --------------------------------------------------------------------------

    def approve(self, task_id: str, approval: ToolApproval) -> None:
        self.state.approvals.setdefault(task_id, []).append(approval)

    def allow_for_run(
        self, rules: list[str], request_id: str, values: dict[str, str] | None = None
    ) -> None:
        """An "allow for this run" answer: its rules, each kept once, with the {{…}} values of
        the call approved (a later call with other values that could be code is asked again:
        xsky/security/shell_rules.py; these values are the person's answer)."""
        kept = {a.rule for a in self.state.approved_rules}
        for rule in rules:
            if rule not in kept:
                kept.add(rule)
                self.state.approved_rules.append(
                    ApprovedRule(rule=rule, request_id=request_id, values=values or None)
                )

    def hand_over(self, task_id: str, dispatch: int) -> list[ToolApproval]:
        """The decisions waiting for ``task_id``'s next dispatch, ``dispatch``: given to it
        (and remembered as given), never to a later one."""
        approvals = self.state.approvals.pop(task_id, [])
        if approvals:
            self.state.granted[task_id] = Granted(dispatch=dispatch, approvals=approvals)
        else:
            self.state.granted.pop(task_id, None)
        return approvals

    def given(self, task_id: str, dispatch: int) -> list[ToolApproval]:
        """The decisions ``task_id``'s dispatch ``dispatch`` was given (the grants query)."""
        granted = self.state.granted.get(task_id)
        return list(granted.approvals) if granted and granted.dispatch == dispatch else []

    # -- nudges ----------------------------------------------------------------------------------

    def nudge(self, nudge: Nudge) -> None:
        self.state.nudges.append(nudge)
        self._nudges.setdefault(nudge.task_id, []).append(nudge.message)

    def nudges_for(self, task_id: str) -> list[str]:
        return list(self._nudges.get(task_id, []))

    def nudge_count(self, task_id: str) -> int:
        return len(self._nudges.get(task_id, []))
