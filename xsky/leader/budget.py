"""Budgets that hold: admission, reservations, settlement and the budget's escalations.

Before an agent that may call a model is dispatched, its expected share is reserved, and it
starts only if what the run has spent, what running agents hold and this share together fit
every limit. The share travels to the agent (``AgentInput.budget_share``), which checks it
before each model call and stops cleanly (outcome ``budget``) when the next call would not
fit, so no dispatch spends more than it was given. What agents used is settled from the
running totals they report (progress, outcome, failure): the same total settles once, so a
retry after a lost worker, a late completion or a repeated report count nothing twice. A
dispatch that ends without saying what it used is charged the rest of its share until its
conversation says.

When the next agent cannot be admitted even once every running one has settled, dispatch
pauses and one escalation ``E-n`` about the run's budget waits for ``set_budget`` (or
``end_run``); an agent past its own cap waits on an escalation of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from xsky.leader.board import TaskBoard
from xsky.leader.commands import RUNNING, Flight, Rejected
from xsky.leader.requests import RUN_REQUEST, RequestBook
from xsky.leader.state import (
    BudgetState,
    HumanRequest,
    RunFacts,
    SetBudgetRequest,
)
from xsky.leader.tasks import TaskState
from xsky.plan.agent_config import tool_name
from xsky.plan.budget import (
    AGENT_KEYS,
    KEYS,
    MIN_ANSWER,
    USD_RESERVE_PART,
    BudgetError,
    BudgetShare,
    BudgetView,
    Limits,
    RunBudget,
    TaskSpend,
    Usage,
    UsageReport,
    config_budget,
    describe,
    limits_from,
    limits_text,
    narrow,
    overlay,
)
from xsky.runs import AgentOutcome, RunOptions

Admission = Literal["start", "wait", "hold", "own"]


@dataclass(frozen=True)
class LeaderHold:
    """A leader call's hold on the budget: its ``key`` and ``share`` (both None when nothing is
    held: no budget), or why the budget has no room for it (``no_room``)."""

    key: str | None = None
    share: BudgetShare | None = None
    no_room: str | None = None


@dataclass(frozen=True)
class Verdict:
    """Whether a ready task may start now: ``start`` (with its share), ``wait`` (the run's
    budget has no room; ``hard``: not even once every running agent has settled), ``hold``
    (a new task past the run's agent count) or ``own`` (past its own cap)."""

    kind: Admission
    share: BudgetShare | None = None
    why: str = ""
    hard: bool = False


class Budget:
    """The run's budget: what may start, what was spent, what a person must decide."""

    def __init__(
        self,
        state: BudgetState,
        run: RunFacts,
        board: TaskBoard,
        requests: RequestBook,
        options: RunOptions,
        run_id: str,
    ) -> None:
        self.state = state
        self.run = run
        self.board = board
        self.requests = requests
        self.options = options
        self.run_id = run_id
        # agent id → its dispatch's hold on the budget (a run with a budget)
        self.flights: dict[str, Flight] = {}
        # what they hold, kept during one dispatch pass (None between passes)
        self.holding: tuple[int, float] | None = None
        # usage settled since the shell last took it (for its metrics)
        self.settled = Usage()
        # Set by the shell (patch leader-budget-holds): the leader's own model calls (coordinator,
        # planner) hold a share of the budget while they run, as agents do; their holds by key
        # (workflow-local: a run drains its consultations and replans before it continues as new).
        self.leader_budget = False
        self.leader_holds: dict[str, BudgetShare] = {}

    @property
    def limits(self) -> RunBudget | None:
        return self.state.limits

    # -- what a task may spend ---------------------------------------------------------------

    @staticmethod
    def _spend(task: TaskState) -> TaskSpend:
        if task.spend is None:
            task.spend = TaskSpend()
        return task.spend

    def _caps(self, task: TaskState) -> Limits:
        """A task's own cap: the narrowest of the run's per-agent cap, its role's and its
        ``<config>`` budget — under what a person set for it with set_budget."""
        budget = self.state.limits or RunBudget()
        agent = self.board.agents.get(task.agent_id)
        plan = narrow(
            narrow(budget.per_agent, budget.per_role.get(task.assigned_agent)),
            config_budget(agent.config if agent else None),
        )
        person = budget.per_task.get(task.id)
        return overlay(plan, person) if person is not None else plan or Limits()

    def model(self, agent_id: str) -> bool:
        """May this agent call a model (not a direct ``<config>`` tool)?"""
        agent = self.board.agents.get(agent_id)
        return agent is not None and tool_name(agent.config) is None

    def _used(self) -> Usage:
        """What the run has spent, with what it charged for attempts that did not say."""
        return self.state.spend.total.plus(self.state.spend.unconfirmed)

    def _held(self) -> tuple[int, float]:
        """Tokens and USD running agents hold: their shares less what they settled since
        (during a dispatch pass, kept as it goes: a pass costs its starts, not starts × agents)."""
        if self.holding is not None:
            return self.holding
        tokens, usd = 0, 0.0
        for agent_id, flight in self.flights.items():
            row = self.board.row(agent_id)
            held = flight.holding
            if held is None or row is None:
                continue
            used = (row.spend or TaskSpend()).usage.minus(flight.start)
            tokens += max(0, (held.tokens or 0) - used.tokens)
            usd += max(0.0, (held.usd or 0.0) - used.usd)
        for share in self.leader_holds.values():  # the coordinator's and planner's calls
            tokens += share.tokens or 0
            usd += share.usd or 0.0
        return tokens, usd

    def _verdict(self, task: TaskState, now: datetime) -> Verdict:
        """May ``task`` start now, and with what share? (Pure: changes nothing.)"""
        budget = self.state.limits
        if budget is None:
            return Verdict("start")
        limits, spend = budget.run, self.state.spend
        start = self.run.started_at or now
        end = start + timedelta(minutes=limits.minutes) if limits.minutes is not None else None
        if end is not None and now >= end:
            used = describe("minutes", (now - start).total_seconds() / 60, limits.minutes)
            return Verdict("wait", why=self._raise_it(f"{used} used", "minutes"), hard=True)
        own = task.spend or TaskSpend()
        if own.started_at is None and limits.agents is not None and spend.started >= limits.agents:
            used = describe("agents", spend.started, limits.agents)
            return Verdict("hold", why=self._raise_it(f"{used} started", "agents"))
        caps = self._caps(task)
        if caps.minutes is not None:
            mine = (own.started_at or now) + timedelta(minutes=caps.minutes)
            if now >= mine:
                return self._own(task, describe("minutes", caps.minutes, caps.minutes), "minutes")
            end = min(end, mine) if end is not None else mine
        if not self.model(task.agent_id):
            return Verdict("start")
        tokens, blocked = self._share("tokens", task, own, caps.tokens, limits.tokens)
        if blocked is not None:
            return blocked
        usd, blocked = self._share("usd", task, own, caps.usd, limits.usd)
        if blocked is not None:
            return blocked
        if tokens is None and usd is None and end is None:
            return Verdict("start")
        whole = int(tokens) if tokens is not None else None
        return Verdict("start", BudgetShare(tokens=whole, usd=usd, until=end))

    def _share(
        self, key: str, task: TaskState, own: TaskSpend, cap: float | None, limit: float | None
    ) -> tuple[float | None, Verdict | None]:
        """A model task's share of tokens (or USD): what it wants and the least it may start
        with — its cap's rest, or the reserve raised to the most a dispatch has used (twice its
        last share when that ran out) — fitted into the run's room; or why it cannot start."""
        if cap is None and limit is None:
            return None, None
        budget = self.state.limits or RunBudget()
        spend = self.state.spend
        need = getattr(own.need or Usage(), key if key == "usd" else "tokens")
        mine = getattr(own.usage.plus(own.unconfirmed), key if key == "usd" else "tokens")
        if key == "usd":
            base = self._usd_reserve(limit) or 0.0
            largest: float = spend.largest.usd
            floor = 0.0
        else:
            base, largest, floor = budget.reserve_tokens(), spend.largest.tokens, MIN_ANSWER
        if cap is not None:
            want = cap - mine
            if want <= 0 or want < max(need, floor):
                return None, self._own(task, describe(key, mine, cap), key)
            least = min(want, max(base, need, floor))
        else:
            least = max(base, need)
            want = max(least, largest)
            last = getattr(own.share, key) if own.share is not None else None
            if own.stopped == key and last:
                want = max(want, 2 * last)
        if limit is None:
            return want, None
        left = limit - getattr(self._used(), key if key == "usd" else "tokens")
        held = self._held()[1 if key == "usd" else 0]
        if left - held >= least:
            return min(want, left - held), None
        needs = f"${least:,.2f}" if key == "usd" else f"{least:,.0f}"
        why = f"{describe(key, limit - left, limit)} used, and the next agent ({task.id}) needs {needs}"
        return None, Verdict("wait", why=self._raise_it(why, key), hard=left < least)

    def _raise_it(self, figures: str, key: str) -> str:
        return (
            f"budget: {figures}; raise it (starter.py budget {self.run_id} {key}=…, or the "
            f"set_budget update in the Web UI) or end the run (starter.py end {self.run_id}, or "
            "the end_run update)"
        )

    def _own(self, task: TaskState, figures: str, key: str) -> Verdict:
        return Verdict(
            "own",
            why=f"budget: {task.id} used {figures} (its own cap); raise its cap (starter.py budget {self.run_id} "
            f"--task {task.id} {key}=…, or the set_budget update with taskId) or skip it (starter.py "
            f"skip {self.run_id} {task.id}, or the skip_task update)",
        )

    # -- admission: the core's dispatch asks ---------------------------------------------------

    def admit(
        self, task: TaskState, now: datetime, said_already: bool = False
    ) -> tuple[Verdict, str | None]:
        """``_verdict``, acted on: a run that cannot go on says so once (E-n about the run),
        a task past its own cap waits on an E-n of its own. With the verdict, what changed for
        people to see (a log line when an E-n about the run is new; "" for a change alone).
        ``said_already``: the pass's E-n about the run said why already (a task that waits
        before this one): its words stay, or two reasons would take turns in it every pass."""
        if self.holding is None and self.state.limits is not None:
            self.holding = self._held()  # for the rest of this dispatch pass (reserve adds)
        verdict = self._verdict(task, now)
        said: str | None = None
        if verdict.kind == "own":
            request = self.requests.new("escalation", task, verdict.why, now)
            request.about = "budget"
            self.board.set_waiting(task, request.id)
            task.last_progress = f"waiting for {request.id}: its budget is spent"
            said = ""
        elif (verdict.kind == "hold" or (verdict.kind == "wait" and verdict.hard)) and not (
            said_already
        ):
            said = self._budget_request(verdict.why, now)
        return verdict, said

    def budget_settled(self, blocked: bool, admitted: bool, now: datetime) -> None:
        """After a dispatch pass: the run's budget E-n goes once the budget admits work again,
        or nothing waits to run."""
        self.holding = None
        if blocked or self.state.limits is None:
            return
        if admitted or not self.board.any_ready():
            for request in self._budget_requests():
                self.requests.close(request, "answered", now)
                request.answer = "the budget admits work again"

    def _budget_requests(self) -> list[HumanRequest]:
        return [
            r for r in self.requests.pending if r.about == "budget" and r.task_id == RUN_REQUEST
        ]

    def _budget_request(self, why: str, now: datetime) -> str | None:
        """The one pending E-n about the run's budget, saying the latest figures: its log line
        when it is new, "" when only its figures changed, None when nothing did."""
        pending = self._budget_requests()
        if pending:
            if pending[0].text != why:
                pending[0].text = why
                return ""
            return None
        request = self.requests.new("escalation", None, why, now)
        request.about = "budget"
        return f"budget: {request.id} {why}"

    def reserve(self, task: TaskState, share: BudgetShare | None, now: datetime) -> None:
        """A task is dispatched in a run with a budget: its share is held while it runs."""
        spend = self._spend(task)
        if spend.started_at is None:
            spend.started_at = now
            self.state.spend.started += 1
        spend.share, spend.stopped, spend.need = share, None, None
        if self.holding is not None and share is not None:
            self.holding = (
                self.holding[0] + (share.tokens or 0),
                self.holding[1] + (share.usd or 0.0),
            )
        self.flights[task.agent_id] = Flight(
            task.attempt, share, spend.usage, self.model(task.agent_id) and share is not None
        )

    # -- the leader's own model calls ---------------------------------------------------------------

    def hold_leader_call(
        self, key: str, estimate: int, answer: int, readings: int, now: datetime
    ) -> LeaderHold:
        """Reserve a share of the run's budget for one of the leader's model calls (a
        consultation of its coordinator, the planner) before it is made, as an agent's share is
        reserved before it starts: ``estimate`` tokens in, up to ``answer`` out, ``readings``
        requests. The call is made only with room for its first request; the activity checks its
        share before every request (xsky.plan.budget.call_room). Nothing is held without a
        budget, or in a run started before leader calls held shares."""
        budget = self.state.limits
        if budget is None or not self.leader_budget:
            return LeaderHold()
        limits, spend = budget.run, self.state.spend
        start = self.run.started_at or now
        end = start + timedelta(minutes=limits.minutes) if limits.minutes is not None else None
        if end is not None and now >= end:
            return LeaderHold(
                no_room=f"the run's {describe('minutes', limits.minutes or 0)} are up"
            )
        least = estimate + MIN_ANSWER
        want = readings * (estimate + answer)
        used, (held_tokens, held_usd) = self._used(), self._held()
        tokens: int | None = None
        usd: float | None = None
        if limits.tokens is not None:
            left = int(limits.tokens - used.tokens - held_tokens)
            if left < least:
                return LeaderHold(
                    no_room=f"{max(0, left):,} tokens of the budget are free "
                    f"({describe('tokens', used.tokens, limits.tokens)} used, {held_tokens:,} "
                    f"held by running work) and the call needs about {least:,}"
                )
            tokens = min(left, want)
        if limits.usd is not None:
            left_usd = limits.usd - used.usd - held_usd
            price = spend.price
            if left_usd <= 0 or left_usd < least * price:
                return LeaderHold(
                    no_room=f"${max(0.0, left_usd):,.4f} of the budget is free "
                    f"({describe('usd', used.usd, limits.usd)} used) and the call needs more"
                )
            usd = min(left_usd, want * price if price else limits.usd / USD_RESERVE_PART)
        share = BudgetShare(tokens=tokens, usd=usd, until=end)
        self.leader_holds[key] = share
        return LeaderHold(key, share)

    def leader_call_ended(self, key: str | None, source: str, failed: Usage | None = None) -> None:
        """A leader call's hold goes. One that answered settled its usage with its answer; one
        that failed is charged what its error said it used, or, when it could not say (its
        worker was lost), its whole share."""
        share = self.leader_holds.pop(key, None) if key is not None else None
        if share is None:
            return
        if failed is None:
            return
        self.settle(source, failed)

    def leader_call_lost(self, key: str | None, source: str) -> None:
        """A leader call that ended without saying what it used: charged its whole share."""
        share = self.leader_holds.get(key) if key is not None else None
        if share is None:
            return
        self.leader_call_ended(
            key, source, Usage(input_tokens=share.tokens or 0, usd=share.usd or 0.0)
        )

    # -- settlement ------------------------------------------------------------------------------

    def settle_usage(
        self, agent_id: str, report: UsageReport | None, dispatch: int | None = None
    ) -> bool:
        """Settle what an agent's conversation used beyond what was counted of it; with
        ``dispatch``: the end of that dispatch, which has now said what it used. True when
        something was settled."""
        row = self.board.row(agent_id)
        if report is None or row is None:
            return False
        flight = self.flights.get(agent_id)
        if dispatch is not None and flight is not None and flight.dispatch == dispatch:
            flight.reported = True
        if report.total.empty():
            return False
        spend = self._spend(row)
        known = spend.seen.get(report.conversation, Usage())
        delta = report.total.minus(known)
        if delta.empty():
            return False
        spend.seen[report.conversation] = known.most(report.total)
        spend.usage = spend.usage.plus(delta)
        if not spend.unconfirmed.empty() and spend.unconfirmed_in in (None, report.conversation):
            # the conversation that did not say what it used has said it now
            self.state.spend.unconfirmed = self.state.spend.unconfirmed.minus(spend.unconfirmed)
            spend.unconfirmed, spend.unconfirmed_in = Usage(), None
        self._count(delta)
        if delta.tokens and delta.usd / delta.tokens > self.state.spend.price:
            self.state.spend.price = delta.usd / delta.tokens
        return True

    def settle(self, source: str, usage: Usage) -> bool:
        """Usage not tied to a task's dispatch — the planner's, a coordinator's (``leader``):
        counted in the run's total (and so against its budget) under its source. True when
        there was any."""
        if usage.empty():
            return False
        sources = self.state.spend.sources
        sources[source] = sources.get(source, Usage()).plus(usage)
        self._count(usage)
        return True

    def _count(self, usage: Usage) -> None:
        self.state.spend.total = self.state.spend.total.plus(usage)
        self.settled = self.settled.plus(usage)

    def flight_ended(self, agent_id: str, dispatch: int) -> None:
        """A dispatch's activity is over: its hold goes. One that never said what it used is
        charged the rest of its share (an upper bound) until its conversation says."""
        flight = self.flights.get(agent_id)
        row = self.board.row(agent_id)
        if flight is None or flight.dispatch != dispatch or row is None:
            return
        del self.flights[agent_id]
        spend = self._spend(row)
        used = spend.usage.minus(flight.start)
        if flight.model:
            self.state.spend.largest = self.state.spend.largest.most(used)
        held = flight.holding
        if flight.reported or not flight.model or held is None:
            return
        charge = Usage(
            input_tokens=max(0, (held.tokens or 0) - used.tokens),
            usd=max(0.0, (held.usd or 0.0) - used.usd),
        )
        if not charge.empty():
            spend.unconfirmed = spend.unconfirmed.plus(charge)
            spend.unconfirmed_in = next(reversed(spend.seen), None)
            self.state.spend.unconfirmed = self.state.spend.unconfirmed.plus(charge)

    def flight_unused(self, agent_id: str) -> None:
        """A dispatch that never started an activity (its input could not be made)."""
        if agent_id in self.flights:
            self.flights[agent_id].reported = True

    def budget_stopped(self, task: TaskState, outcome: AgentOutcome) -> None:
        """The agent stopped before a model call its share could not cover: it runs again,
        from its checkpoint, when the budget admits a share that covers its next call."""
        spend = self._spend(task)
        spend.need, spend.stopped = outcome.need, outcome.stopped
        self.board.back_to_pending(task)
        what = {"tokens": "tokens", "usd": "USD", "time": "time"}.get(
            outcome.stopped or "", "budget"
        )
        task.last_progress = f"stopped cleanly: its share of the budget ({what}) is spent"

    # -- set_budget ----------------------------------------------------------------------------

    def _budget_limits(self, req: SetBudgetRequest) -> Limits:
        values = {k: getattr(req, k) for k in KEYS if getattr(req, k) is not None}
        keys = AGENT_KEYS if req.task_id else KEYS
        try:
            return limits_from(values, "set_budget", keys) if values else Limits()
        except BudgetError as e:
            raise Rejected(str(e)) from None

    def check_set_budget(self, req: SetBudgetRequest, plan_version: int) -> None:
        given = [k for k in (*KEYS, "reserve") if getattr(req, k) is not None]
        if not given:
            raise Rejected(
                'give at least one limit: tokens, usd, minutes or agents, e.g. {"tokens": 200000}'
            )
        self._budget_limits(req)
        if req.reserve is not None:
            try:
                limits_from({"tokens": req.reserve}, "set_budget reserve")
            except BudgetError:
                # Said as the reserve is given (`budget RUN --reserve 4096`, `reserve=4096`):
                # the tokens limit's own sentence ("write e.g. tokens=100000") is no form of it.
                said = f"{req.reserve:g}" if isinstance(req.reserve, float) else req.reserve
                raise Rejected(
                    f"reserve must be a whole number of tokens more than 0, not {said}; "
                    "give e.g. 4096"
                ) from None
        if req.task_id is not None:
            self.board.require(req.task_id, plan_version)

    def set_budget(self, req: SetBudgetRequest, plan_version: int, now: datetime) -> str:
        """A person raises or lowers limits: what they set, in words (the escalations that no
        longer apply are closed by :meth:`review_requests`)."""
        limits = self._budget_limits(req)
        budget = self.state.limits
        if budget is None:  # the run had none: count what it already started
            budget = RunBudget()
            self.state.spend.started = sum(1 for t in self.board.state.tasks if t.attempt > 0)
            for t in self.board.state.tasks:
                if t.attempt > 0:
                    self._spend(t).started_at = t.dispatched_at or now
        if req.task_id is not None:
            task = self.board.require(req.task_id, plan_version)
            per_task = {**budget.per_task, task.id: overlay(budget.per_task.get(task.id), limits)}
            budget = budget.model_copy(update={"per_task": per_task})
            what = f"{task.id}'s cap: {limits_text(per_task[task.id])}"
        else:
            budget = budget.model_copy(update={"run": overlay(budget.run, limits)})
            what = f"the run's budget: {limits_text(budget.run) or 'no limits'}"
        if req.reserve is not None:
            budget = budget.model_copy(update={"reserve": int(float(req.reserve))})
            what += f"; reserve {budget.reserve:,} tokens"
        self.state.limits = RunBudget.model_validate(budget.model_dump())
        return what

    # -- limits changed while agents run -------------------------------------------------------

    def running_work(self) -> list[TaskState]:
        """Tasks running now (their dispatch's share is fitted when a person changes limits)."""
        return [t for t in self.board.state.tasks if t.stored in RUNNING and t.attempt > 0]

    def refit(self, now: datetime) -> list[str]:
        """The limits changed (set_budget) while tasks run: a running model agent whose share no
        longer fits them — what the run spent and running agents hold is over a limit, its
        share has no such limit (the run had no budget when it started), or its own cap is
        lower than what it may still spend — gets a share of what it has spent, so it stops
        cleanly before its next model call (it learns it from ``dispatch_news``) and is
        dispatched again with a share the budget admits, counted on what it really spent (the
        leader only knows what running agents have reported so far: sharing out the room among
        them by that would overrun it). The time limit applies to each at once. The tasks
        whose shares changed."""
        limits = self.state.limits
        if limits is None:
            return []
        run = limits.run
        self.holding = None
        used, held = self._used(), self._held()
        over = {
            "tokens": run.tokens is not None and used.tokens + held[0] > run.tokens,
            "usd": run.usd is not None and used.usd + held[1] > run.usd,
        }
        start = self.run.started_at or now
        end = start + timedelta(minutes=run.minutes) if run.minutes is not None else None
        changed = []
        for task in self.running_work():
            spend = self._spend(task)
            flight = self.flights.get(task.agent_id)
            if flight is None or flight.dispatch != task.attempt:  # the run had no budget
                flight = self.flights[task.agent_id] = Flight(
                    task.attempt, None, spend.usage, self.model(task.agent_id)
                )
            model = self.model(task.agent_id)  # (one dispatched with no share was not marked so)
            share = self._fitted(task, flight, model, run, over, end)
            if share != flight.share:
                if flight.hold is None:  # what it may have spent stays held until it ends
                    flight.hold = flight.share or (self._placeholder(run) if model else None)
                flight.share, flight.model = share, flight.model or model
                changed.append(task.id)
        return changed

    def _placeholder(self, run: Limits) -> BudgetShare:
        """What an agent that ran without a share holds once the budget binds it: a
        reservation (what it spent unreported is not known)."""
        budget = self.state.limits or RunBudget()
        return BudgetShare(tokens=budget.reserve_tokens(), usd=self._usd_reserve(run.usd))

    def _usd_reserve(self, limit: float | None) -> float | None:
        """The USD an agent is reserved before it reports: its token reserve at the model's
        price, or (an unpriced model) a fixed part of the run's USD limit; None without either."""
        budget = self.state.limits or RunBudget()
        price = self.state.spend.price
        if price:
            return budget.reserve_tokens() * price
        return limit / USD_RESERVE_PART if limit is not None else None

    def _fitted(
        self,
        task: TaskState,
        flight: Flight,
        model: bool,
        run: Limits,
        over: dict[str, bool],
        end: datetime | None,
    ) -> BudgetShare | None:
        """``flight``'s share under the limits now in force (see :meth:`refit`)."""
        old = flight.share
        spent = self._spend(task).usage.minus(flight.start)
        caps = self._caps(task)
        fields: dict[str, float | None] = {}
        for key in ("tokens", "usd") if model else ():
            had = getattr(old, key) if old is not None else None
            mine = float(getattr(self._spend(task).usage, key))  # the task's, all dispatches
            cap = getattr(caps, key)
            stop = (
                over[key]
                or (getattr(run, key) is not None and had is None)
                or (
                    cap is not None
                    and (had is None or mine - float(getattr(spent, key)) + had > cap)
                )
            )
            fields[key] = float(getattr(spent, key)) if stop else had
        until = old.until if old is not None else None
        if end is not None:
            until = min(until, end) if until is not None else end
        tokens, usd = fields.get("tokens"), fields.get("usd")
        if tokens is None and usd is None and until is None:
            return None
        return BudgetShare(tokens=None if tokens is None else int(tokens), usd=usd, until=until)

    def share_now(self, agent_id: str, dispatch: int) -> tuple[BudgetShare | None, bool]:
        """The share dispatch ``dispatch`` of agent ``agent_id`` holds now, and whether the
        leader holds one for it at all."""
        flight = self.flights.get(agent_id)
        if flight is None or flight.dispatch != dispatch:
            return None, False
        return flight.share, True

    def review_requests(self, now: datetime) -> list[str]:
        """Close the budget's escalations that the limits in force no longer call for; the
        others say the latest figures."""
        closed = []
        for request in list(self.requests.pending):
            if request.about != "budget":
                continue
            if request.task_id == RUN_REQUEST:
                first = self.board.first_ready()
                verdict = self._verdict(first, now) if first is not None else None
                still = verdict is not None and (verdict.kind == "hold" or verdict.hard)
                task = None
            else:
                task = self.board.task_by_id(request.task_id)
                if task is None or task.waiting_on != request.id:
                    continue
                verdict = self._verdict(task, now)
                still = verdict.kind == "own"
            if still and verdict is not None:  # still called for: the latest figures
                request.text = verdict.why
                continue
            self.requests.close(request, "answered", now)
            request.answer = "the budget was raised"
            if task is not None:
                self.board.set_waiting(task, None)
            closed.append(request.id)
        return closed

    def expired(self, request: HumanRequest, now: datetime) -> str | None:
        """Nobody decided a budget escalation in time. A task's own: that task fails (None).
        The run's: what did not run is not run, and the run ends failed — the reason is
        returned for the router to end it with."""
        wait = (
            f"{self.options.request_timeout / 3600:g}h"
            if self.options.request_timeout >= 3600
            else f"{self.options.request_timeout:g}s"
        )
        figures = request.text.removeprefix("budget: ").split(";")[0]
        if request.task_id != RUN_REQUEST:
            task = self.board.task_by_id(request.task_id)
            if task is not None and task.waiting_on == request.id:
                self.board.set_waiting(task, None)
                self.board.finish(
                    task,
                    "failed",
                    now,
                    error=f"budget spent: {figures}; nobody raised it within {wait}",
                )
            return None
        for task in self.board.state.tasks:  # what did not run is not run
            if not task.terminal and task.agent_id not in self.board.active:
                self.requests.withdraw(task.waiting_on, f"withdrawn: {task.id} not run", now)
                self.board.set_waiting(task, None)
                self.board.finish(task, "cancelled", now, error="not run: the budget was spent")
        return f"budget spent: {figures}; nobody raised it within {wait}"

    def no_room_to_judge(self) -> str | None:
        """Why the run's budget leaves no room for a consultation (None: it does, or the run
        has no budget), as leaders before patch leader-budget-holds judged it: once what is
        left (less what running agents hold) is under one reservation, the leader judged by its
        mechanical rules alone."""
        budget = self.state.limits
        if budget is None:
            return None
        used, (held_tokens, held_usd) = self._used(), self._held()
        limits = budget.run
        if limits.tokens is not None:
            left = limits.tokens - used.tokens - held_tokens
            if left < budget.reserve_tokens():
                return f"the budget has {max(0, left):,} tokens left, less than one reservation"
        if limits.usd is not None and self.state.spend.price:
            left_usd = limits.usd - used.usd - held_usd
            if left_usd < budget.reserve_tokens() * self.state.spend.price:
                return f"the budget has ${max(0.0, left_usd):,.4f} left, less than one reservation"
        return None

    # -- what people see -----------------------------------------------------------------------

    def budget_view(self, now: datetime) -> BudgetView:
        spend = self.state.spend
        held_tokens, held_usd = self._held()
        started = self.run.started_at or now
        pending = self._budget_requests()
        return BudgetView(
            limits=self.state.limits.run if self.state.limits is not None else None,
            spent=spend.total,
            unconfirmed=spend.unconfirmed,
            reserved_tokens=held_tokens,
            reserved_usd=held_usd,
            minutes=max(0.0, (now - started).total_seconds() / 60),
            agents=spend.started,
            sources=dict(spend.sources),
            paused=f"{pending[0].id}: {pending[0].text}" if pending else None,
        )
