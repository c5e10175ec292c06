"""LeaderCore without a server: a Hypothesis state machine drives it through generated
sequences of events — attempts that complete, fail, ask or are stopped, people's
interventions (valid and not), pauses, automatic replans, time passing — and checks after
every step what must always hold:

* no agent starts before its dependencies are satisfied, and at most ``max_parallel``
  attempts are active;
* a rejected intervention changes nothing;
* the incremental indexes (ready heap, unfinished-dependency counts, pending requests)
  agree with a from-scratch computation;
* each event reaches each component once: an attempt's end is settled by the budget, taken by
  the board, judged by the coordinator and logged by the permission log once each (the tower
  this core replaced sent a finished attempt down and up five floors);
* when the run drains, every task ends in exactly one terminal state or is blocked by one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from xsky.artifacts import ArtifactRef
from xsky.leader.core import (
    SATISFIED,
    AttemptFailure,
    CallPlanner,
    Command,
    LeaderCore,
    Rejected,
    StartAgent,
    StopAgent,
)
from xsky.leader.state import (
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    LeaderState,
    PageRequest,
    PauseRequest,
    RetryTaskRequest,
    SkipTaskRequest,
    TaskRequest,
)
from xsky.leader.tasks import TERMINAL, derive_statuses
from xsky.plan.agent_config import StallWindows
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, ProgressReport, RequestPayload, RunInput, RunOptions

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@st.composite
def dags(draw: st.DrawFn, prefix: str = "") -> Workflow:
    n = draw(st.integers(1, 9))
    agents = []
    for i in range(1, n + 1):
        earlier = [str(j) for j in range(1, i)]
        depends = (
            draw(st.lists(st.sampled_from(earlier), max_size=3, unique=True)) if earlier else []
        )
        agents.append(WorkflowAgent(id=str(i), name="llm", task=f"step {i}", depends=depends))
    return Workflow(name="machine", task_id="machine", agents=agents)


def ref(agent_id: str) -> ArtifactRef:
    return ArtifactRef(
        uri=f"artifact:run-1/{agent_id}/result.txt", size=1, sha256="0" * 64, preview="r"
    )


# What each component does with one event for one agent: done twice, an attempt's end would be
# settled, taken, judged or logged twice.
ONCE_PER_EVENT = (
    ("budget", "settle_usage"),
    ("budget", "flight_ended"),
    ("board", "attempt_ended_with"),
    ("board", "progressed"),
    ("board", "ended"),
    ("audit", "decisions"),
    ("results", "take"),
    ("asks", "requested"),
    ("ladder", "progressed"),
)


def counted(core: LeaderCore, calls: dict[tuple[str, str, str], int]) -> None:
    """Count every call of ONCE_PER_EVENT's methods on ``core``'s components, by the agent or
    task it is about."""
    for component, method in ONCE_PER_EVENT:
        part = getattr(core, component)
        real = getattr(part, method)

        def wrapper(*args, _real=real, _key=(component, method), **kw):  # type: ignore[no-untyped-def]
            about = args[0] if isinstance(args[0], str) else getattr(args[0], "id", "?")
            calls[(*_key, str(about))] = calls.get((*_key, str(about)), 0) + 1
            return _real(*args, **kw)

        setattr(part, method, wrapper)


class LeaderMachine(RuleBasedStateMachine):
    @initialize(
        plan=dags(), max_parallel=st.integers(1, 4), replans=st.integers(0, 2), review=st.booleans()
    )
    def start(self, plan: Workflow, max_parallel: int, replans: int, review: bool) -> None:
        self.now = T0
        options = RunOptions(
            max_parallel=max_parallel,
            max_auto_replans=replans,
            review=review,
            stall=StallWindows(nudge_after=30, restart_after=60),
            request_timeout=3600,
        )
        self.core = LeaderCore(RunInput(workflow=plan, options=options), "run-1", self.now)
        self.calls: dict[tuple[str, str, str], int] = {}
        counted(self.core, self.calls)
        self.running: dict[str, int] = {}  # agent id → dispatch the "shell" is running
        self.stopping: list[str] = []
        self.planner: list[str] = []  # reasons of planner calls in flight
        self.extra = 0  # agents replans added
        self.decided: dict[str, str] = {}  # task id → the state a person put it in (skip, cancel)
        # agent ids a model's replan made privileged, not yet approved by a person
        self.unreviewed: set[str] = set()

    # -- the shell's part ----------------------------------------------------------------------

    def apply(self, commands: list[Command]) -> None:
        core = self.core
        for c in commands:
            if isinstance(c, StartAgent):
                agent = core.agents[c.agent_id]
                for d in agent.depends:
                    assert core.tasks[d].stored in SATISFIED, (
                        f"{c.agent_id} started before its dependency {d} was done"
                    )
                assert c.agent_id not in self.running, f"{c.agent_id} started twice"
                assert core.state.plan.review != "waiting", (
                    f"{c.agent_id} started during plan review"
                )
                assert not self.unreviewed, (
                    f"{c.agent_id} started while {sorted(self.unreviewed)} wait for approve_plan"
                )
                self.running[c.agent_id] = c.dispatch
            elif isinstance(c, StopAgent):
                assert c.agent_id in self.running, f"stop of {c.agent_id}, which is not running"
                if c.agent_id not in self.stopping:
                    self.stopping.append(c.agent_id)
            elif isinstance(c, CallPlanner):
                self.planner.append(c.reason)
        assert len(core.active) <= core.options.max_parallel

    def end(self, agent_id: str) -> None:
        self.core.attempt_ended(agent_id, self.running.pop(agent_id))
        if agent_id in self.stopping:
            self.stopping.remove(agent_id)

    def snapshot(self) -> tuple[object, ...]:
        c = self.core
        return (
            c.state.model_dump_json(),
            dict(c.active),
            dict(c.board.intents),
            c.replanning,
            c.board.ready_ids(),
            [r.id for r in c.pending_requests()],
        )

    def intervene(self, check, act) -> bool:
        before = self.snapshot()
        try:
            check()
        except Rejected:
            assert self.snapshot() == before, "a rejected intervention changed the run"
            return False
        result = act()
        if isinstance(result, tuple):
            self.apply(result[1])
        return True

    # -- rules ---------------------------------------------------------------------------------

    @rule()
    def dispatch(self) -> None:
        self.apply(self.core.dispatch(self.now))

    @precondition(lambda self: self.running)
    @rule(data=st.data(), kind=st.sampled_from(["completed", "question", "needs_approval"]))
    def attempt_returns(self, data: st.DataObject, kind: str) -> None:
        agent_id = data.draw(st.sampled_from(sorted(self.running)))
        task = self.core.tasks.get(agent_id) or next(
            t for t in self.core.state.board.removed if t.agent_id == agent_id
        )
        request = (
            None
            if kind == "completed"
            else RequestPayload(question="why?", tool="shell", arguments={"command": "ls"})
        )
        outcome = AgentOutcome(
            kind=kind,
            result="r" if kind == "completed" else None,  # type: ignore[arg-type]
            result_ref=ref(agent_id) if kind == "completed" else None,
            request=request,
        )
        self.core.attempt_succeeded(agent_id, task, self.running[agent_id], outcome, self.now)
        self.end(agent_id)

    @precondition(lambda self: self.running)
    @rule(data=st.data(), cancelled=st.booleans())
    def attempt_raises(self, data: st.DataObject, cancelled: bool) -> None:
        agent_id = data.draw(st.sampled_from(sorted(self.running)))
        task = self.core.tasks.get(agent_id) or next(
            t for t in self.core.state.board.removed if t.agent_id == agent_id
        )
        failure = None if cancelled and agent_id in self.stopping else AttemptFailure("boom")
        self.apply(
            self.core.attempt_failed(agent_id, task, self.running[agent_id], failure, self.now)
        )
        self.end(agent_id)

    @precondition(lambda self: self.running)
    @rule(data=st.data())
    def progress(self, data: st.DataObject) -> None:
        agent_id = data.draw(st.sampled_from(sorted(self.running)))
        self.core.report_progress(
            ProgressReport(
                task_id=f"T-{agent_id}", dispatch=self.running[agent_id], message="working"
            ),
            self.now,
        )

    @rule(seconds=st.sampled_from([1, 10, 31, 61, 200, 4000]))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)
        self.apply(self.core.tick(self.now))

    @rule(data=st.data(), text=st.sampled_from(["yes", "", "  "]))
    def answer(self, data: st.DataObject, text: str) -> None:
        ids = [r.id for r in self.core.state.requests.requests] + ["Q-999"]
        rid = data.draw(st.sampled_from(ids))
        req = AnswerRequest(request_id=rid, text=text)
        self.intervene(
            lambda: self.core.checks.answer(req), lambda: self.core.people.answer(req, self.now)
        )

    @rule(data=st.data(), decision=st.sampled_from(["allow_once", "allow_run", "deny"]))
    def approve_tool(self, data: st.DataObject, decision: str) -> None:
        ids = [r.id for r in self.core.state.requests.requests] + ["A-999"]
        req = ApproveToolRequest(request_id=data.draw(st.sampled_from(ids)), decision=decision)  # type: ignore[arg-type]
        self.intervene(
            lambda: self.core.checks.approve_tool(req),
            lambda: self.core.people.approve_tool(req, self.now),
        )

    @rule(
        data=st.data(),
        action=st.sampled_from(["retry", "skip", "cancel"]),
        new_text=st.sampled_from([None, "again", " "]),
    )
    def task_intervention(self, data: st.DataObject, action: str, new_text: str | None) -> None:
        task_id = data.draw(
            st.sampled_from([t.id for t in self.core.state.board.tasks] + ["T-nope"])
        )
        core = self.core
        if action == "retry":
            req = RetryTaskRequest(task_id=task_id, task=new_text)
            if self.intervene(
                lambda: core.checks.retry(req), lambda: core.people.retry(req, self.now)
            ):
                self.decided.pop(task_id, None)
        elif action == "skip":
            sreq = SkipTaskRequest(task_id=task_id, result="skipped")
            if self.intervene(
                lambda: core.checks.skip(sreq), lambda: core.people.skip(sreq, self.now)
            ):
                self.decided[task_id] = "skipped"
        else:
            creq = TaskRequest(task_id=task_id)
            if self.intervene(
                lambda: core.checks.cancel(creq), lambda: core.people.cancel(creq, self.now)
            ):
                self.decided[task_id] = "cancelled"

    @rule(cancel_running=st.booleans())
    def pause(self, cancel_running: bool) -> None:
        self.apply(self.core.people.pause(PauseRequest(cancel_running=cancel_running)))

    @rule()
    def resume(self) -> None:
        self.core.people.resume()

    @rule(version=st.sampled_from([None, 1, 2, 99]))
    def approve_plan(self, version: int | None) -> None:
        req = ApprovePlanRequest(version=version)
        if self.intervene(
            lambda: self.core.checks.approve_plan(req),
            lambda: self.core.people.approve_plan(req, self.now),
        ):
            self.unreviewed.clear()

    @precondition(lambda self: not self.running and not self.planner)
    @rule(pause_while_stored=st.booleans())
    def continue_as_new(self, pause_while_stored: bool) -> None:
        """The shell hands the run on (workflows/leader/io.continue_as_new): once nothing runs,
        the state is snapshotted and written; a pause that arrives while it is written changes
        the state, so it is written again. The next execution's core is built from what was
        written last, and must be the same run."""
        core = self.core
        core.begin_drain()
        assert core.dispatch(self.now) == [], "a draining run started an agent"
        snapshot = core.views.snapshot()
        if pause_while_stored:
            self.apply(core.people.pause(PauseRequest(reason="while the state was written")))
        if (fresh := core.views.snapshot()) != snapshot:
            snapshot = fresh
        state = LeaderState.model_validate_json(snapshot)
        inp = core.continue_input().model_copy(update={"workflow": None, "state": state})
        assert core.state.run.continued == state.run.continued + 1
        after = LeaderCore(inp, core.run_id, self.now)
        # The same state, stored results by reference (continue_input counts the hand-over in
        # the old state, after the snapshot was taken).
        assert after.views.snapshot() == snapshot
        assert after.state.run.paused or not pause_while_stored
        assert after.board.ready_ids() == core.board.ready_ids()
        assert [r.id for r in after.pending_requests(True)] == [
            r.id for r in core.pending_requests(True)
        ]
        assert not after.flow.draining, "the next execution starts work again"
        self.core = after
        counted(self.core, self.calls)

    @precondition(
        lambda self: any(
            r.kind == "escalation" and r.status == "pending"
            for r in self.core.state.requests.requests
        )
    )
    @rule(data=st.data(), new_text=st.sampled_from([None, "try it this way"]))
    def retry_escalated(self, data: st.DataObject, new_text: str | None) -> None:
        """A person retries a task the stall ladder escalated to them."""
        core = self.core
        request = data.draw(
            st.sampled_from(
                [
                    r
                    for r in core.state.requests.requests
                    if r.kind == "escalation" and r.status == "pending"
                ]
            )
        )
        task = core.board.task_by_id(request.task_id)
        assert task is not None and task.waiting_on == request.id
        req = RetryTaskRequest(task_id=task.id, task=new_text)
        if not self.intervene(
            lambda: core.checks.retry(req), lambda: core.people.retry(req, self.now)
        ):
            assert core.replanning or core.ended or core.flow.closing, (
                "an escalation could not be retried"
            )
            return
        self.decided.pop(task.id, None)
        assert request.status == "withdrawn" and task.waiting_on is None
        assert task.stored == "pending" and task.id not in core.state.ladder.levels
        assert request.id not in [r.id for r in core.pending_requests()]
        if new_text:
            assert core.agents[task.agent_id].task == new_text

    @precondition(lambda self: self.planner)
    @rule(data=st.data(), succeeds=st.booleans())
    def planner_answers(self, data: st.DataObject, succeeds: bool) -> None:
        """The planner keeps the plan, drops its last agent or adds one that depends on some."""
        reason = self.planner.pop(0)
        core = self.core
        if succeeds:
            agents = list(core.state.plan.plan.agents)
            change = data.draw(st.sampled_from(["same", "drop", "add"]))
            if change == "drop" and len(agents) > 1:
                gone = agents[-1].id
                agents = [
                    a.model_copy(update={"depends": [d for d in a.depends if d != gone]})
                    for a in agents[:-1]
                ]
            elif change == "add":
                self.extra += 1
                deps = data.draw(
                    st.lists(st.sampled_from([a.id for a in agents]), max_size=2, unique=True)
                )
                # A shell agent is a privileged change: nobody asked for it, a model did.
                shell = data.draw(st.booleans())
                agents.append(
                    WorkflowAgent(
                        id=f"x{self.extra}",
                        name="shell" if shell else "llm",
                        task="added",
                        depends=deps,
                        config={"tool": "shell", "command": "echo added"} if shell else None,
                    )
                )
            wf = core.checks.plan(core.state.plan.plan.model_copy(update={"agents": agents}))
            # a replan retries the cancelled
            self.decided = {t: s for t, s in self.decided.items() if s == "skipped"}
            # as workflows/leader/workflow.py's _replan_in_background
            risky = core.cast.privileged_changes(wf, core.board.agents)
            _, stops = core.apply_plan(wf, core.plans.auto_label(reason), self.now)
            self.apply(stops)
            if risky:
                core.plans.require_review(risky, self.now)
                self.unreviewed.update(risky)
        else:
            core.plans.note(f"automatic replan failed ({reason})", self.now)
        core.planner_finished()

    @precondition(lambda self: self.stopping)
    @rule(data=st.data())
    def stop_acknowledged(self, data: st.DataObject) -> None:
        agent_id = data.draw(st.sampled_from(sorted(self.stopping)))
        task = self.core.tasks.get(agent_id) or next(
            t for t in self.core.state.board.removed if t.agent_id == agent_id
        )
        self.apply(self.core.attempt_failed(agent_id, task, self.running[agent_id], None, self.now))
        self.end(agent_id)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def each_event_reaches_each_component_once(self) -> None:
        if not hasattr(self, "core"):
            return
        twice = {key: n for key, n in self.calls.items() if n > 1}
        self.calls.clear()
        assert not twice, f"an event reached a component more than once: {twice}"

    @invariant()
    def active_attempts_are_the_shells(self) -> None:
        if hasattr(self, "core"):
            assert self.core.active == self.running
            assert len(self.core.active) <= self.core.options.max_parallel

    @invariant()
    def what_a_person_decided_stands(self) -> None:
        """Skipped or cancelled by a person stays so (a pause or stall cannot undo it)."""
        if hasattr(self, "core"):
            for task_id, status in self.decided.items():
                task = self.core.board.task_by_id(task_id)
                assert task is None or task.stored == status, (
                    f"{task_id} was {status} by a person, now {task.stored}"
                )

    @invariant()
    def running_tasks_have_an_attempt(self) -> None:
        if hasattr(self, "core"):
            for task in self.core.state.board.tasks:
                if task.stored in ("dispatched", "in_progress"):
                    assert task.agent_id in self.core.active, (
                        f"{task.id} shows running with no attempt"
                    )
                    assert task.waiting_on is None

    @invariant()
    def queries_change_nothing(self) -> None:
        """What every query handler reads (the board, plan, history, results, requests,
        nudges, permission log) leaves the run as it was: a query that changed the state, a
        cache or a flag that steers a later decision would decide differently on replay."""
        if not hasattr(self, "core"):
            return
        core = self.core
        before = (
            core.state.model_dump_json(),
            core.changed,
            list(core.board._heap),
            core.take_log(),
        )
        core.flow.log = list(before[3])
        core.views.board_page(self.now)
        core.views.board_page(self.now, PageRequest(offset=1, limit=2, status="pending"))
        core.views.plan_page(PageRequest(limit=2))
        core.views.history_page()
        core.views.results_page()
        core.pending_requests(with_review=True)
        for task in core.state.board.tasks[:3]:
            core.nudges_for(task.id)
        core.views.notices()
        core.views.search_values()
        after = (
            core.state.model_dump_json(),
            core.changed,
            list(core.board._heap),
            list(core.flow.log),
        )
        assert after == before, "a query changed the run's state"

    @invariant()
    def indexes_agree_with_a_fresh_count(self) -> None:
        if not hasattr(self, "core"):
            return
        core = self.core
        for a in core.state.plan.plan.agents:
            assert core.board._missing[a.id] == sum(
                1 for d in a.depends if d in core.tasks and core.tasks[d].stored not in SATISFIED
            )
        brute = [
            a.id
            for a in core.state.plan.plan.agents
            if a.id not in core.active
            and core.tasks[a.id].stored == "pending"
            and core.tasks[a.id].waiting_on is None
            and all(core.tasks[d].stored in SATISFIED for d in a.depends if d in core.tasks)
        ]
        assert core.board.ready_ids() == brute
        assert [r.id for r in core.pending_requests()] == [
            r.id for r in core.state.requests.requests if r.status == "pending"
        ]

    def teardown(self) -> None:
        """Drain: people answer and resume, attempts finish; then every task has an end."""
        if not hasattr(self, "core"):
            return
        core = self.core
        for _ in range(200):
            if core.state.plan.review == "waiting":
                core.people.approve_plan(ApprovePlanRequest(), self.now)
                self.unreviewed.clear()
            core.people.resume()
            for r in core.pending_requests():
                if r.kind == "approval":
                    core.people.approve_tool(ApproveToolRequest(request_id=r.id), self.now)
                else:
                    core.people.answer(AnswerRequest(request_id=r.id, text="go on"), self.now)
            while self.planner:
                reason = self.planner.pop(0)
                core.plans.note(f"automatic replan failed ({reason})", self.now)
                core.planner_finished()
            self.apply(core.dispatch(self.now))
            for agent_id in sorted(self.running):
                task = core.tasks.get(agent_id) or next(
                    t for t in core.state.board.removed if t.agent_id == agent_id
                )
                outcome = AgentOutcome(kind="completed", result="r", result_ref=ref(agent_id))
                core.attempt_succeeded(agent_id, task, self.running[agent_id], outcome, self.now)
                self.end(agent_id)
            if core.finished() and not self.planner:
                break
        assert core.finished(), "the run never drained"
        derived = derive_statuses({t.id: t for t in core.state.board.tasks})
        for task in core.state.board.tasks:
            status, reason = derived[task.id]
            assert status in TERMINAL or (status == "blocked" and reason), (
                f"{task.id} ended {status}"
            )
        result = core.views.result(self.now)
        assert sorted(r.task_id for r in result.agents) == sorted(
            t.id for t in core.state.board.tasks
        )
        assert (result.status == "completed") == all(
            t.stored in SATISFIED for t in core.state.board.tasks
        )


LeaderMachine.TestCase.settings = settings(
    max_examples=int(__import__("os").environ.get("XSKY_CORE_EXAMPLES", "300")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_leader_core_state_machine = LeaderMachine.TestCase
