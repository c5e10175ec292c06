"""The leader's judgment without a server: what the coordinator is asked at each point, and
how the core applies its verdicts within the person's bounds (xsky/leader/coordinator/,
oversight.py). The coordinator's answers are given here as it would return them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.unit.test_leader_core import T0, ref
from xsky.leader.coordinator.views import CoordinatorViews
from xsky.leader.core import CallPlanner, Consult, LeaderCore, Rejected, StartAgent, StopAgent
from xsky.leader.ledger import ConsultOutcome
from xsky.leader.state import AnswerRequest, EndRunRequest, RetryTaskRequest
from xsky.plan.agent_config import StallWindows
from xsky.plan.budget import Limits, RunBudget, Usage
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RequestPayload, RunInput, RunOptions

MODEL = "judge-1"


def core_of(*agents: WorkflowAgent, delegated: list[str] | None = None, **options) -> LeaderCore:
    options.setdefault("max_auto_replans", 1)
    core = LeaderCore(
        RunInput(
            workflow=Workflow(
                name="n", task_id="t", task_prompt="report the release date", agents=list(agents)
            ),
            options=RunOptions(**options),
        ),
        "run-1",
        T0,
    )
    core.judgment.on = True
    core.judgment.delegated = delegated or []
    return core


def llm(agent_id: str = "1", **kw) -> WorkflowAgent:
    return WorkflowAgent(id=agent_id, name="llm", task=f"task {agent_id}", **kw)


def start(core: LeaderCore) -> list[StartAgent]:
    return [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]


def said(point: str, verdict: str, **fields) -> ConsultOutcome:
    return ConsultOutcome(
        point=point, verdict=verdict, reason=f"because {verdict}", model=MODEL, **fields
    )  # type: ignore[arg-type]


def finish(core: LeaderCore, agent_id: str, outcome: AgentOutcome, judged=None) -> None:
    task = core.tasks[agent_id]
    core.attempt_succeeded(agent_id, task, task.attempt, outcome, T0, judged)
    core.attempt_ended(agent_id, task.attempt)


def answer(text: str = "the answer") -> AgentOutcome:
    return AgentOutcome(result=text, result_ref=ref("1"), provider=MODEL)


# -- results ---------------------------------------------------------------------------------------


def test_a_model_answer_is_shown_to_the_coordinator_with_its_task_and_dependencies() -> None:
    core = core_of(llm("1"), llm("2", depends=["1"]))
    start(core)
    finish(core, "1", answer("2026-05-01"), said("result", "accept"))
    (s,) = start(core)
    review = core.review_of("2", s.dispatch, answer("May 1st"))
    assert review is not None and review.point == "result"
    assert review.goal == "report the release date"
    assert review.task is not None and review.task.result == "May 1st"
    assert [d.task_id for d in review.dependencies] == ["T-1"]
    assert review.dependencies[0].result == "2026-05-01"


def test_a_result_the_leader_accepted_does_not_keep_saying_it_is_being_checked() -> None:
    """While the coordinator judges a result the row says "the leader checks the result
    against its task"; every completed task kept saying it afterwards."""
    from xsky.leader.tasks import note_of

    core = core_of(llm("1"))
    (s,) = start(core)
    assert core.judgment.judging("1", "result", T0)
    assert core.tasks["1"].last_progress == "the leader checks the result against its task"
    finish(core, "1", answer("2026-05-01"), said("result", "accept"))
    task = core.tasks["1"]
    assert task.stored == "completed" and task.last_progress is None
    assert "checks the result" not in note_of(task, "completed", None)


def test_a_tool_answer_and_an_offline_answer_are_not_sent_to_the_coordinator() -> None:
    core = core_of(llm("1"))
    (s,) = start(core)
    assert core.review_of("1", s.dispatch, AgentOutcome(result="x", provider=None)) is None
    assert core.review_of("1", s.dispatch, AgentOutcome(result="x", provider="offline")) is None


def test_a_result_sent_back_runs_again_with_the_instruction_then_is_kept_when_tries_are_spent() -> (
    None
):
    core = core_of(llm("1"), coordinator_retries=1)
    start(core)
    finish(core, "1", answer("no idea"), said("result", "retry", instruction="look it up"))
    task = core.tasks["1"]
    assert task.stored == "pending" and task.leader_retries == 1
    assert core.nudges_for("T-1") == ["look it up"]
    (again,) = start(core)
    assert again.dispatch == 2
    finish(core, "1", answer("still no idea"), said("result", "retry", instruction="try again"))
    assert task.stored == "completed" and task.result == "still no idea"
    kinds = [(e.verdict, e.by) for e in core.state.ledger.entries]
    assert kinds == [("retry", "leader"), ("accept", "leader")]
    assert "still doubted" in core.state.ledger.entries[-1].reason


