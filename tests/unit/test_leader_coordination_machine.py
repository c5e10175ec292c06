"""Whatever the coordinator proposes, the leader stays within the person's bounds: a
Hypothesis state machine drives the core through attempts that complete, ask and request
tool calls, with the coordinator's answers drawn at random (any verdict, at any point,
with or without a model), goal checks and stalls, and checks after every step that

* no approval was ever granted beyond the delegated rules (never against a deny rule,
  never an approval only a person may give);
* the automatic replans stay within ``max_auto_replans``;
* no task was sent back more than ``coordinator_retries`` times.
"""

from __future__ import annotations

from datetime import timedelta
from typing import get_args

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.unit.test_leader_core import T0, ref
from xsky.leader.core import CallPlanner, Consult, LeaderCore, StartAgent, StopAgent
from xsky.leader.ledger import ConsultOutcome, Verdict
from xsky.leader.state import AnswerRequest
from xsky.plan.agent_config import StallWindows
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RequestPayload, RunInput, RunOptions
from xsky.security.delegation import delegation

DELEGATED = ["shell(make test:*)", "shell(git status)", "file_write(out/**)"]
DENY = ["shell(make test --deploy:*)"]
CALLS = [
    ("shell", {"command": "make test"}),
    ("shell", {"command": "make test --deploy now"}),
    ("shell", {"command": "make test && rm -rf /"}),
    ("shell", {"command": "git status"}),
    ("shell", {"command": "git push"}),
    ("shell", {"command": "curl $(cat secret)"}),
    ("file_write", {"path": "out/a.txt", "content": "x"}),
    ("file_write", {"path": "../etc/x", "content": "x"}),
]
# Every verdict, the approving one more often: it is the one that must never go too far.
VERDICTS: list[str] = [*get_args(Verdict), "allow", "allow", "allow"]


@st.composite
def judgments(draw: st.DrawFn) -> ConsultOutcome | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None  # not consulted, or the consultation failed
    return ConsultOutcome(
        point=draw(st.sampled_from(["result", "goal", "stall", "question", "approval"])),
        verdict=draw(st.sampled_from(VERDICTS)),  # type: ignore[arg-type]
        reason="r",
        instruction=draw(st.sampled_from([None, "do it right"])),
        answer=draw(st.sampled_from([None, "yes"])),
        gap=draw(st.sampled_from([None, "more"])),
        root_cause=draw(st.sampled_from([None, "why"])),
        model=draw(st.sampled_from([None, "m"])),
    )


