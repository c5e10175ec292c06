"""A large run's end makes its reports once and its whole board once (xsky/leader/views.py:
``ending``, ``final_board``), giving what the two passes each gave: the run's last workflow
tasks built 30,000 reports twice and then the whole board twice, 9–12 s under load against
the server's 10 s workflow-task timeout (perf41b). The same values mean the same commands
(part counts, inputs), so a recorded history replays: no patch."""

from __future__ import annotations

import pytest

from tests.unit.test_leader_core_rules import Shell, workflow
from tests.unit.test_loops import complete, plan
from xsky.artifacts import ArtifactRef
from xsky.leader import views as views_module
from xsky.leader.commands import INLINE_AGENTS, AttemptFailure
from xsky.leader.state import EndRunRequest, PauseRequest
from xsky.leader.tasks import TaskView
from xsky.runs import AgentOutcome, RequestPayload

LARGE = INLINE_AGENTS + 40


def large_run() -> Shell:
    """A large run that ended: completions inline and by reference, results over the inline
    budget, a failure and the dependents it blocked."""
    agents: list[str | tuple[str, str]] = [str(i) for i in range(LARGE - 3)]
    agents += [("dep-1", "7"), ("dep-2", "dep-1"), "last"]
    shell = Shell(workflow(*agents), max_parallel=LARGE)
    shell.loop()
    for n, agent_id in enumerate(list(shell.running)):
        dispatch = shell.running.pop(agent_id)
        task = shell.core.tasks[agent_id]
        if agent_id == "7":
            shell.core.attempt_failed(
                agent_id, task, dispatch, AttemptFailure("exit 2", deterministic=True), shell.now
            )
        else:
            big = n % 50 == 3  # a few results of 200 KiB: past the inline budget together
            result = ("x" * 200_000 if big else f"result of {agent_id}") + "ü"
            ref = ArtifactRef(
                uri=f"artifact:run-1/{agent_id}/r.txt", size=len(result), sha256="0" * 64
            )
            outcome = AgentOutcome(
                kind="completed", result=result, result_ref=ref if big or n % 3 == 0 else None
            )
            shell.core.attempt_succeeded(agent_id, task, dispatch, outcome, shell.now)
        shell.core.attempt_ended(agent_id, dispatch)
    shell.loop()
    assert shell.core.finished() and shell.core.views.large()
    return shell


def test_a_large_runs_end_makes_the_result_and_the_stored_reports_in_one_pass(monkeypatch):
    shell = large_run()
    views = shell.core.views
    expected = (views.result(shell.now).model_dump_json(), views.reports_jsonl())
    assert '"status":"failed"' in expected[1] and '"status":"blocked"' in expected[1]
    made: list[int] = []
    reports = views_module.Views.reports
    monkeypatch.setattr(
        views_module.Views,
        "reports",
        lambda self, budget=0: made.append(budget) or reports(self, budget),
    )
    result, stored = views.ending(shell.now)
    assert (result.model_dump_json(), stored) == expected
    assert made == [0]  # one pass over the board, not one for each
    assert result.agents and all(r.result is None for r in result.agents)


def test_a_small_runs_end_stores_no_reports():
    shell = Shell(workflow("a", ("b", "a")))
    shell.loop()
    shell.complete("a")
    shell.complete("b")
    result, stored = shell.core.views.ending(shell.now)
    assert stored is None
    assert result.model_dump_json() == shell.core.views.result(shell.now).model_dump_json()


def loop_run() -> Shell:
    shell = Shell(plan(), max_parallel=5)
    shell.loop()
    complete(shell, "1", '["alpha", "beta", "gamma"]')
    for n, item in enumerate(("2[1]", "2[2]", "2[3]")):
        complete(shell, item, f"page {n}")
    return shell


def paused_and_ended() -> Shell:
    shell = large_run()
    shell.apply(shell.core.people.pause(PauseRequest(reason="checking **this**")))
    shell.apply(shell.core.people.end(EndRunRequest(reason="enough"), shell.now))
    return shell


def asked_a_person() -> Shell:
    shell = Shell(workflow("a"))
    shell.loop()
    dispatch = shell.running.pop("a")
    question = RequestPayload(question="which one? " + "many words " * 40, choices=["a", "b"])
    outcome = AgentOutcome(kind="question", request=question)
    shell.core.attempt_succeeded("a", shell.core.tasks["a"], dispatch, outcome, shell.now)
    shell.core.attempt_ended("a", dispatch)
    return shell


@pytest.mark.parametrize("make", [large_run, loop_run, paused_and_ended, asked_a_person])
def test_the_final_board_is_made_once_and_told_apart_from_the_board_before_v0_11_11(
    make, monkeypatch
):
    shell = make()
    views = shell.core.views
    board = views.whole_board(shell.now)
    before = views.whole_board(shell.now, as_shown=False)
    made: list[str] = []
    of = TaskView.of.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        TaskView, "of", classmethod(lambda cls, t, *a: made.append(t.id) or of(cls, t, *a))
    )
    assert views.final_board(shell.now) == (board, board != before)
    assert len(made) == len(shell.core.board.state.tasks)  # each task's line made once


def test_which_runs_boards_differ_from_before_v0_11_11():
    differ = {
        make.__name__: make().core.views.final_board(make().now)[1]
        for make in (large_run, loop_run, paused_and_ended)
    }
    assert differ == {"large_run": False, "loop_run": True, "paused_and_ended": True}