def test_advise_mode_records_the_verdict_and_takes_the_result() -> None:
    core = core_of(llm("1"), coordinator="advise")
    start(core)
    finish(core, "1", answer(), said("result", "retry", instruction="redo"))
    assert core.tasks["1"].stored == "completed"
    (entry,) = core.state.ledger.entries
    assert (entry.by, entry.applied) == ("leader (advice)", False)


def test_mechanical_rules_send_an_unfinished_answer_back_even_with_the_coordinator_off() -> None:
    core = core_of(llm("1"), coordinator="off")
    (s,) = start(core)
    unfinished = answer("(the model ended without a final answer after 2 tool call(s); …)")
    assert core.review_of("1", s.dispatch, unfinished) is None  # no model is asked
    finish(core, "1", unfinished)
    assert core.tasks["1"].stored == "pending"
    assert core.state.ledger.entries[-1].by == "leader (mechanical)"
    start(core)
    finish(core, "1", answer("   "))  # empty, and no tries left: not work done
    assert core.tasks["1"].stored == "failed"
    assert "empty" in (core.tasks["1"].error or "")


def test_no_model_on_the_workers_turns_auto_into_off_and_says_why() -> None:
    core = core_of(llm("1"))
    # before any model answered: off for now, as the docs say of auto with no model
    said = core.judgment.mode_label()
    assert said == "auto: off until a model answers (the leader's worker has none)"
    core.judgment.worker_model = "gpt-x"
    assert core.judgment.mode_label().startswith("auto (act once a model agent")
    core.judgment.worker_model = None
    start(core)
    finish(core, "1", answer(), ConsultOutcome(point="result", verdict="unavailable"))
    assert core.tasks["1"].stored == "completed"
    assert core.judgment.mode() == "off"
    assert "no model configured" in core.judgment.mode_label()
    (s,) = start(core_of(llm("2")))
    assert core.review_of("1", s.dispatch, answer()) is None  # not asked again


# -- questions ------------------------------------------------------------------------------------


def asks(question: str = "which region?") -> AgentOutcome:
    return AgentOutcome(kind="question", request=RequestPayload(question=question), provider=MODEL)


def test_a_question_the_leader_can_answer_is_answered_and_the_task_goes_on() -> None:
    core = core_of(llm("1"))
    (s,) = start(core)
    review = core.review_of("1", s.dispatch, asks())
    assert review is not None and review.point == "question" and review.question == "which region?"
    finish(core, "1", asks(), said("question", "answer", answer="eu-west-1"))
    (request,) = core.state.requests.requests
    assert (request.status, request.by, request.answer) == ("answered", "leader", "eu-west-1")
    assert core.pending_requests() == []
    (again,) = start(core)
    given = core.inputs.agent_input("1", core.agents["1"], again.dispatch, [], None)
    assert [(a.answer, a.by) for a in given.answers] == [("eu-west-1", "leader")]


def test_a_question_it_cannot_answer_waits_for_a_person_with_the_leaders_note() -> None:
    core = core_of(llm("1"))
    start(core)
    finish(core, "1", asks(), said("question", "leave"))
    (request,) = core.pending_requests()
    assert request.by is None and "left it to you" in (request.suggestion or "")


def test_a_person_overrides_the_leaders_answer_within_the_grace_period_only() -> None:
    core = core_of(llm("1"), answer_grace=60)
    start(core)
    finish(core, "1", asks(), said("question", "answer", answer="eu-west-1"))
    req = AnswerRequest(request_id="Q-1", text="us-east-2")
    with pytest.raises(Rejected, match="are over"):
        core.checks.answer(req, T0 + timedelta(seconds=61))
    core.checks.answer(req, T0 + timedelta(seconds=30))
    core.people.answer(req, T0 + timedelta(seconds=30))
    assert [(a.answer, a.by) for a in core.state.briefs.answers["T-1"]] == [("us-east-2", "person")]
    assert "us-east-2" in core.nudges_for("T-1")[-1]
    assert core.state.ledger.entries[-1].by == "person"


# -- tool approvals -------------------------------------------------------------------------------


