"""What the board says of a request once it is answered, and what an escalation says of the
error that raised it (walk6: 'waiting for Q-1: …' stayed on an answered task's line, and an
escalation cut its error at 300 characters with no mark, losing the fix it named)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.unit.test_leader_core import T0
from xsky.leader.commands import AttemptFailure
from xsky.leader.core import LeaderCore
from xsky.leader.state import AnswerRequest
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RequestPayload, RunInput, RunOptions


def core_of(answers: dict[str, bool], **options: object) -> LeaderCore:
    agents = [WorkflowAgent(id="4", name="llm", task="plan the trip")]
    inp = RunInput(
        workflow=Workflow(name="w", task_id="w", agents=agents), options=RunOptions(**options)
    )  # type: ignore[arg-type]
    return LeaderCore(inp, "run-1", T0, patched=lambda patch_id: answers.get(patch_id, True))


@pytest.mark.parametrize("patched", [True, False])
def test_an_answered_question_leaves_the_tasks_line(patched: bool) -> None:
    core = core_of({"answered-wait-note-cleared": patched})
    (start,) = core.dispatch(T0)
    asked = AgentOutcome(kind="question", request=RequestPayload(question="Which region?"))
    core.attempt_succeeded("4", core.tasks["4"], start.dispatch, asked, T0)  # type: ignore[union-attr]
    core.attempt_ended("4", start.dispatch)  # type: ignore[union-attr]
    assert core.tasks["4"].last_progress == "waiting for Q-1: Which region?"
    core.people.answer(AnswerRequest(request_id="Q-1", text="eu"), T0)
    # (a run that answered before the patch keeps the note, as it did)
    assert core.tasks["4"].last_progress == (None if patched else "waiting for Q-1: Which region?")


@pytest.mark.parametrize("patched", [True, False])
def test_an_escalation_says_the_end_of_a_long_error(patched: bool) -> None:
    core = core_of({"escalation-says-whole-error": patched}, hold_on_failure=600.0, max_attempts=1)
    (start,) = core.dispatch(T0)
    error = "x" * 400 + " — fix: set XSKY_STORE in settings.json"
    failure = AttemptFailure(error, deterministic=True)
    core.attempt_failed("4", core.tasks["4"], start.dispatch, failure, T0 + timedelta(seconds=1))  # type: ignore[union-attr]
    (held,) = [r for r in core.requests.listed() if r.kind == "escalation"]
    if patched:
        assert "fix: set XSKY_STORE in settings.json — retry, skip" in held.text, held.text
    else:
        assert "fix:" not in held.text and len(held.text) < 400
