"""`skip ID TASK` without --result, when a task asks a person: refused, saying the answer is
likely what was meant — but only for the question of the task the name means. review19: a
plan with agents `a` and `A`, T-A asking; `skip a` (T-a, asking nothing) was refused with T-A's
question, as the name matched `A` in another case."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

import cli.steer_cmd
from cli.main import main
from client.steer import find_task, no_task
from xsky.leader.state import HumanRequest, InterventionResult
from xsky.leader.tasks import TaskView

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def _row(agent_id: str) -> TaskView:
    return TaskView.model_validate(
        {
            "id": f"T-{agent_id}",
            "agentId": agent_id,
            "sessionId": "xsky-r-1",
            "subject": agent_id,
            "description": agent_id,
            "assignedAgent": "llm",
            "status": "in_progress",
        }
    )


class _Run:
    def __init__(self, asking: str) -> None:
        self.rows = [_row("a"), _row("A")]
        self.pending = [
            HumanRequest(
                id="Q-1",
                kind="question",
                task_id=f"T-{asking}",
                dispatch=1,
                text="which region?",
                created_at=NOW,
                deadline=NOW,
            )
        ]
        self.skipped: list[str] = []

    async def requests(self) -> list[HumanRequest]:
        return list(self.pending)

    async def task(self, task: str) -> TaskView:
        found = find_task(self.rows, task)
        if found is None:
            raise no_task(task, [t.id for t in self.rows], "the run")
        return found

    async def skip(self, task: str, result: str = "") -> InterventionResult:
        self.skipped.append(task)
        return InterventionResult(message=f"{task} skipped")


@pytest.fixture
def connect(monkeypatch: pytest.MonkeyPatch) -> Any:
    def to(run: _Run) -> _Run:
        async def connected(args: Any) -> tuple[None, _Run]:
            return None, run

        monkeypatch.setattr(cli.steer_cmd, "_run", connected)
        return run

    return to


def test_the_question_of_a_task_named_in_another_case_does_not_refuse_the_skip(
    connect: Any,
) -> None:
    run = connect(_Run(asking="A"))
    assert main(["skip", "xsky-r-1", "a"]) == 0
    assert run.skipped == ["a"]


def test_the_named_tasks_own_question_still_refuses_it(
    connect: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    run = connect(_Run(asking="a"))
    assert main(["skip", "xsky-r-1", "T-a"]) != 0 or run.skipped == []
    assert run.skipped == []
    said = " ".join(capsys.readouterr().err.split())
    assert "T-a is waiting for your answer to Q-1" in said, said