def wants(command: str, hard: bool = False) -> AgentOutcome:
    return AgentOutcome(
        kind="needs_approval",
        request=RequestPayload(tool="shell", arguments={"command": command}, hard=hard),
    )


def test_a_call_within_the_delegated_rules_is_approved_by_the_leader() -> None:
    core = core_of(llm("1"), delegated=["shell(make test:*)"])
    start(core)
    finish(core, "1", wants("make test -j2"), said("approval", "allow"))
    (request,) = core.state.requests.requests
    assert (request.status, request.by, request.decision) == ("answered", "leader", "allow_once")
    assert core.state.audit.entries[-1].by == "leader"
    assert core.state.briefs.approvals["T-1"][0].by == "leader"


def test_a_call_outside_them_stays_with_the_person_whatever_the_model_says() -> None:
    core = core_of(llm("1"), delegated=["shell(make test:*)"])
    start(core)
    finish(core, "1", wants("make deploy"), said("approval", "allow"))
    (request,) = core.pending_requests()
    assert request.by is None and request.decision is None
    assert "no delegated rule" in (request.suggestion or "")


def test_a_hard_approval_is_never_given_by_the_leader() -> None:
    core = core_of(llm("1"), delegated=["shell"])
    start(core)
    finish(core, "1", wants("make test", hard=True))
    (request,) = core.pending_requests()
    assert request.hard and request.decision is None


def test_a_deny_rule_holds_against_a_delegated_rule() -> None:
    core = core_of(llm("1"), delegated=["shell"])
    core.judgment.denied = ["shell(rm:*)"]
    start(core)
    finish(core, "1", wants("rm -rf build"))
    assert core.pending_requests()[0].decision is None


def test_an_off_goal_call_is_denied_by_the_leader_and_the_agent_is_told() -> None:
    core = core_of(llm("1"))
    start(core)
    finish(core, "1", wants("curl evil.example"), said("approval", "deny"))
    (request,) = core.state.requests.requests
    assert (request.by, request.decision) == ("leader", "deny")
    assert core.state.briefs.approvals["T-1"][0].decision == "deny"
    assert core.state.audit.entries[-1].effect == "deny"


# -- the goal ---------------------------------------------------------------------------------------


def all_done(core: LeaderCore) -> None:
    while ready := start(core):
        for s in ready:
            finish(core, s.agent_id, answer(), said("result", "accept"))


def test_a_goal_not_met_is_replanned_with_its_gap_within_the_cap() -> None:
    core = core_of(llm("1"), max_auto_replans=1)
    all_done(core)
    assert core.finished()
    goal = core.goal_review(T0)
    assert goal is not None and goal.point == "goal" and [t.task_id for t in goal.tasks] == ["T-1"]
    commands = core.goal_judged(1, said("goal", "not_met", gap="the date is missing"), T0)
    assert commands == [CallPlanner("the goal is not met: the date is missing")]
    assert core.state.plan.auto_replans == 1
    assert core.goal_review(T0) is None  # checked at this version


def test_a_goal_not_met_with_no_replans_left_asks_the_person_and_fails_if_nobody_answers() -> None:
    core = core_of(llm("1"), max_auto_replans=0, request_timeout=60)
    all_done(core)
    core.goal_review(T0)
    assert core.goal_judged(1, said("goal", "not_met", gap="no date"), T0) == []
    (request,) = core.pending_requests()
    assert (request.task_id, request.about, request.kind) == ("run", "goal", "escalation")
    assert not core.finished()
    core.tick(T0 + timedelta(seconds=61))  # nobody answered
    assert core.finished()
    result = core.views.result(T0)
    assert result.status == "failed" and "the goal is not met: no date" in result.summary


def test_a_goal_escalation_answered_by_a_person_replans_with_their_words() -> None:
    core = core_of(llm("1"), max_auto_replans=0)
    all_done(core)
    core.goal_review(T0)
    core.goal_judged(1, said("goal", "unsure"), T0)
    (request,) = core.pending_requests()
    core.checks.answer(AnswerRequest(request_id=request.id, text="add the time zone"), T0)
    core.people.answer(AnswerRequest(request_id=request.id, text="add the time zone"), T0)
    (replan,) = core.take_outbox()
    assert isinstance(replan, CallPlanner) and "add the time zone" in replan.reason
    assert core.state.plan.auto_replans == 0  # a person's word is not an automatic replan


