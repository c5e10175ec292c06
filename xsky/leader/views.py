"""What people see: the board and its pages, the plan, reports, notices and the result — read
only, and the one home of the core's markdown (text glyphs, no emoji: common fonts draw them
as empty boxes)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from xsky.gcpause import gc_paused
from xsky.leader.audit import AuditLog
from xsky.leader.board import TaskBoard
from xsky.leader.budget import Budget
from xsky.leader.commands import INLINE_AGENTS, INLINE_RESULT_BUDGET, PLAN_PAGE, SATISFIED
from xsky.leader.coordinator.judgment import Judgment
from xsky.leader.coordinator.views import CoordinatorViews
from xsky.leader.flow import Flow
from xsky.leader.plans import PlanBook
from xsky.leader.requests import RequestBook
from xsky.leader.state import BoardPage, LeaderState, PageRequest, PlanVersion, RunFacts
from xsky.leader.tasks import TaskView, derive_statuses, subject_of
from xsky.plan.budget import BudgetView, checks_warning
from xsky.plan.variables import item_values, with_values
from xsky.runs import AgentReport, FinalStatus, ResultsPage, RunInput, RunResult
from xsky.safe_text import markdown_inline


class Views:
    """Read-only projections of the state."""

    def __init__(
        self,
        state: LeaderState,
        inp: RunInput,
        run_id: str,
        flow: Flow,
        board: TaskBoard,
        plans: PlanBook,
        requests: RequestBook,
        budget: Budget,
        audit: AuditLog,
        judgment: Judgment,
        coordinator: CoordinatorViews,
    ) -> None:
        self.state = state
        self.input = inp
        self.options = inp.options
        self.run_id = run_id
        self.flow = flow
        self.board = board
        self.plans = plans
        self.requests = requests
        self.budget = budget
        self.audit = audit
        self.judgment = judgment
        self.coordinator = coordinator

    @property
    def run(self) -> RunFacts:
        return self.state.run

    # -- what people see ---------------------------------------------------------------------------

    def board_page(self, now: datetime, req: PageRequest | None = None) -> BoardPage:
        """A page of the board (derived statuses need the whole board: queries only)."""
        req = req or PageRequest()
        derived = derive_statuses({t.id: t for t in self.board.state.tasks})
        counts: dict[str, int] = {}
        for status, _ in derived.values():
            counts[status] = counts.get(status, 0) + 1
        chosen = [
            t
            for t in self.board.state.tasks
            if req.status is None or derived[t.id][0] == req.status
        ]
        page = chosen[req.offset : req.offset + req.limit]
        return BoardPage(
            total=len(chosen),
            offset=req.offset,
            counts=dict(sorted(counts.items())),
            tasks=self._with_items([TaskView.of(t, *derived[t.id], now) for t in page]),
            state=self.run_state(),
            notes=self.notices(now),
            budget=self._shown_budget(now),
        )

    def _with_items(self, views: list[TaskView]) -> list[TaskView]:
        """A forEach item's line read with its item ("read page 2: beta", not three identical
        "read page {{item_index}}: {{item}}"). Shown so, in queries only: the stored task is
        as it always was (its size decides a run's continue-as-new)."""
        if not any("[" in v.agent_id for v in views):
            return views
        shown = self.item_text()
        for view in views:
            if "[" in view.agent_id:
                view.description = shown(view.agent_id, view.description)
                view.subject = subject_of(view.description)
        return views

    def item_text(self) -> Callable[[str, str], str]:
        """``(agent id, task text) → the text people read``: a forEach item's with its item and
        number in place of ``{{item}}`` and ``{{item_index}}``, any other as it is."""
        agents = {a.id: a for a in self.plans.plan.agents if a.item is not None}

        def shown(agent_id: str, text: str) -> str:
            agent = agents.get(agent_id)
            return text if agent is None else with_values(text, item_values(agent))

        return shown

    def _shown_budget(self, now: datetime) -> BudgetView | None:
        """Spend against the budget; spend alone in a run without one (None: nothing spent)."""
        if self.budget.limits is None and self.budget.state.spend.total.empty():
            return None
        return self.budget.budget_view(now)

    def results_page(self, req: PageRequest | None = None) -> ResultsPage:
        req = req or PageRequest()
        reports = [
            r
            for r in self.reports(INLINE_RESULT_BUDGET)
            if req.status is None or r.status == req.status
        ]
        return ResultsPage(
            total=len(reports),
            offset=req.offset,
            agents=reports[req.offset : req.offset + req.limit],
        )

    def plan_page(self, req: PageRequest | None = None) -> str:
        """The plan as XML with statuses and results; a large plan one page of agents at a time."""
        req = req or PageRequest(limit=PLAN_PAGE)
        total = len(self.plans.plan.agents)
        if total <= req.limit and req.offset == 0:
            return self.plans.planner_xml(self.board.tasks, None)
        window = self.plans.plan.agents[req.offset : req.offset + req.limit]
        xml = self.plans.planner_xml(self.board.tasks, window)
        last = req.offset + len(window)
        return (
            f"<!-- agents {req.offset + 1}–{last} of {total}"
            + (f'; the next page: query plan with {{"offset": {last}}}' if last < total else "")
            + " -->\n"
            + xml
        )

    def history_page(self, req: PageRequest | None = None) -> list[PlanVersion]:
        req = req or PageRequest()
        return list(self.plans.state.history[req.offset : req.offset + req.limit])

    def snapshot(self) -> str:
        """The state for the next run, as JSON in the form it travels in (flat: see
        LeaderState), results by reference whenever stored."""
        tasks = [
            t.model_copy(update={"result": None}) if t.result_ref is not None else t
            for t in self.board.state.tasks
        ]
        carried = self.state.carried().model_copy(update={"tasks": tasks})
        return carried.model_dump_json(by_alias=True, exclude_defaults=True)

    def whole_board(self, now: datetime, as_shown: bool = True) -> str:
        """The board with every task, as JSON: what a large run leaves when it ends, so that
        `status` reads it (BoardPage.page) instead of a worker replaying the whole run.
        ``as_shown`` False: as v0.11.10 and before stored it (items' lines as written, a paused
        note on an ended run) — its length decides how many parts the store gets, which a
        history recorded then replays."""
        views, counts = self._task_views(now)
        if as_shown:
            self._with_items(views)
        return self._board_json(now, views, counts, self._final_notes(now, as_shown))

    def final_board(self, now: datetime) -> tuple[str, bool]:
        """``(whole_board(now), whole_board(now) != whole_board(now, as_shown=False))``, made
        with one board: the two differ only in forEach items' lines (their items filled in)
        and in the notes, both told apart here without making the second board, which only a
        history recorded before v0.11.11 needs (patch final-board-as-shown). A 30,000-task
        board took 1.4–2 s each on a loaded 2-core machine, in a workflow task (perf41b)."""
        with gc_paused():  # (a line per task: no collector walks of the whole state meanwhile)
            return self._final_board(now)

    def _final_board(self, now: datetime) -> tuple[str, bool]:
        views, counts = self._task_views(now)
        differs = False
        if any("[" in v.agent_id for v in views):
            shown = self.item_text()
            for view in views:
                if "[" in view.agent_id:  # (as _with_items sets them)
                    text = shown(view.agent_id, view.description)
                    subject = subject_of(text)
                    if text != view.description or subject != view.subject:
                        differs = True
                        view.description, view.subject = text, subject
        notes = self._final_notes(now, as_shown=True)
        differs = differs or notes != self._final_notes(now, as_shown=False)
        return self._board_json(now, views, counts, notes), differs

    def _task_views(self, now: datetime) -> tuple[list[TaskView], dict[str, int]]:
        """Every task as the board shows it, and the counts by status."""
        derived = derive_statuses({t.id: t for t in self.board.state.tasks})
        counts: dict[str, int] = {}
        for status, _ in derived.values():
            counts[status] = counts.get(status, 0) + 1
        return [TaskView.of(t, *derived[t.id], now) for t in self.board.state.tasks], counts

    def _final_notes(self, now: datetime, as_shown: bool) -> list[str]:
        return self.notices(now, ended_paused=not as_shown, shown=as_shown)

    def _board_json(
        self, now: datetime, views: list[TaskView], counts: dict[str, int], notes: list[str]
    ) -> str:
        return BoardPage(
            total=len(views),
            offset=0,
            counts=dict(sorted(counts.items())),
            tasks=views,
            state=self.run_state(),
            notes=notes,
            budget=self._shown_budget(now),
        ).model_dump_json(by_alias=True, exclude_none=True)

    def large(self) -> bool:
        return len(self.board.state.tasks) > INLINE_AGENTS

    def reports_jsonl(self, reports: list[AgentReport] | None = None) -> str:
        """Every report as a line of JSON (``reports``: made by ``reports(0)`` already)."""
        return "".join(
            r.model_dump_json(by_alias=True, exclude_none=True) + "\n"
            for r in (self.reports(0) if reports is None else reports)
        )

    def ending(self, now: datetime) -> tuple[RunResult, str | None]:
        """How the run ended, and for a large run every report as JSON lines (what
        ``results_ref`` stores): ``(result(now), reports_jsonl() if large() else None)`` from
        one pass over the board. The run's last workflow task made the reports twice, once for
        each: at 30,000 agents ~0.9 s each on a loaded 2-core machine, in a task the server
        gives up after 10 s (perf41b)."""
        if not self.large():
            return self.result(now), None
        with gc_paused():  # (30,000 reports: no collector walks of the whole state meanwhile)
            reports = self.reports(0)
            return self.result(now, reports), self.reports_jsonl(reports)

    def reports(self, budget: int = INLINE_RESULT_BUDGET) -> list[AgentReport]:
        derived = derive_statuses({t.id: t for t in self.board.state.tasks})
        reports = []
        for task in self.board.state.tasks:
            inline = task.result
            if inline is not None:
                size = len(inline.encode("utf-8"))
                if size > budget and task.result_ref is not None:
                    inline = None  # the run's result must stay well under the payload limit
                else:
                    budget -= size
            reports.append(
                AgentReport(
                    id=task.agent_id,
                    task_id=task.id,
                    name=task.assigned_agent,
                    status=derived[task.id][0],
                    result=inline,
                    result_ref=task.result_ref,
                    error=task.error or derived[task.id][1],
                    attempts=task.attempt,
                    started_at=task.started_at,
                    ended_at=task.ended_at,
                    artifacts=task.artifacts,
                    provider=task.provider if task.stored == "completed" else None,
                    usage=task.spend.usage if task.spend and not task.spend.usage.empty() else None,
                )
            )
        return reports

    def run_state(self) -> str:
        """What the run is doing, in a word (the XskyStatus search attribute, ``status``)."""
        if self.flow.closing or self.flow.ended:
            return "finishing"
        if self.plans.state.review == "waiting":
            return "reviewing"
        if self.run.paused:
            return "paused"
        if self.requests.pending:
            return "waiting"
        if self.flow.replanning:
            return "replanning"
        return "running"

    def waiting_on_people(self) -> int:
        """Requests a person must answer, the plan review counted as one."""
        return len(self.requests.pending) + (1 if self.plans.state.review == "waiting" else 0)

    def search_values(self) -> dict[str, str | int]:
        values: dict[str, str | int] = {
            "XskyStatus": self.run_state(),
            "XskyPlan": self.plans.plan.name or self.plans.plan.task_id,
            "XskyFailed": self.board.counts.get("failed", 0),
            "XskyPending": self.waiting_on_people(),
        }
        if self.plans.state.resumes:  # (only then: other runs' upserts stay as they were)
            values["XskyResumes"] = self.plans.state.resumes
        return values

    def notices(
        self,
        now: datetime | None = None,
        ended_paused: bool = False,
        markdown: bool = False,
        shown: bool = True,
    ) -> list[str]:
        """The lines above the board: review, pause, questions, replanning, sandbox, mode, and
        (given the time) the budget. ``ended_paused``: a paused run that ended still says it is
        paused (as v0.11.10 and before did: whole_board). ``markdown``: for the Web UI's pane,
        which renders markdown and HTML — the words of agents and people in them (a question, a
        tool call's arguments, a pause's reason, a refused message) are made literal text there
        (an agent's question ``![x](https://host/?data)`` made the person's browser fetch that
        address when the board was looked at; a link or heading showed as the leader's own).
        ``shown`` False: the board a run stores as it ends (whole_board), as it always was — its
        size decides how many parts are stored, commands a replay must make alike."""

        def literal(text: str) -> str:
            return markdown_inline(text) if markdown else text

        notes = []
        if now is not None and self.budget.limits is not None:
            notes.append(self.budget.budget_view(now).summary())
            checks = (
                self.judgment.on
                and "off" not in (self.options.coordinator, self.judgment.ledger.mode)
                # an auto coordinator on workers with no model checks nothing (the leader line
                # says "off until a model answers"): no warning about checks' room (walk12)
                and not (self.judgment.mode() == "auto" and self.judgment.worker_model is None)
            )
            if self.budget.leader_budget and checks:
                models = sum(1 for agent_id in self.board.agents if self.budget.model(agent_id))
                small = checks_warning(self.budget.limits, models)
                if small is not None:
                    notes.append(f"warning: {small}")
        if self.plans.state.review == "waiting":
            notes.append(
                f"**waiting for plan review** — `starter.py approve-plan {self.run_id}` (the "
                f"`approve_plan` update, version {self.plans.version}, in the Web UI) or a replan"
            )
        if self.plans.state.resumes:
            notes.append(
                f"resumes {self.plans.state.resumes}: its completed results are carried over"
            )
        if self.run.paused and (ended_paused or not (self.flow.closing or self.flow.ended)):
            # (a paused run a person ended: no resume to offer — it would be refused)
            notes.append(
                "**paused**"
                + (f": {literal(self.run.pause_reason)}" if self.run.pause_reason else "")
                + f" — `starter.py resume {self.run_id}` (or the `resume` signal in the Web UI)"
            )
        for r in self.requests.pending:
            # (the budget's are the leader's own words, fixes included: kept whole)
            text = " ".join(r.text.split())
            if r.about != "budget" and shown:
                # cut where a word ends, said so, and a call in doubt's answers always given
                # (walk8: "It is not repeated without your say (th" — its answers were past 160)
                cut = text if len(text) <= 160 else text[:160].rsplit(" ", 1)[0] + " …"
                answers = f" — answers: {', '.join(r.choices)}" if r.choices else ""
                text = literal(cut + answers)
            elif r.about != "budget":
                text = literal(text[:160])
            notes.append(f"**{literal(r.id)}** ({r.kind}, {literal(r.task_id)}): {text}")
        if self.flow.replanning:
            notes.append("replanning…")
        if self.audit.sandbox_off():
            notes.append(
                "warning: **OS sandbox OFF** on a worker (security.sandbox: off): commands ran unconfined"
            )
        if self.audit.state.refused:
            notes.append(
                f"warning: {self.audit.state.refused} signal(s) refused (malformed, spoofed or not applicable), the last: "
                f"{literal(' '.join((self.audit.state.last_refusal or '').split())[:200])} (each is in the permission log)"
            )
        if self.input.permissions.mode != "default":
            warn = (
                " — only deny rules are enforced" if self.input.permissions.mode == "bypass" else ""
            )
            notes.append(f"permission mode **{self.input.permissions.mode}**{warn}")
        leader = self.coordinator.notice()
        if leader is not None:
            notes.append(leader)
        return notes

    def result(self, now: datetime, reports: list[AgentReport] | None = None) -> RunResult:
        """How the run ended. A large run's result holds only the agents that did not
        complete, without their results; the shell adds ``results_ref`` with every report.
        ``reports``: a large run's ``reports(0)``, made already (:meth:`ending`) — they differ
        from ``reports()`` only in results inline, which a large run's result leaves out."""
        if reports is None or not self.large():
            reports = self.reports(INLINE_RESULT_BUDGET)
        counts: dict[str, list[str]] = {}
        for r in reports:
            counts.setdefault(r.status, []).append(r.task_id)
        total = len(reports)
        if self.large():
            reports = [
                r.model_copy(update={"result": None}) for r in reports if r.status not in SATISFIED
            ][:INLINE_AGENTS]
        done = len(counts.get("completed", [])) + len(counts.get("skipped", []))
        cancelled = (
            self.flow.ended
            and not self.flow.ended_failed
            and not (self.flow.ended_by_person and counts.get("failed"))
        )
        status: FinalStatus = (
            "completed" if done == total else ("cancelled" if cancelled else "failed")
        )
        parts = [f"{done} of {total} agents completed"]
        for name in ("failed", "blocked", "cancelled"):
            if counts.get(name):
                parts.append(f"{len(counts[name])} {name} ({', '.join(counts[name][:8])})")
        if self.flow.ended:
            parts.insert(0, self.flow.ended)
        result = RunResult(
            workflow_id=self.run_id,
            name=self.plans.plan.name,
            status=status,
            summary="; ".join(parts),
            agents=reports,
            counts={k: len(v) for k, v in sorted(counts.items())},
            agents_total=total,
            plan_version=self.plans.version,
            started_at=self.run.started_at,
            ended_at=now,
            permission_log=self.audit.state.entries[-200:],
            usage=self.budget.state.spend.total,
            budget=self.budget.budget_view(now) if self.budget.limits is not None else None,
        )
        return self.coordinator.judged_result(result, self.flow.ended_by_person)
