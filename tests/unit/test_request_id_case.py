"""A request id typed in lower case (`q-1`) names the request Q-1 in the leader too: our CLI and
the live page already took it so, the stock `temporal` CLI's `answer` update was refused
("no request 'q-1'; pending requests: Q-1", walk12)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from xsky.leader.core import LeaderCore, Rejected, StartAgent
from xsky.leader.state import AnswerRequest
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RequestPayload, RunInput

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def asking_core() -> tuple[LeaderCore, str]:
    core = LeaderCore(
        RunInput(
            workflow=Workflow(
                name="w", task_id="w", agents=[WorkflowAgent(id="1", name="llm", task="a")]
            )
        ),
        "run-1",
        T0,
    )
    (start,) = core.dispatch(T0)
    assert isinstance(start, StartAgent)
    ask = AgentOutcome(kind="question", request=RequestPayload(question="which?"))
    core.attempt_succeeded("1", core.tasks["1"], start.dispatch, ask, T0)
    core.attempt_ended("1", start.dispatch)
    (question,) = core.pending_requests()
    return core, question.id


def test_a_request_id_in_lower_case_is_answered() -> None:
    core, qid = asking_core()
    assert qid == "Q-1"
    core.checks.answer(AnswerRequest(request_id="q-1", text="that one"))  # the validator
    said = core.people.answer(AnswerRequest(request_id="q-1", text="that one"), T0)
    assert said.message.startswith("Q-1 answered")
    assert core.pending_requests() == []
    (again,) = core.dispatch(T0)
    assert isinstance(again, StartAgent) and again.agent_id == "1"


def test_an_id_no_request_has_is_still_refused_with_the_pending_ones() -> None:
    core, _ = asking_core()
    with pytest.raises(Rejected, match="no request 'q-2'; pending requests: Q-1"):
        core.checks.answer(AnswerRequest(request_id="q-2", text="x"))
