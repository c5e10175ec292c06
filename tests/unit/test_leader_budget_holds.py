"""The leader's own model calls on a budget, without a server: a consultation of the coordinator
and a planner call hold a share before they are made, the share counts when agents are
admitted, a call the budget has no room for is skipped and said ("not checked (budget)"), and
a call that failed is charged what it spent — or its whole share when it could not say.
A Hypothesis state machine drives agents and consultations together: the settled spend never
passes the run's limit by more than one reservation."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.unit.test_leader_budget import T0, ref, used
from xsky.leader.coordinator.judgment import NOT_CHECKED, consult_key
from xsky.leader.core import LeaderCore, StartAgent
from xsky.leader.ledger import ConsultOutcome
from xsky.leader.tasks import note_of
from xsky.plan.budget import (
    CHECK_TOKENS,
    Limits,
    RunBudget,
    Usage,
    checks_warning,
)
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RunInput, RunOptions

MODEL = "judge-1"


def core_of(n: int, tokens: int, reserve: int = 1000, parallel: int = 20) -> LeaderCore:
    agents = [WorkflowAgent(id=str(i), name="llm", task=f"step {i}") for i in range(1, n + 1)]
    core = LeaderCore(
        RunInput(
            workflow=Workflow(name="b", task_id="b", task_prompt="the goal", agents=agents),
            options=RunOptions(
                max_parallel=parallel,
                budget=RunBudget(run=Limits(tokens=tokens), reserve=reserve),
                coordinator="act",
            ),
        ),
        "run-1",
        T0,
    )
    core.judgment.on = True
    core.budget.leader_budget = True
    core.judgment.worker_model = MODEL
    return core


def starts(core: LeaderCore) -> list[StartAgent]:
    return [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]


def answered(agent_id: str, tokens: int) -> AgentOutcome:
    return AgentOutcome(
        result="done", result_ref=ref(agent_id), provider=MODEL, usage=used(tokens, f"c{agent_id}")
    )


def verdict(point: str, tokens: int) -> ConsultOutcome:
    return ConsultOutcome(
        point=point,  # type: ignore[arg-type]
        verdict="accept",
        reason="fine",
        model=MODEL,
        usage=Usage(input_tokens=tokens, calls=1),
    )


def test_a_consultation_holds_its_share_and_agents_are_admitted_around_it() -> None:
    core = core_of(3, tokens=10_000, reserve=1000, parallel=1)
    (first,) = starts(core)
    review = core.review_of(first.agent_id, first.dispatch, answered("1", 1000), T0)
    assert review is not None and review.budget_share is not None
    held = review.budget_share.tokens
    assert held is not None and held > CHECK_TOKENS // 4  # room for its reading(s)
    assert core.leader_holds == {consult_key(review): review.budget_share}
    assert core.budget.budget_view(T0).reserved_tokens >= held  # people see it held
    # the agent's own share settles; its check still holds while it is made
    task = core.tasks["1"]
    core.attempt_succeeded("1", task, first.dispatch, answered("1", 1000), T0, None)
    core.attempt_ended("1", first.dispatch)
    (second,) = starts(core)
    share = core.flights[second.agent_id].share
    assert share is not None and share.tokens is not None
    assert 1000 + held + share.tokens <= 10_000  # spent + the check's hold + the agent's share
    core.budget.leader_call_ended(consult_key(review), "leader")
    assert core.leader_holds == {}


def test_with_no_room_for_a_check_the_result_is_kept_and_its_row_says_not_checked() -> None:
    core = core_of(1, tokens=1300, reserve=1000)
    (s,) = starts(core)
    core.budget.settle_usage("1", used(1200, "c1"))  # the agent spent nearly everything
    review = core.review_of("1", s.dispatch, answered("1", 1200), T0)
    assert review is None  # no consultation is made
    task = core.tasks["1"]
    assert task.check == NOT_CHECKED
    entry = core.state.ledger.entries[-1]
    assert entry.point == "result" and entry.reason.startswith(f"{NOT_CHECKED}: ")
    assert "tokens of the budget are free" in entry.reason and not entry.applied
    core.attempt_succeeded("1", task, s.dispatch, answered("1", 1200), T0, None)
    assert task.stored == "completed"
    assert NOT_CHECKED in note_of(task, "completed", None)
    assert core.leader_holds == {}


def test_a_failed_consultation_is_charged_what_it_said_and_a_lost_one_its_whole_share() -> None:
    core = core_of(2, tokens=20_000, reserve=1000, parallel=2)
    a, b = starts(core)
    ra = core.review_of(a.agent_id, a.dispatch, answered(a.agent_id, 500), T0)
    rb = core.review_of(b.agent_id, b.dispatch, answered(b.agent_id, 500), T0)
    assert ra is not None and rb is not None and rb.budget_share is not None
    before = core.state.budget.spend.total.tokens
    core.budget.leader_call_ended(consult_key(ra), "leader", Usage(input_tokens=300, calls=1))
    assert core.state.budget.spend.total.tokens == before + 300
    assert core.state.budget.spend.sources["leader"].tokens == 300
    core.budget.leader_call_lost(consult_key(rb), "leader")
    assert core.state.budget.spend.total.tokens == before + 300 + (rb.budget_share.tokens or 0)
    assert core.leader_holds == {}


def test_the_goal_check_without_room_says_not_checked_budget() -> None:
    core = core_of(1, tokens=1300, reserve=1000)
    (s,) = starts(core)
    task = core.tasks["1"]
    core.attempt_succeeded("1", task, s.dispatch, answered("1", 1250), T0, verdict("result", 0))
    core.attempt_ended("1", s.dispatch)
    assert core.goal_review(T0) is None
    assert (core.state.ledger.goal_reason or "").startswith("not checked: budget: ")


def test_a_planner_call_is_refused_without_room() -> None:
    core = core_of(1, tokens=900, reserve=500)
    hold = core.budget.hold_leader_call("planner:v1", estimate=800, answer=4096, readings=3, now=T0)
    assert hold.no_room is not None and "needs about 1,056" in hold.no_room
    ok = core.budget.hold_leader_call("planner:v1", estimate=300, answer=4096, readings=3, now=T0)
    assert ok.share is not None and ok.share.tokens == 900  # all that is free, not more


def test_a_run_started_before_the_change_holds_nothing() -> None:
    core = core_of(1, tokens=1300, reserve=1000)
    core.budget.leader_budget = False
    hold = core.budget.hold_leader_call(
        "planner:v1", estimate=100_000, answer=1, readings=1, now=T0
    )
    assert hold.share is None and hold.no_room is None


def test_a_budget_too_small_for_the_checks_is_said_with_what_to_set() -> None:
    small = checks_warning(RunBudget(run=Limits(tokens=4000)), model_agents=4)
    assert small is not None
    assert "--budget tokens=" in small and "--coordinator off" in small
    need = int(small.split("--budget tokens=")[1].split()[0])
    assert checks_warning(RunBudget(run=Limits(tokens=need)), model_agents=4) is None
    assert checks_warning(RunBudget(run=Limits(usd=1.0)), model_agents=4) is None
    core = core_of(4, tokens=4000)
    assert any("too little for the leader" in n for n in core.views.notices(T0))


def test_no_checks_warning_while_an_auto_leader_has_no_model() -> None:
    """walk12: the board warned the budget left the leader too little to check its agents
    beside "leader: auto: off until a model answers" — it checks nothing then."""
    core = core_of(4, tokens=4000)
    core.options.coordinator = "auto"
    core.judgment.ledger.mode = "auto"
    core.judgment.worker_model = None
    assert core.judgment.mode_label().startswith("auto: off until a model answers")
    assert not any("too little for the leader" in n for n in core.views.notices(T0))
    core.judgment.worker_model = MODEL  # the leader's worker has a model: said again
    assert any("too little for the leader" in n for n in core.views.notices(T0))


class AgentsAndChecks(RuleBasedStateMachine):
    """Agents and consultations interleave at random; whatever each spends (within its share,
    as the activities hold it), the run's settled spend stays within limit + one reservation."""

    LIMIT = 12_000
    RESERVE = 1500

    @initialize(n=st.integers(2, 12), parallel=st.integers(1, 4))
    def start(self, n: int, parallel: int) -> None:
        self.core = core_of(n, tokens=self.LIMIT, reserve=self.RESERVE, parallel=parallel)
        self.running: dict[str, int] = {}
        self.checks: dict[str, int] = {}  # hold key → its share's tokens
        self._dispatch()

    def _dispatch(self) -> None:
        for s in starts(self.core):
            self.running[s.agent_id] = s.dispatch

    @rule(data=st.data())
    def an_agent_answers(self, data: st.DataObject) -> None:
        if not self.running:
            return
        agent_id = data.draw(st.sampled_from(sorted(self.running)))
        dispatch = self.running.pop(agent_id)
        share = self.core.flights[agent_id].share
        cap = share.tokens if share is not None and share.tokens is not None else 0
        spent = data.draw(st.integers(0, cap))
        outcome = answered(agent_id, spent)
        review = self.core.review_of(agent_id, dispatch, outcome, T0)
        if review is not None and review.budget_share is not None:
            self.checks[consult_key(review)] = review.budget_share.tokens or 0
        task = self.core.tasks[agent_id]
        self.core.attempt_succeeded(agent_id, task, dispatch, outcome, T0, None)
        self.core.attempt_ended(agent_id, dispatch)
        self._dispatch()

    @rule(data=st.data(), lost=st.booleans())
    def a_check_ends(self, data: st.DataObject, lost: bool) -> None:
        if not self.checks:
            return
        key = data.draw(st.sampled_from(sorted(self.checks)))
        cap = self.checks.pop(key)
        if lost:
            self.core.budget.leader_call_lost(key, "leader")
        else:
            self.core.budget.leader_call_ended(
                key, "leader", Usage(input_tokens=data.draw(st.integers(0, cap)), calls=1)
            )
        self._dispatch()

    @invariant()
    def spend_stays_within_the_limit_and_one_reservation(self) -> None:
        spent = self.core.state.budget.spend.total.plus(self.core.state.budget.spend.unconfirmed)
        assert spent.tokens <= self.LIMIT + self.RESERVE
        held_tokens, _ = self.core.budget._held()
        assert spent.tokens + held_tokens <= self.LIMIT + self.RESERVE


AgentsAndChecks.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck)
)
test_agents_and_checks_stay_within_the_budget = AgentsAndChecks.TestCase
