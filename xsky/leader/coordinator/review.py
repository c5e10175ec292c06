"""What the coordinator is asked about an attempt's outcome before the leader takes it: a model
agent's completed answer (one no mechanical rule already refuses), a question, a tool request
(with whether the person's delegated rules cover it)."""

from __future__ import annotations

from collections.abc import Mapping

from xsky.leader.commands import StopReason
from xsky.leader.coordinator.judgment import RESULT_CHARS, Judgment
from xsky.leader.coordinator.requests import RequestJudge
from xsky.leader.coordinator.results import unfinished
from xsky.leader.ledger import DETAIL_CHARS, ConsultInput, cut
from xsky.leader.tasks import TaskState
from xsky.outcomes import OFFLINE_PROVIDER
from xsky.runs import AgentOutcome


def consultation(
    judgment: Judgment,
    asks: RequestJudge,
    stopping: Mapping[str, StopReason],
    task: TaskState | None,
    dispatch: int,
    outcome: AgentOutcome,
) -> ConsultInput | None:
    """What to ask the coordinator about ``task``'s dispatch ``dispatch`` ending in ``outcome``
    (None: nothing — not coordinating, a stale or stopped attempt, a tool's or an offline answer)."""
    if (
        not judgment.asks_model(outcome.provider)
        or task is None
        or task.attempt != dispatch
        or task.agent_id in stopping  # being stopped: what it returned is not taken
    ):
        return None
    if outcome.kind == "completed":
        if outcome.provider in (None, OFFLINE_PROVIDER) or unfinished(outcome):
            return None
        judged = judgment.evidence(task, RESULT_CHARS).model_copy(
            update={
                "result": cut(outcome.result, RESULT_CHARS),
                "result_ref": outcome.result_ref if outcome.result is None else None,
                "status": "completed",
            }
        )
        return judgment.consult_input("result", task, task=judged)
    request = outcome.request
    if request is None:
        return None
    evidence = judgment.evidence(task, RESULT_CHARS)
    if outcome.kind == "question":
        if (
            request.choices
            and not asks.delegated(request.tool or "", request.arguments or {}, False)[0]
        ):
            return None  # a call in doubt that no delegated rule covers: a person decides
        return judgment.consult_input(
            "question", task, task=evidence, question=cut(request.question, DETAIL_CHARS)
        )
    covered, _ = asks.delegated(request.tool or "", request.arguments or {}, request.hard)
    return judgment.consult_input(
        "approval",
        task,
        task=evidence,
        tool=request.tool,
        arguments=request.arguments,
        delegated=covered,
    )