def test_end_run_accepts_the_results_the_leader_doubted() -> None:
    core = core_of(llm("1"), max_auto_replans=0)
    all_done(core)
    core.goal_review(T0)
    core.goal_judged(1, said("goal", "not_met", gap="no date"), T0)
    core.people.end(EndRunRequest(reason="good enough"), T0)
    assert core.views.result(T0).status == "completed"


def test_a_goal_met_completes_and_says_so() -> None:
    core = core_of(llm("1"))
    all_done(core)
    core.goal_review(T0)
    core.goal_judged(1, said("goal", "met"), T0)
    result = core.views.result(T0)
    assert result.status == "completed" and result.goal_check == "met (leader): because met"


def test_offline_answers_leave_the_goal_unchecked_and_say_why() -> None:
    core = core_of(llm("1"))
    start(core)
    finish(core, "1", AgentOutcome(result="x", result_ref=ref("1"), provider="offline"))
    assert core.goal_review(T0) is None
    assert "answered offline" in (core.views.result(T0).goal_check or "")


# -- stalls ---------------------------------------------------------------------------------------


def stalled_core() -> tuple[LeaderCore, str]:
    core = core_of(
        llm("1"), coordinator="act", stall=StallWindows(nudge_after=10, restart_after=20)
    )
    start(core)
    core.tick(T0 + timedelta(seconds=11))  # nudged
    (consult,) = core.tick(T0 + timedelta(seconds=40))  # the restart step: judged instead
    assert isinstance(consult, Consult) and consult.consult.point == "stall"
    assert core.next_deadline(T0 + timedelta(seconds=40)) is None  # no ladder while judged
    return core, consult.agent_id


def test_a_stall_gets_a_root_cause_and_a_changed_plan() -> None:
    core, agent = stalled_core()
    commands = core.stall_judged(agent, said("stall", "replan", root_cause="the API moved"), T0)
    assert StopAgent(agent) in commands
    (replan,) = [c for c in commands if isinstance(c, CallPlanner)]
    assert "root cause: the API moved" in replan.reason
    assert "the API moved" in (core.tasks[agent].error or "")


def test_a_stall_the_coordinator_cannot_judge_takes_the_ladders_step() -> None:
    core, agent = stalled_core()
    assert core.stall_judged(agent, None, T0) == [StopAgent(agent)]  # restart, as ever
    assert core.state.ladder.levels["T-1"] == 2


def test_a_goal_escalation_is_withdrawn_when_a_person_replans_or_retries() -> None:
    for act in ("replan", "retry"):
        core = core_of(llm("1"), max_auto_replans=0)
        all_done(core)
        core.goal_review(T0)
        core.goal_judged(1, said("goal", "unsure"), T0)
        assert len(core.pending_requests()) == 1
        if act == "replan":
            core.apply_plan(core.state.plan.plan, "a person replanned", T0)
        else:
            core.tasks["1"].stored = "failed"
            core.board.counts = {"failed": 1}
            core.people.retry(RetryTaskRequest(task_id="T-1"), T0)
        assert core.pending_requests() == [], act
        assert core.state.requests.requests[-1].status == "withdrawn"


def test_auto_asks_no_model_before_one_has_answered_in_the_run() -> None:
    """A run of tools alone (maybe on workers with no llm queue at all): nothing waits on a
    coordinator, and the result says why the goal was not checked."""
    core = core_of(llm("1"))
    (s,) = start(core)
    tool_asks = AgentOutcome(
        kind="needs_approval", request=RequestPayload(tool="shell", arguments={"command": "ls"})
    )
    assert core.review_of("1", s.dispatch, tool_asks) is None
    finish(core, "1", AgentOutcome(result="listed", result_ref=ref("1")))
    assert core.goal_review(T0) is None
    assert "no model agent ran in this run" in (core.views.result(T0).goal_check or "")
    # The ledger says so too, not "not yet": it will not be checked.
    said = CoordinatorViews(core.judgment, core.board).ledger_view().goal_check or ""
    assert said.startswith("not checked: no model agent ran in this run"), said
    waiting = core_of(llm("1"))  # before the run's end: no model has answered yet
    said = CoordinatorViews(waiting.judgment, waiting.board).ledger_view().goal_check or ""
    assert said.startswith("not checked: no model answered for an agent of this run"), said
    explicit = core_of(llm("1"), coordinator="act")
    (s,) = start(explicit)
    assert explicit.review_of("1", s.dispatch, tool_asks) is not None


