"""The leader's verdicts, exactly (issue: verdicts that can be trusted): a deterministic
failure is final and not replanned on its own; a run may hold open after a failure with an
escalation that retry, skip, replan or end_run decide; requests end with their run; a
person's cancel survives a replan; a follow-up run carries what completed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.unit.test_leader_core import T0, ref
from xsky.leader.core import AttemptFailure, CallPlanner, LeaderCore, Rejected, StartAgent
from xsky.leader.state import (
    AnswerRequest,
    EndRunRequest,
    RetryTaskRequest,
    SkipTaskRequest,
    TaskRequest,
)
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import (
    AgentOutcome,
    AgentReport,
    RequestPayload,
    ResumeFrom,
    RunInput,
    RunOptions,
)


def chain(*ids: str) -> Workflow:
    """Agents each after the one before."""
    agents = [
        WorkflowAgent(id=a, name="shell", task=f"step {a}", depends=[ids[i - 1]] if i else [])
        for i, a in enumerate(ids)
    ]
    return Workflow(name="w", task_id="w", agents=agents)


def core_for(wf: Workflow, **options: object) -> LeaderCore:
    return LeaderCore(RunInput(workflow=wf, options=RunOptions(**options)), "run-1", T0)


def start(core: LeaderCore, agent_id: str) -> int:
    starts = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    (found,) = [c for c in starts if c.agent_id == agent_id]
    return found.dispatch


def fail(core: LeaderCore, agent_id: str, failure: AttemptFailure) -> list[object]:
    dispatch = start(core, agent_id)
    commands = core.attempt_failed(agent_id, core.tasks[agent_id], dispatch, failure, T0)
    core.attempt_ended(agent_id, dispatch)
    return list(commands)


def complete(core: LeaderCore, agent_id: str) -> None:
    dispatch = start(core, agent_id)
    outcome = AgentOutcome(result=f"r{agent_id}", result_ref=ref(agent_id))
    core.attempt_succeeded(agent_id, core.tasks[agent_id], dispatch, outcome, T0)
    core.attempt_ended(agent_id, dispatch)


EXIT_1 = AttemptFailure("the command exited with status 1", deterministic=True)
TIMEOUT = AttemptFailure("GET http://x timed out — retries exhausted")


def test_a_deterministic_failure_is_final_and_the_run_ends_failed_without_a_replan() -> None:
    core = core_for(chain("1", "2"))
    assert fail(core, "1", EXIT_1) == []
    assert core.state.plan.auto_replans == 0 and not core.replanning
    assert core.finished() and core.views.result(T0).status == "failed"


def test_a_transient_failure_still_replans_and_a_run_may_opt_in_for_every_failure() -> None:
    assert [type(c) for c in fail(core_for(chain("1")), "1", TIMEOUT)] == [CallPlanner]
    opted = core_for(chain("1"), replan_deterministic=True)
    assert [type(c) for c in fail(opted, "1", EXIT_1)] == [CallPlanner]


def test_hold_on_failure_keeps_the_run_open_with_an_escalation_that_an_answer_cannot_close() -> (
    None
):
    core = core_for(chain("1", "2"), hold_on_failure=600)
    fail(core, "1", EXIT_1)
    (hold,) = core.pending_requests()
    assert hold.kind == "escalation" and hold.hold and hold.task_id == "T-1"
    assert "retry, skip, replan, or end the run" in hold.text
    assert hold.deadline == T0 + timedelta(seconds=600)
    assert not core.finished() and core.views.waiting_on_people() == 1
    with pytest.raises(Rejected, match="retry_task, skip_task or replan"):
        core.checks.answer(AnswerRequest(request_id=hold.id, text="try harder"))


def test_a_retry_of_a_held_task_closes_its_escalation_and_the_run_goes_on() -> None:
    core = core_for(chain("1", "2"), hold_on_failure=600)
    fail(core, "1", EXIT_1)
    core.checks.retry(RetryTaskRequest(task_id="T-1"))
    core.people.retry(RetryTaskRequest(task_id="T-1"), T0)
    assert core.pending_requests() == []
    complete(core, "1")
    complete(core, "2")
    assert core.finished() and core.views.result(T0).status == "completed"


def test_a_skip_of_a_held_task_closes_its_escalation() -> None:
    core = core_for(chain("1", "2"), hold_on_failure=600)
    fail(core, "1", EXIT_1)
    core.people.skip(SkipTaskRequest(task_id="T-1", result="done by hand"), T0)
    assert core.pending_requests() == []
    assert core.board.ready_ids() == ["2"]


def test_end_closes_a_held_run_which_ends_failed_and_is_refused_while_agents_run() -> None:
    core = core_for(
        Workflow(
            name="w",
            task_id="w",
            agents=[
                WorkflowAgent(id="1", name="shell", task="a"),
                WorkflowAgent(id="2", name="shell", task="b"),
            ],
        ),
        hold_on_failure=600,
    )
    starts = core.dispatch(T0)
    assert len(starts) == 2
    core.attempt_failed("1", core.tasks["1"], 1, EXIT_1, T0)
    core.attempt_ended("1", 1)
    with pytest.raises(Rejected, match=r"agents are still running \(T-2\)"):
        core.checks.end(EndRunRequest())
    core.attempt_succeeded(
        "2", core.tasks["2"], 1, AgentOutcome(result="r", result_ref=ref("2")), T0
    )
    core.attempt_ended("2", 1)
    assert not core.finished()  # held
    core.checks.end(EndRunRequest(reason="fixed by hand"))
    result = core.people.end(EndRunRequest(reason="fixed by hand"), T0)
    assert "ended by a person: fixed by hand" in result.message
    assert core.pending_requests() == [] and core.finished()
    assert core.views.result(T0).status == "failed"  # a task failed: not "cancelled"


def test_a_hold_expires_and_the_run_ends() -> None:
    core = core_for(chain("1"), hold_on_failure=60)
    fail(core, "1", EXIT_1)
    core.tick(T0 + timedelta(seconds=61))
    assert core.pending_requests() == [] and core.finished()


def test_closing_requests_withdraws_questions_and_reviews_and_drops_waiting_notes() -> None:
    core = core_for(chain("1", "2"))
    dispatch = start(core, "1")
    question = AgentOutcome(kind="question", request=RequestPayload(question="which branch?"))
    core.attempt_succeeded("1", core.tasks["1"], dispatch, question, T0)
    core.attempt_ended("1", dispatch)
    assert core.views.waiting_on_people() == 1
    assert (core.tasks["1"].last_progress or "").startswith("waiting for Q-1")
    core.people.close_requests("the run was cancelled", T0)
    assert core.pending_requests(with_review=True) == [] and core.views.waiting_on_people() == 0
    assert core.views.search_values()["XskyPending"] == 0
    assert core.requests.get("Q-1").status == "withdrawn"  # type: ignore[union-attr]
    assert not (core.tasks["1"].last_progress or "").startswith("waiting for")

    reviewed = core_for(chain("1"), review=True)
    assert reviewed.views.waiting_on_people() == 1
    reviewed.people.close_requests("the run was cancelled", T0)
    assert reviewed.views.waiting_on_people() == 0 and reviewed.state.plan.review == "none"


def test_a_finished_task_keeps_no_waiting_note() -> None:
    core = core_for(chain("1"))
    dispatch = start(core, "1")
    question = AgentOutcome(kind="question", request=RequestPayload(question="which?"))
    core.attempt_succeeded("1", core.tasks["1"], dispatch, question, T0)
    core.attempt_ended("1", dispatch)
    core.people.answer(AnswerRequest(request_id="Q-1", text="main"), T0)
    complete(core, "1")
    assert core.tasks["1"].last_progress is None


def test_a_cancelled_task_stays_cancelled_through_a_replan_unless_redefined() -> None:
    wf = chain("1", "2")
    core = core_for(wf)
    core.people.cancel(TaskRequest(task_id="T-2"), T0)
    core.apply_plan(wf, "a person asked: go on", T0)
    assert core.tasks["2"].stored == "cancelled"
    redefined = wf.model_copy(
        update={"agents": [wf.agents[0], wf.agents[1].model_copy(update={"task": "step 2, again"})]}
    )
    core.apply_plan(redefined, "a person asked: do 2 differently", T0)
    assert core.tasks["2"].stored == "pending"

    old = core_for(wf)  # a run recorded before the patch: every cancelled task goes back
    old.people.cancel(TaskRequest(task_id="T-2"), T0)
    old.apply_plan(wf, "replan", T0, keep_cancelled=False)
    assert old.tasks["2"].stored == "pending"


def test_a_follow_up_run_carries_completed_results_and_reruns_the_task_and_its_dependents() -> None:
    wf = Workflow(
        name="w",
        task_id="w",
        agents=[
            WorkflowAgent(id="1", name="shell", task="a"),
            WorkflowAgent(id="2", name="shell", task="b", depends=["1"]),
            WorkflowAgent(id="3", name="shell", task="c", depends=["2"]),
            WorkflowAgent(id="4", name="shell", task="d", depends=["1"]),
        ],
    )
    carried = [
        AgentReport(id="1", task_id="T-1", name="shell", status="completed", result="r1"),
        AgentReport(id="2", task_id="T-2", name="shell", status="failed", error="exit 1"),
        AgentReport(
            id="4", task_id="T-4", name="shell", status="completed", result="r4", provider="offline"
        ),
    ]
    core = LeaderCore(
        RunInput(
            workflow=wf,
            resume=ResumeFrom(run_id="run-0", workspace_of="run-0", carried=carried, rerun=["2"]),
        ),
        "run-1",
        T0,
    )
    assert {a: core.tasks[a].stored for a in "1234"} == {
        "1": "completed",
        "2": "pending",
        "3": "pending",
        "4": "completed",
    }
    assert core.tasks["1"].result == "r1"
    # A carried offline answer keeps its mark (the board says "completed (offline)").
    assert core.tasks["4"].provider == "offline" and core.tasks["1"].provider is None
    assert [c.agent_id for c in core.dispatch(T0) if isinstance(c, StartAgent)] == ["2"]
    assert (
        core.state.plan.resumes == "run-0" and core.views.search_values()["XskyResumes"] == "run-0"
    )
    assert "resumes run-0: 2 results carried over; T-2, T-3 run again" in (
        core.state.plan.history[0].reason
    )
    assert core.inputs.agent_input("2", core.agents["2"], 1, [], None).workspace_of == "run-0"


def test_a_retry_with_new_text_of_a_direct_tool_agent_says_its_call_is_the_same() -> None:
    """A shell agent runs its <config> command, not its task text: "T-1 will run again" alone,
    with the board showing the new text, let a person think the new text would be done."""
    plan = chain("1", "2")
    plan.agents[0].config = {"tool": "shell", "command": "curl -fsS https://example.org/x"}
    core = core_for(plan, hold_on_failure=600)
    fail(core, "1", EXIT_1)
    req = RetryTaskRequest(task_id="T-1", task="try the mirror")
    core.checks.retry(req)
    said = core.people.retry(req, T0).message
    assert said.startswith("T-1 will run again — with the same call") and "replan" in said
    # a model agent reads its new text: nothing more is said
    model = core_for(chain("1", "2"), hold_on_failure=600)
    fail(model, "1", EXIT_1)
    assert model.people.retry(req, T0).message == "T-1 will run again"