class CoordinatorMachine(RuleBasedStateMachine):
    @initialize(
        n=st.integers(1, 4),
        replans=st.integers(0, 2),
        retries=st.integers(0, 2),
        mode=st.sampled_from(["auto", "act", "advise", "off"]),
    )
    def begin(self, n: int, replans: int, retries: int, mode: str) -> None:
        agents = [WorkflowAgent(id=str(i), name="llm", task=f"t{i}") for i in range(1, n + 1)]
        self.core = LeaderCore(
            RunInput(
                workflow=Workflow(name="m", task_id="m", task_prompt="goal", agents=agents),
                options=RunOptions(
                    max_parallel=4,
                    max_auto_replans=replans,
                    coordinator_retries=retries,
                    coordinator=mode,  # type: ignore[arg-type]
                    stall=StallWindows(nudge_after=10, restart_after=20),
                ),
            ),
            "run-1",
            T0,
        )
        self.core.judgment.on = True
        self.core.judgment.delegated, self.core.judgment.denied = list(DELEGATED), list(DENY)
        self.now = T0
        self.running: dict[str, int] = {}
        self.judging: list[Consult] = []

    def apply(self, commands: list) -> None:  # type: ignore[type-arg]
        for c in commands:
            if isinstance(c, StartAgent):
                self.running[c.agent_id] = c.dispatch
            elif isinstance(c, Consult):
                self.judging.append(c)
            elif isinstance(c, CallPlanner):
                self.core.planner_finished()  # the planner failed: nothing changes
            elif isinstance(c, StopAgent) and c.agent_id in self.running:
                task = self.core.tasks[c.agent_id]
                self.core.attempt_failed(c.agent_id, task, self.running[c.agent_id], None, self.now)
                self.core.attempt_ended(c.agent_id, self.running.pop(c.agent_id))

    @rule()
    def dispatch(self) -> None:
        self.apply(self.core.dispatch(self.now))

    @rule(
        data=st.data(),
        kind=st.sampled_from(["completed", "question", "needs_approval", "needs_approval"]),
        call=st.sampled_from(CALLS),
        hard=st.booleans(),
        text=st.sampled_from(["done", "  ", "(the model ended without a final answer after 1"]),
        judged=judgments(),
    )
    def attempt_returns(self, data, kind, call, hard, text, judged) -> None:  # type: ignore[no-untyped-def]
        if not self.running:
            return
        agent_id = data.draw(st.sampled_from(sorted(self.running)))
        dispatch = self.running.pop(agent_id)
        outcome = AgentOutcome(
            kind=kind,
            result=text if kind == "completed" else None,
            result_ref=ref(agent_id) if kind == "completed" else None,
            provider="m",
            request=None
            if kind == "completed"
            else RequestPayload(question="q?", tool=call[0], arguments=call[1], hard=hard),
        )
        self.core.review_of(agent_id, dispatch, outcome)
        task = self.core.tasks[agent_id]
        self.core.attempt_succeeded(agent_id, task, dispatch, outcome, self.now, judged)
        self.core.attempt_ended(agent_id, dispatch)

    @rule(seconds=st.sampled_from([1, 15, 30]))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)
        self.apply(self.core.tick(self.now))

    @rule(judged=judgments())
    def stall_judged(self, judged: ConsultOutcome | None) -> None:
        if self.judging:
            consult = self.judging.pop(0)
            self.apply(self.core.stall_judged(consult.agent_id, judged, self.now))

    @rule(judged=judgments())
    def goal_checked(self, judged: ConsultOutcome | None) -> None:
        if self.core.finished() and not self.judging:
            goal = self.core.goal_review(self.now)
            if goal is not None:
                self.apply(self.core.goal_judged(goal.plan_version, judged, self.now))

    @rule(data=st.data())
    def person_answers(self, data: st.DataObject) -> None:
        pending = [r for r in self.core.pending_requests() if r.kind != "approval"]
        if pending:
            request = data.draw(st.sampled_from(pending))
            req = AnswerRequest(request_id=request.id, text="go")
            try:
                self.core.checks.answer(req, self.now)
            except Exception:  # noqa: BLE001 - a refusal is fine here; bounds are checked below
                return
            self.core.people.answer(req, self.now)
            self.apply(self.core.take_outbox())

    @invariant()
    def approvals_stay_within_the_delegated_rules(self) -> None:
        if not hasattr(self, "core"):
            return
        for request in self.core.state.requests.requests:
            if request.by == "leader" and request.decision in ("allow_once", "allow_run"):
                assert not request.hard, f"{request.id}: a person-only approval given by the leader"
                covered, why = delegation(
                    request.tool or "", request.arguments or {}, DELEGATED, DENY
                )
                assert covered, f"{request.id} approved beyond the delegated rules: {why}"
        for approvals in self.core.state.briefs.approvals.values():
            for approval in approvals:
                if approval.by == "leader" and approval.decision != "deny":
                    assert delegation(approval.tool, approval.arguments, DELEGATED, DENY)[0]

    @invariant()
    def caps_hold(self) -> None:
        if not hasattr(self, "core"):
            return
        options = self.core.options
        assert self.core.state.plan.auto_replans <= options.max_auto_replans
        for task in self.core.state.board.tasks:
            assert task.leader_retries <= options.coordinator_retries


TestCoordinatorMachine = CoordinatorMachine.TestCase
TestCoordinatorMachine.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