def test_the_coordinators_calls_count_against_the_budget_and_stop_when_it_has_no_room() -> None:
    core = core_of(llm("1"), llm("2"), budget=RunBudget(run=Limits(tokens=10_000), reserve=2000))
    starts = {s.agent_id: s.dispatch for s in start(core)}
    assert sorted(starts) == ["1", "2"]  # two 2,000-token shares fit
    used = Usage(input_tokens=5000, output_tokens=100, calls=1)
    finish(core, "1", answer(), said("result", "accept", usage=used))
    assert core.state.budget.spend.sources["leader"].tokens == 5100
    assert core.state.budget.spend.total.tokens >= 5100
    # 10,000 − 5,100 (the leader) − 2,000 (T-1 said nothing of its own: its whole share is
    # charged) − 2,000 (T-2 holds) leaves less than one 2,000-token reservation
    assert "less than one reservation" in (core.budget.no_room_to_judge() or "")
    assert core.review_of("2", starts["2"], answer()) is None  # taken by the mechanical rules


# -- calls in doubt (xsky/in_doubt.py) ---------------------------------------------------------


def in_doubt(command: str) -> AgentOutcome:
    return AgentOutcome(
        kind="question",
        request=RequestPayload(
            question=f"T-1: `{command}` may have run [call c1, #1] …",
            tool="shell",
            arguments={"command": command},
            choices=["again", "skip", "done"],
        ),
        provider=MODEL,
    )


def test_a_call_in_doubt_is_left_to_a_person_unless_a_delegated_rule_covers_it() -> None:
    core = core_of(llm("1"), delegated=["shell(touch:*)"])
    (s,) = start(core)
    assert core.review_of("1", s.dispatch, in_doubt("curl -X POST https://x/pay")) is None
    finish(core, "1", in_doubt("curl -X POST https://x/pay"))
    (request,) = core.pending_requests()
    assert request.by is None and "no delegated rule" in (request.suggestion or "")
    covered = core_of(llm("1"), delegated=["shell(touch:*)"])
    (s,) = start(covered)
    review = covered.review_of("1", s.dispatch, in_doubt("touch deployed.flag"))
    assert review is not None and review.point == "question"


def test_the_leader_answers_a_call_in_doubt_only_with_one_of_its_choices() -> None:
    core = core_of(llm("1"), delegated=["shell(touch:*)"])
    start(core)
    finish(
        core, "1", in_doubt("touch deployed.flag"), said("question", "answer", answer="yes, retry")
    )
    (request,) = core.pending_requests()
    assert request.by is None and "none of again, skip, done" in (request.suggestion or "")
    decided = core_of(llm("1"), delegated=["shell(touch:*)"])
    start(decided)
    finish(
        decided, "1", in_doubt("touch deployed.flag"), said("question", "answer", answer="again")
    )
    (request,) = decided.state.requests.requests
    assert (request.status, request.by, request.answer) == ("answered", "leader", "again")


def test_the_leaders_line_has_no_parenthesis_inside_another_wherever_it_is_shown() -> None:
    """walk11: 'leader: off (no model configured on the workers (T-1 was answered offline)):
    mechanical rules only' — reworded by the CLI only (cli/board.py leader_line); the board's
    notes (the live page, the Web UI's pane) and the ledger query said it nested (patch
    leader-line-one-deep)."""
    core = core_of(llm("1"))
    start(core)
    finish(core, "1", AgentOutcome(result="x", result_ref=ref("1"), provider="offline"))
    line = "no model configured on the workers; T-1 was answered offline"
    assert core.judgment.mode_label().startswith(f"off ({line}): mechanical rules only")
    assert core.views.coordinator.ledger_view().mode.startswith(f"off ({line}):")
    notes = core.views.board_page(T0).notes
    (leader,) = [n for n in notes if n.startswith("leader:")]
    assert leader.startswith(f"leader: off ({line}): mechanical rules only"), leader
    for text in [leader, core.judgment.mode_label(), *core.views.notices(T0, markdown=True)]:
        depth = deepest = 0
        for ch in text:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            deepest = max(deepest, depth)
        assert deepest <= 1, text


def test_before_the_patch_the_leaders_note_is_as_it_was() -> None:
    core = core_of(llm("1"))
    core.board.patched = lambda patch_id: patch_id != "leader-line-one-deep"
    start(core)
    finish(core, "1", AgentOutcome(result="x", result_ref=ref("1"), provider="offline"))
    assert core.judgment.ledger.note == (
        "no model configured on the workers (T-1 was answered offline)"
    )
