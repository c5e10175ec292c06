"""A task id typed as a person types it (walk11: `log RUN t-1` was refused as no task 't-1'
though `answer RUN q-1` and a bare `2` were taken): t-1, T1 and an agent id in another case
name the task — and what a run is sent carries the id the run knows it by (T-1), since the run
finds tasks by their exact ids only and a signal cannot refuse one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import client.run as run_module
from client.resume import agent_ids
from client.run import Run
from client.steer import agent_named, find_task, names_task
from xsky.config import load_settings
from xsky.errors import RefusedError, UsageError
from xsky.leader.state import BoardPage, InterventionResult
from xsky.leader.tasks import TaskView


def task(agent: str, status: str = "in_progress") -> TaskView:
    return TaskView.model_validate(
        {
            "id": f"T-{agent}",
            "agentId": agent,
            "sessionId": "run",
            "subject": agent,
            "description": agent,
            "assignedAgent": "llm",
            "stored": status,
            "status": status,
        }
    )


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("T-1", "1"),
        ("1", "1"),
        ("t-1", "1"),
        ("T1", "1"),
        ("t1", "1"),
        (" t-1 ", "1"),
        ("T-Search", "search"),  # an agent id in another case
        ("SEARCH", "search"),
        ("t-search", "search"),
        ("T-12", "12"),
        ("t-9", None),
        ("Tsearch", None),  # T without a dash only before a digit
        ("12", "12"),
    ],
)
def test_a_task_is_found_by_its_id_written_as_a_person_writes_it(
    typed: str, meant: str | None
) -> None:
    assert agent_named(["1", "12", "search"], typed) == meant


def test_an_exact_id_wins_and_one_that_could_be_two_is_none() -> None:
    assert agent_named(["x1", "X1"], "X1") == "X1"  # exact, as the run finds it
    assert agent_named(["x1", "X1"], "x1") == "x1"
    assert agent_named(["x1", "X1"], "T-X1") == "X1"
    assert agent_named(["x1", "X1"], "t-x1") is None  # x1 or X1: not guessed
    assert agent_named(["1", "t1"], "t1") == "t1"  # the agent t1, not T-1
    assert agent_named(["1", "T1"], "t1") is None
    assert agent_named(["1", "T-1"], "T-T-1") == "T-1"  # an agent whose own id starts with T-
    assert agent_named(["1", "T-1"], "T-1") == "1"  # as the run finds it
    assert agent_named(["1", "T-1"], "t-1") is None


def test_find_task_and_the_plans_ids_take_the_same_names() -> None:
    rows = [task("1"), task("2")]
    assert find_task(rows, "t-2") is rows[1]
    assert find_task(rows, "T2") is rows[1]
    assert agent_ids(["1", "2"], ["t-1", "T2"]) == ["1", "2"]  # retry of an ended run, fork
    with pytest.raises(UsageError, match=r"no task 't-3' in the run's last plan"):
        agent_ids(["1", "2"], ["t-3"])
    assert names_task("T-1", "t-1") and names_task("T-1", "1") and not names_task("T-1", "t-2")


class FakeRun:
    """What a running run does with an update naming a task: it finds T-3 or 3 only (as
    xsky/leader/board.py does) and refuses anything else, as the server says it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, rows: list[TaskView]) -> None:
        self.sent: list[Any] = []
        self.rows = rows
        self.run = Run(None, load_settings(), SimpleNamespace(id="run-1"))  # type: ignore[arg-type]
        monkeypatch.setattr(self.run, "_update", self.update)
        monkeypatch.setattr(self.run, "board", self.board)
        monkeypatch.setattr(self.run, "temporal_status", self.status)

    async def status(self) -> str:
        return "running"

    async def board(self, offset: int = 0, limit: int = 200, status: str | None = None) -> Any:
        return BoardPage(total=len(self.rows), offset=0, tasks=self.rows)

    async def update(self, update: Any, request: Any) -> InterventionResult:
        self.sent.append(request)
        task_id = getattr(request, "task_id", None)
        if task_id is not None:
            agent = task_id[2:] if task_id.startswith("T-") else task_id
            if agent not in {t.agent_id for t in self.rows}:
                known = ", ".join(t.id for t in self.rows)
                raise RefusedError(f"refused: no task {task_id!r} in plan v1; tasks: {known}")
        return InterventionResult(message="done")


STEERS = {
    "retry": lambda run, task: run.retry(task),
    "skip": lambda run, task: run.skip(task, "x"),
    "cancel": lambda run, task: run.cancel(task),
    "pause_task": lambda run, task: run.pause_task(task),
    "resume_task": lambda run, task: run.resume_task(task),
    "reset_task": lambda run, task: run.reset_task(task),
    "set_task_timeout": lambda run, task: run.set_task_timeout(task, 60),
    "set_budget": lambda run, task: run.set_budget(task=task, tokens=1000),
    "nudge": lambda run, task: run.nudge(task, "look again"),
}


@pytest.mark.parametrize("steer", list(STEERS))
@pytest.mark.parametrize("typed", ["t-1", "T1"])
async def test_every_update_about_a_task_carries_its_id_as_the_run_knows_it(
    monkeypatch: pytest.MonkeyPatch, steer: str, typed: str
) -> None:
    fake = FakeRun(monkeypatch, [task("1"), task("2")])
    await STEERS[steer](fake.run, typed)
    assert fake.sent[-1].task_id == "T-1", fake.sent


@pytest.mark.parametrize("steer", list(STEERS))
async def test_a_task_the_run_has_not_is_refused_with_the_id_it_is_closest_to(
    monkeypatch: pytest.MonkeyPatch, steer: str
) -> None:
    fake = FakeRun(monkeypatch, [task("fetch"), task("region")])
    with pytest.raises(UsageError, match=r"no task 't-regoin' in run-1 — did you mean T-region\?"):
        await STEERS[steer](fake.run, "t-regoin")


async def test_an_exact_id_is_sent_once_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRun(monkeypatch, [task("1")])
    await fake.run.skip("T-1")
    await fake.run.skip("1")
    assert [r.task_id for r in fake.sent] == ["T-1", "1"]  # no board read, no second send


async def test_an_agents_result_is_found_by_its_task_id_in_either_case(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reports = [SimpleNamespace(id="1", task_id="T-1"), SimpleNamespace(id="region", task_id="T-2")]
    monkeypatch.setattr(run_module, "reports_of", lambda settings, result: reports)
    monkeypatch.setattr(run_module, "result_text", lambda settings, report: f"text of {report.id}")
    run = Run(None, load_settings(), SimpleNamespace(id="run-1"))  # type: ignore[arg-type]
    given: Any = object()
    assert (await run.agent_result("t-1", given))[1] == "text of 1"
    assert (await run.agent_result("T-Region", given))[1] == "text of region"
    with pytest.raises(UsageError, match=r"no agent t-regoin in run-1 — did you mean region\?"):
        await run.agent_result("t-regoin", given)
