"""The core's budget without a server, on a simulated clock: admission, reservations,
settlement, the budget's escalations and set_budget — and a Hypothesis state machine: whatever
attempts report (or fail to), the settled spend never exceeds the limit by more than one
reservation, and nothing is dispatched while the budget is spent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from xsky.artifacts import ArtifactRef
from xsky.leader.core import AttemptFailure, LeaderCore, StartAgent
from xsky.leader.state import (
    AnswerRequest,
    LeaderState,
    RetryTaskRequest,
    SetBudgetRequest,
)
from xsky.plan.budget import Limits, RunBudget, TaskSpend, Usage, UsageReport
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, ProgressReport, RequestPayload, RunInput, RunOptions

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def ref(agent_id: str) -> ArtifactRef:
    return ArtifactRef(uri=f"artifact:run-1/{agent_id}/r", size=1, sha256="0" * 64, preview="r")


def plan(n: int, **config: object) -> Workflow:
    agents = [
        WorkflowAgent(id=str(i), name="llm", task=f"step {i}", config=dict(config) or None)
        for i in range(1, n + 1)
    ]
    return Workflow(name="budget", task_id="budget", agents=agents)


def core_of(wf: Workflow, budget: RunBudget | None, parallel: int = 20, **options) -> LeaderCore:
    opts = RunOptions(max_parallel=parallel, budget=budget, **options)
    return LeaderCore(RunInput(workflow=wf, options=opts), "run-1", T0)


def used(tokens: int, conversation: str = "c") -> UsageReport:
    u = Usage(input_tokens=tokens - tokens // 10, output_tokens=tokens // 10, calls=1)
    return UsageReport(conversation=conversation, total=u, dispatch=u)


def complete(core: LeaderCore, start: StartAgent, tokens: int, now: datetime = T0) -> None:
    outcome = AgentOutcome(
        result="r", result_ref=ref(start.agent_id), usage=used(tokens, f"c{start.agent_id}")
    )
    core.attempt_succeeded(start.agent_id, core.tasks[start.agent_id], start.dispatch, outcome, now)
    core.attempt_ended(start.agent_id, start.dispatch)


def test_twenty_agents_on_a_budget_for_twelve_pause_with_one_escalation_then_finish_when_raised():
    core = core_of(plan(20), RunBudget(run=Limits(tokens=12_000), reserve=1000))
    starts = core.dispatch(T0)
    assert len(starts) == 12 and {core.flights[s.agent_id].share.tokens for s in starts} == {1000}  # type: ignore[union-attr]
    given = core.inputs.agent_input("1", core.agents["1"], 1, [], None).budget_share
    assert given is not None and given.tokens == 1000  # the share travels to the agent
    for s in starts:
        complete(core, s, 1000)
    assert core.dispatch(T0) == []  # spent: nothing more starts
    (request,) = core.pending_requests()
    assert (request.id, request.about, request.task_id) == ("E-1", "budget", "run")
    assert request.text.startswith(
        "budget: 12,000 of 12,000 tokens used, and the next agent (T-13)"
    )
    assert (
        "starter.py budget run-1 tokens=…" in request.text
        and "starter.py end run-1" in request.text
        and "set_budget update" in request.text
    )
    assert core.dispatch(T0) == [] and len(core.pending_requests()) == 1  # still one E-n
    assert not core.finished()

    core.checks.set_budget(SetBudgetRequest(tokens=20_000))
    result = core.people.set_budget(SetBudgetRequest(tokens=20_000), T0)
    assert "E-1 closed: dispatch goes on" in result.message and not core.pending_requests()
    rest = core.dispatch(T0)
    assert len(rest) == 8
    for s in rest:
        complete(core, s, 1000)
    assert core.finished()
    run = core.views.result(T0)
    assert run.status == "completed" and run.usage.tokens == 20_000
    assert [a.usage.tokens for a in run.agents] == [1000] * 20  # type: ignore[union-attr]
    assert run.budget is not None and run.budget.summary() == "budget: 20,000 of 20,000 tokens"


def test_a_report_settles_once_however_often_it_comes_and_a_late_one_still_counts():
    core = core_of(plan(1), RunBudget(run=Limits(tokens=10_000)))
    (s,) = core.dispatch(T0)
    report = ProgressReport(task_id="T-1", dispatch=1, usage=used(600, "c1"))
    core.report_progress(report, T0)
    core.report_progress(report, T0)
    assert core.state.budget.spend.total.tokens == 600
    assert (
        core.budget.budget_view(T0).reserved_tokens == 4096 - 600
    )  # the rest of its share is held
    complete(core, s, 900)  # the total grew to 900: 300 more
    core.report_progress(ProgressReport(task_id="T-1", dispatch=1, usage=used(900, "c1")), T0)
    assert core.state.budget.spend.total.tokens == 900 and core.tasks["1"].spend.usage.tokens == 900  # type: ignore[union-attr]
    core.report_progress(ProgressReport(task_id="T-1", dispatch=1, usage=used(950, "c1")), T0)
    assert core.state.budget.spend.total.tokens == 950  # a report after the end: spend is spend


def test_an_attempt_that_ends_without_saying_is_charged_its_share_until_its_conversation_says():
    core = core_of(plan(1), RunBudget(run=Limits(tokens=10_000), reserve=2000))
    (s,) = core.dispatch(T0)
    core.report_progress(ProgressReport(task_id="T-1", dispatch=1, usage=used(500, "c1")), T0)
    core.attempt_failed("1", core.tasks["1"], 1, AttemptFailure("lost", lost=True), T0)
    core.attempt_ended("1", 1)
    assert core.state.budget.spend.unconfirmed.tokens == 1500  # the rest of its 2,000
    core.people.retry(RetryTaskRequest(task_id="T-1"), T0)
    (again,) = core.dispatch(T0)
    complete(core, again, 1700)  # the conversation's total: the lost attempt's 1,200 with it
    assert (
        core.state.budget.spend.unconfirmed.empty() and core.state.budget.spend.total.tokens == 1700
    )


def test_a_budget_stop_returns_the_task_to_pending_and_its_next_share_covers_its_need():
    core = core_of(plan(1), RunBudget(run=Limits(tokens=50_000), reserve=1000))
    (s,) = core.dispatch(T0)
    stop = AgentOutcome(
        kind="budget",
        usage=used(1000, "c1"),
        need=Usage(input_tokens=1500, output_tokens=256),
        stopped="tokens",
    )
    core.attempt_succeeded("1", core.tasks["1"], 1, stop, T0)
    core.attempt_ended("1", 1)
    assert core.tasks["1"].stored == "pending" and not core.pending_requests()
    (again,) = core.dispatch(T0)
    assert core.flights["1"].share.tokens == 2000  # type: ignore[union-attr]  # twice its last share
    assert again.dispatch == 2


def test_an_agent_past_its_own_cap_waits_on_its_own_escalation_until_its_cap_is_raised():
    core = core_of(plan(2), RunBudget(run=Limits(tokens=50_000), per_agent=Limits(tokens=1000)))
    first, second = core.dispatch(T0)
    assert core.flights["1"].share.tokens == 1000  # type: ignore[union-attr]
    stop = AgentOutcome(
        kind="budget", usage=used(900, "c1"), need=Usage(input_tokens=300), stopped="tokens"
    )
    core.attempt_succeeded("1", core.tasks["1"], 1, stop, T0)
    core.attempt_ended("1", 1)
    complete(core, second, 500)
    assert core.dispatch(T0) == []
    (request,) = core.pending_requests()
    assert request.task_id == "T-1" and request.about == "budget"
    assert request.text.startswith("budget: T-1 used 900 of 1,000 tokens (its own cap)")
    # the command it gives runs as it is written, once the figure is put in (not KEY=…)
    assert f"starter.py budget {core.run_id} --task T-1 tokens=…" in request.text
    assert core.tasks["1"].waiting_on == request.id
    core.people.set_budget(SetBudgetRequest(task_id="T-1", tokens=5000), T0)
    assert not core.pending_requests()
    (again,) = core.dispatch(T0)
    assert core.flights["1"].share.tokens == 4100  # type: ignore[union-attr]


def test_time_up_stops_new_work_and_nobody_raising_it_ends_the_run_failed_with_the_reason():
    core = core_of(plan(3), RunBudget(run=Limits(minutes=30)), parallel=1, request_timeout=3600)
    (s,) = core.dispatch(T0)
    assert core.flights["1"].share.until == T0 + timedelta(minutes=30)  # type: ignore[union-attr]
    later = T0 + timedelta(minutes=31)
    complete(core, s, 100, later)
    assert core.dispatch(later) == []
    (request,) = core.pending_requests()
    assert request.text.startswith("budget: 31 of 30 minutes used; raise it")
    end = later + timedelta(hours=1)
    core.tick(end)
    assert core.finished()
    run = core.views.result(end)
    assert run.status == "failed"
    assert run.summary.startswith("budget spent: 31 of 30 minutes used; nobody raised it within 1h")
    assert [a.status for a in run.agents] == ["completed", "cancelled", "cancelled"]


def test_past_the_agent_count_no_new_task_starts_but_a_started_one_goes_on():
    core = core_of(plan(3), RunBudget(run=Limits(agents=1)), parallel=3)
    (s,) = core.dispatch(T0)
    ask = AgentOutcome(kind="question", request=RequestPayload(question="which?"), usage=used(10))
    core.attempt_succeeded("1", core.tasks["1"], 1, ask, T0)
    core.attempt_ended("1", 1)
    assert core.dispatch(T0) == []
    budget_request = next(r for r in core.pending_requests() if r.about == "budget")
    assert budget_request.text.startswith("budget: 1 of 1 agents started")
    question = next(r for r in core.pending_requests() if r.kind == "question")
    core.people.answer(AnswerRequest(request_id=question.id, text="that"), T0)
    (again,) = core.dispatch(T0)
    assert again.agent_id == "1"  # started before: it may go on


def test_a_run_request_is_never_taken_for_the_task_of_an_agent_named_run():
    wf = Workflow(
        name="b",
        task_id="b",
        agents=[
            WorkflowAgent(id="run", name="llm", task="t"),
            WorkflowAgent(id="2", name="llm", task="u"),
        ],
    )
    core = core_of(wf, RunBudget(run=Limits(tokens=5000), reserve=4000), parallel=1)
    (s,) = core.dispatch(T0)
    complete(core, s, 3000)
    assert core.dispatch(T0) == []
    (request,) = core.pending_requests()
    assert request.task_id == "run" and core.tasks["run"].waiting_on is None
    core.tick(T0 + timedelta(days=2))  # expires: the run ends, the agent "run" stays completed
    assert core.tasks["run"].stored == "completed" and core.tasks["2"].stored == "cancelled"


def test_the_leader_settles_usage_of_its_own_under_a_source():
    core = core_of(plan(1), RunBudget(run=Limits(tokens=10_000)))
    core.settle("leader", Usage(input_tokens=700, output_tokens=100, calls=1))
    view = core.budget.budget_view(T0)
    assert view.spent.tokens == 800 and view.sources["leader"].tokens == 800
    assert "leader: 800 tokens" in view.summary()


def test_a_run_without_a_budget_reserves_nothing_and_shares_nothing():
    core = core_of(plan(3), None)
    starts = core.dispatch(T0)
    assert len(starts) == 3 and core.flights == {}
    assert core.inputs.agent_input("1", core.agents["1"], 1, [], None).budget_share is None
    complete(core, starts[0], 100)
    assert (
        core.state.budget.spend.total.tokens == 100 and core.state.budget.limits is None
    )  # spend is shown
    assert not any(n.startswith("budget:") for n in core.views.notices(T0))


def test_continue_as_new_carries_the_spend_and_the_limits():
    core = core_of(plan(4), RunBudget(run=Limits(tokens=3000), reserve=1000), parallel=2)
    for s in core.dispatch(T0):
        complete(core, s, 1000)
    core.people.set_budget(SetBudgetRequest(tokens=5000), T0)
    state = LeaderState.model_validate_json(core.views.snapshot())
    after = LeaderCore(
        core.continue_input().model_copy(update={"workflow": None, "state": state}), "run-1", T0
    )
    assert after.budget.budget_view(T0) == core.budget.budget_view(T0)
    assert after.state.budget.limits is not None and after.state.budget.limits.run.tokens == 5000
    assert len(after.dispatch(T0)) == 2


# -- the state machine -----------------------------------------------------------------------------


class BudgetMachine(RuleBasedStateMachine):
    """Attempts report what they used (at most their share, as the agent's meter keeps them),
    through progress, outcome or failure — or not at all (a lost worker); people raise and
    lower the budget; the run continues as new."""

    @initialize(
        n=st.integers(1, 10),
        limit=st.integers(1000, 12_000),
        reserve=st.integers(200, 3000),
        parallel=st.integers(1, 5),
        capped=st.booleans(),
    )
    def start(self, n: int, limit: int, reserve: int, parallel: int, capped: bool) -> None:
        cap = Limits(tokens=reserve * 2) if capped else None
        budget = RunBudget(run=Limits(tokens=limit), reserve=reserve, per_agent=cap)
        self.core = core_of(plan(n), budget, parallel)
        self.running: dict[str, int] = {}
        self.true: dict[str, int] = {}  # agent id → tokens its conversation really used
        self.limits = [limit]  # every limit in force so far
        self.shares: list[int] = [reserve]

    def _dispatch(self) -> None:
        core = self.core
        before = core.budget._used().tokens
        starts = core.dispatch(T0)
        for s in starts:
            self.running[s.agent_id] = s.dispatch
            share = core.flights[s.agent_id].share
            assert share is not None and share.tokens is not None
            self.shares.append(share.tokens)
        if starts:  # admitted: what was spent and what is held fit the limit
            limit = core.state.budget.limits.run.tokens  # type: ignore[union-attr]
            assert before + core.budget._held()[0] <= limit, "dispatched past the budget"

    @rule()
    def dispatch(self) -> None:
        self._dispatch()

    def _use(self, agent_id: str, fraction: float) -> UsageReport:
        share = self.core.flights[agent_id].share
        spent = int((share.tokens or 0) * fraction)  # type: ignore[union-attr]
        self.true[agent_id] = self.true.get(agent_id, 0) + spent
        return UsageReport(
            conversation=f"c{agent_id}", total=Usage(input_tokens=self.true[agent_id])
        )

    @precondition(lambda self: self.running)
    @rule(
        data=st.data(),
        kind=st.sampled_from(["completed", "budget", "question", "failed", "lost"]),
        fraction=st.floats(0, 1),
    )
    def attempt_ends(self, data: st.DataObject, kind: str, fraction: float) -> None:
        core = self.core
        agent_id = data.draw(st.sampled_from(sorted(self.running)))
        dispatch = self.running.pop(agent_id)
        report = self._use(agent_id, 1.0 if kind == "budget" else fraction)
        task = core.tasks[agent_id]
        if data.draw(st.booleans()):  # a progress report first (the same total again later)
            core.report_progress(
                ProgressReport(task_id=task.id, dispatch=dispatch, usage=report), T0
            )
        if kind in ("failed", "lost"):
            failure = AttemptFailure(
                "boom", usage=report if kind == "failed" else None, lost=kind == "lost"
            )
            core.attempt_failed(agent_id, task, dispatch, failure, T0)
        else:
            outcome = AgentOutcome(
                kind=kind,  # type: ignore[arg-type]
                result="r" if kind == "completed" else None,
                result_ref=ref(agent_id) if kind == "completed" else None,
                request=RequestPayload(question="?") if kind == "question" else None,
                usage=report,
                need=Usage(input_tokens=100) if kind == "budget" else None,
                stopped="tokens" if kind == "budget" else None,
            )
            core.attempt_succeeded(agent_id, task, dispatch, outcome, T0)
        core.attempt_ended(agent_id, dispatch)

    @rule(tokens=st.integers(500, 30_000))
    def set_budget(self, tokens: int) -> None:
        req = SetBudgetRequest(tokens=tokens)
        self.core.checks.set_budget(req)
        self.core.people.set_budget(req, T0)
        self.limits.append(tokens)

    @rule()
    def people_answer(self) -> None:
        for r in self.core.pending_requests():
            if r.kind == "question":
                self.core.people.answer(AnswerRequest(request_id=r.id, text="go"), T0)

    @precondition(lambda self: not self.running)
    @rule()
    def continue_as_new(self) -> None:
        core = self.core
        state = LeaderState.model_validate_json(core.views.snapshot())
        inp = core.continue_input().model_copy(update={"workflow": None, "state": state})
        self.core = LeaderCore(inp, core.run_id, T0)
        assert self.core.budget.budget_view(T0) == core.budget.budget_view(T0)

    @invariant()
    def spend_stays_within_the_limit_and_one_reservation(self) -> None:
        if not hasattr(self, "core"):
            return
        spend = self.core.state.budget.spend
        true = sum(self.true.values())
        # settled: never more than was used; with what is charged unconfirmed: never less
        assert spend.total.tokens <= true <= spend.total.tokens + spend.unconfirmed.tokens
        assert true <= max(self.limits) + max(self.shares), "spent past the limit"

    @invariant()
    def what_people_see_changes_nothing(self) -> None:
        if not hasattr(self, "core"):
            return
        core = self.core
        before = (core.state.model_dump_json(), core.changed, list(core.board._heap))
        core.views.board_page(T0)
        core.views.notices(T0)
        core.views.result(T0)
        assert (core.state.model_dump_json(), core.changed, list(core.board._heap)) == before


BudgetMachine.TestCase.settings = settings(
    max_examples=int(__import__("os").environ.get("XSKY_CORE_EXAMPLES", "200")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_budget_state_machine = BudgetMachine.TestCase


def test_a_resumed_agents_tokens_are_its_conversations_not_the_sum_of_its_running_totals():
    """An outcome carries its conversation's running total: an agent that asked a question
    (3,000 tokens) and then finished (3,000 more, 6,000 in all) used 6,000 — the board said
    9,000, adding the totals, while the budget said 6,000. A new conversation (a changed
    definition) adds to the earlier one's."""
    core = core_of(plan(1), None, parallel=1)
    (s,) = core.dispatch(T0)
    ask = AgentOutcome(
        kind="question", request=RequestPayload(question="which?"), usage=used(3000), tokens=3000
    )
    core.attempt_succeeded("1", core.tasks["1"], s.dispatch, ask, T0)
    core.attempt_ended("1", s.dispatch)
    assert core.tasks["1"].tokens == 3000
    question = next(r for r in core.pending_requests() if r.kind == "question")
    core.people.answer(AnswerRequest(request_id=question.id, text="that"), T0)
    (again,) = core.dispatch(T0)
    done = AgentOutcome(result="r", result_ref=ref("1"), usage=used(6000), tokens=6000)
    core.attempt_succeeded("1", core.tasks["1"], again.dispatch, done, T0)
    core.attempt_ended("1", again.dispatch)
    task = core.tasks["1"]
    assert task.stored == "completed"
    assert task.tokens == 6000 == core.state.budget.spend.total.tokens
    # another conversation of the same task counts on top (as the budget settles it)
    core.budget.settle_usage("1", used(500, "another"))
    core.board.attempt_ended_with(task, AgentOutcome(result="r", tokens=500, attempt=1))
    assert task.tokens == 6500


def test_a_task_that_spends_nothing_starts_while_the_budget_makes_one_before_it_wait():
    """An approved direct call stayed pending behind a model agent the run's budget made wait
    (dispatch stopped at the first wait). With the patch it starts; without (a run replaying
    from before), nothing behind the wait starts, as then."""
    wf = Workflow(
        name="b",
        task_id="b",
        agents=[
            WorkflowAgent(id="1", name="llm", task="think"),
            WorkflowAgent(id="2", name="llm", task="t", config={"tool": "noop", "result": "x"}),
        ],
    )
    asked: list[bool] = []

    def patch() -> bool:
        asked.append(True)
        return True

    core = core_of(wf, RunBudget(run=Limits(tokens=1000), reserve=4000))
    assert [s.agent_id for s in core.dispatch(T0, patch)] == ["2"]
    assert asked == [True]  # asked because it mattered
    assert core.tasks["1"].stored == "pending" and any(
        r.about == "budget" for r in core.pending_requests()
    )
    before = core_of(wf, RunBudget(run=Limits(tokens=1000), reserve=4000))
    assert before.dispatch(T0) == []
    assert before.dispatch(T0, lambda: False) == []


def test_two_budget_reasons_in_one_pass_do_not_take_turns_in_its_escalation():
    """A model task waiting on tokens, then a direct task held by the agent count: the run's
    one E-n was rewritten from one reason to the other in every pass, each a change, and the
    leader never slept (a review found it). The first reason stays."""
    wf = Workflow(
        name="b",
        task_id="b",
        agents=[
            WorkflowAgent(id="0", name="llm", task="t", config={"tool": "noop", "result": "x"}),
            WorkflowAgent(id="1", name="llm", task="think"),
            WorkflowAgent(id="2", name="llm", task="t", config={"tool": "noop", "result": "y"}),
            WorkflowAgent(id="3", name="llm", task="t", config={"tool": "noop", "result": "z"}),
        ],
    )
    core = core_of(wf, RunBudget(run=Limits(tokens=1000, agents=2), reserve=4000), parallel=5)
    # 1 ran before (a retry): the agent count does not hold it, the tokens make it wait
    core.tasks["1"].spend = TaskSpend(started_at=T0)
    # 0 starts; 1 waits on tokens; 2 starts past it; 3 is held by the agent count
    assert [s.agent_id for s in core.dispatch(T0, lambda: True)] == ["0", "2"]
    (request,) = [r for r in core.pending_requests() if r.about == "budget"]
    said = request.text
    assert "tokens" in said
    for _ in range(3):
        core.flow.changed = False
        assert core.dispatch(T0, lambda: True) == []
        assert not core.flow.changed and request.text == said


def test_a_budget_lowered_while_agents_run_shrinks_their_shares_to_what_they_spent():
    """(A security review: lowered mid-run, the limit bound only agents dispatched later.)"""
    core = core_of(plan(3), RunBudget(run=Limits(tokens=100_000), reserve=10_000))
    starts = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    assert len(starts) == 3
    core.report_progress(ProgressReport(task_id="T-1", dispatch=1, usage=used(2000, "c1")), T0)
    before = {s.agent_id: core.budget.share_now(s.agent_id, s.dispatch) for s in starts}
    assert all(
        known and share is not None and share.tokens == 10_000 for share, known in before.values()
    )
    # raised, or lowered with room for what they hold: nothing changes
    said = core.people.set_budget(SetBudgetRequest(tokens=50_000), T0).message
    assert "fitted" not in said
    said = core.people.set_budget(SetBudgetRequest(tokens=20_000), T0).message
    assert "the running T-1, T-2, T-3 fitted to it" in said, said
    after = {s.agent_id: core.budget.share_now(s.agent_id, s.dispatch)[0] for s in starts}
    assert after["1"] is not None and after["1"].tokens == 2000  # what it spent: it stops
    assert after["2"] is not None and after["2"].tokens == 0
    # an earlier dispatch's number is not this one's
    assert core.budget.share_now("1", 9) == (None, False)


def test_a_budget_set_on_a_run_without_one_gives_its_running_agents_shares():
    core = core_of(plan(2), None)
    starts = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    assert core.budget.share_now(starts[0].agent_id, starts[0].dispatch) == (None, False)
    said = core.people.set_budget(SetBudgetRequest(tokens=50_000), T0).message
    assert "fitted to it" in said, said
    share, known = core.budget.share_now(starts[0].agent_id, starts[0].dispatch)
    assert known and share is not None and share.tokens == 0  # stops, re-admitted with a share


def test_agents_fitted_down_keep_holding_what_they_may_have_spent_until_they_end():
    """(A review: the holds of the agents a lowered budget stopped were released at once, and
    a waiting task was admitted into room they had spent unreported: 50,000 for 25,000.)"""
    core = core_of(
        plan(3), RunBudget(run=Limits(tokens=30_000), per_agent=Limits(tokens=20_000)), parallel=2
    )
    starts = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    assert [s.agent_id for s in starts] == ["1", "2"]
    core.report_progress(ProgressReport(task_id="T-1", dispatch=1, usage=used(5000, "c1")), T0)
    core.people.set_budget(SetBudgetRequest(tokens=25_000), T0)
    assert core.budget.share_now("1", 1)[0].tokens == 5000  # type: ignore[union-attr]
    # T-3 waits: what T-1 and T-2 held stays held while they run
    assert not [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    # one that ends without a word is charged what it held, as before the change
    core.attempt_ended("2", 1)
    assert core.state.budget.spend.unconfirmed.tokens > 0


def test_a_model_agent_dispatched_with_no_share_is_bound_by_a_token_limit_set_later():
    """(A review: a budget of agents=5 alone gave model agents no share, and they were marked
    as calling no model, so tokens set later did not bind them.)"""
    core = core_of(plan(2), RunBudget(run=Limits(agents=5)))
    starts = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    core.report_progress(ProgressReport(task_id="T-1", dispatch=1, usage=used(5000, "c1")), T0)
    said = core.people.set_budget(SetBudgetRequest(tokens=6000), T0).message
    assert "fitted to it" in said, said
    share, known = core.budget.share_now(starts[0].agent_id, starts[0].dispatch)
    assert known and share is not None and share.tokens == 5000
