"""A run: looking at it and steering it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.service import RPCError, RPCStatusCode

from activities.artifacts import open_store, read_blob, removed_by_gc
from activities.storage import open_objects
from client import leader_calls as calls
from client._consts import (
    QUERY_TRIES,
    RUNNING_STATUS,
    SILENT_WORKER_SECONDS,
    TRANSIENT,
    UPDATE_TIMEOUT,
    Decision,
)
from client.attempts import attempt_ends, retry_lines
from client.described import described_status
from client.fork import (
    REPEATS,
    REPEATS_FOLLOW_UP,
    carried,
    edited,
    fork_advice,
    fork_at,
    fork_id,
    fork_input,
    gone_inputs,
    grown_from,
    repeated_effects,
    still_carried,
    ungrown,
)
from client.once import board_once, describe_once
from client.outcome import cancelled_result, run_outcome
from client.results import reports_of, result_text
from client.resume import (
    agent_ids,
    budget_in_force,
    first_input,
    follow_up_id,
    follow_up_input,
    refuse_if_workspace_busy,
    retask,
)
from client.server_view import ServerView, server_view
from client.settings import resolve_permissions
from client.start import LINEAGE_KEY, launch
from client.steer import (
    NO_SUCH_TASK,
    agent_named,
    check_signalled,
    closest_task,
    exact_task,
    find_task,
    loose_agents,
    no_task,
    predates_update,
    send_signal,
)
from client.values import ConnectionLost, RunStatus, WorkerSilent
from client.workers import serving, unanswered, untaken
from client.workspace_files import workspace_folder, workspace_holder
from xsky.agent_log import parse_lines, transcript_key
from xsky.config import Settings
from xsky.errors import (
    ConnectError,
    NoWorkerError,
    PlanError,
    RefusedError,
    RunEndedError,
    UsageError,
    WorkersBusyError,
    XSkyError,
)
from xsky.gcpause import gc_paused
from xsky.leader.ledger import LedgerEntry, LedgerView
from xsky.leader.state import (
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    AuditEntry,
    BoardPage,
    EndRunRequest,
    HumanRequest,
    InterventionResult,
    NudgeRequest,
    PageRequest,
    PauseRequest,
    PlanVersion,
    ReplanRequest,
    ResetTaskRequest,
    ResumeRequest,
    RetryTaskRequest,
    SetBudgetRequest,
    SkipTaskRequest,
    TaskRequest,
    TaskTimeoutRequest,
)
from xsky.leader.tasks import TERMINAL, TaskView
from xsky.lineage import lineage_of
from xsky.plan import dag
from xsky.plan.budget import KEYS, Limits
from xsky.plan.models import Workflow
from xsky.plan.xml import parse_workflow
from xsky.run_diff import RunDiff, diff_runs
from xsky.runs import AgentReport, RunInput, RunResult
from xsky.storage import ObjectStore


class Run:
    """One run (a LeaderWorkflow): look at it, steer it, wait for it."""

    def __init__(self, client: Client, settings: Settings, handle: WorkflowHandle[Any, RunResult]):
        self._client = client
        self._settings = settings
        self.handle = handle
        # the whole board a large run left as it ended, as JSON values: a page is made into
        # models when asked (stored_board_page), not the whole board at once
        self._final: dict[str, Any] | None = None
        self._logs: dict[str, _LogReading] = {}  # by transcript key: the agents' logs read
        self._first_asked = False  # (asked for the run's first execution: _first_execution)
        self._first_run: str | None = None

    @property
    def id(self) -> str:
        return self.handle.id

    @property
    def ui_url(self) -> str:
        return self._settings.ui_link(self.id)

    def __repr__(self) -> str:
        return f"Run({self.id!r})"

    # -- looking ------------------------------------------------------------------------------

    async def server_view(self) -> ServerView:
        """What the server alone knows of the run (no worker needed): its search attributes
        and the agents' attempts in flight — when the board query goes unanswered."""
        return await server_view(self._client, self.id)

    async def temporal_status(self) -> str:
        return await described_status(self.handle, self._settings)

    async def _query(self, query: calls.Query, *args: Any) -> Any:
        """A query; unanswered, asked again while the workers are only busy (a bounded number
        of times), else the reason: no worker, one that stopped answering, or busy ones."""
        for tries in range(1, QUERY_TRIES + 1):
            try:
                return await self.handle.query(
                    query.name,
                    *args,
                    result_type=query.answer,
                    rpc_timeout=self._settings.query_timeout,
                )
            except RPCError as e:
                status = await self.temporal_status()
                queue = (await self.handle.describe()).task_queue
                why = await unanswered(
                    self._client, self._settings, self.id, queue, e.message, status
                )
                if not isinstance(why, WorkersBusyError) or tries == QUERY_TRIES:
                    raise why from None
            await asyncio.sleep(1.0)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def board(
        self, offset: int = 0, limit: int = 200, status: str | None = None
    ) -> BoardPage:
        """A page of the task board (large boards come in pages, with the whole board's counts)."""

        if not 1 <= limit <= 2000 or offset < 0:
            raise UsageError("a board page takes a limit of 1 to 2000 and an offset of 0 or more")
        request = PageRequest.model_validate({"offset": offset, "limit": limit, "status": status})
        final = await self._final_board()
        if final is not None:
            return stored_board_page(final, request)
        return await self._query(calls.TASK_BOARD, request)

    async def _final_board(self) -> dict[str, Any] | None:
        """The whole board a large run stored as it ended (RunResult.board_ref): read from the
        store, where asking would make a worker replay the whole run (seconds for 10,000
        agents). None while it runs, and for a run small (or old) enough to be asked."""
        if self._final is not None:
            return self._final
        # ("cancelled": also a run a person ended, Failed in Temporal, which stored its board)
        if await self.temporal_status() not in ("completed", "failed", "cancelled"):
            return None
        result = await self.result()
        if result.board_ref is None:
            return None
        try:
            text = read_blob(open_store(self._settings), result.board_ref)
        except (FileNotFoundError, ValueError):
            return None  # not readable here (another store): the query still answers
        with gc_paused():  # (a 10,000-task board is ~200,000 values: no collector walks)
            final = json.loads(text)
        if not isinstance(final, dict):
            raise ValueError(f"the board stored at {result.board_ref} is not a board")
        self._final = final
        return final

    async def status(self) -> RunStatus:
        status = await self.temporal_status()
        try:
            page = await self.board(limit=60)
        except NoWorkerError:
            if status == "running":
                raise
            page = None
        state = page.state if page is not None and status == "running" else status
        return RunStatus(self.id, status, state, page)

    async def requests(self) -> list[HumanRequest]:
        """Questions, approvals, escalations and plan reviews waiting for a person."""

        return list(await self._query(calls.PENDING_REQUESTS))

    async def plan(self, offset: int = 0, limit: int | None = None) -> str:
        """The run's current plan, as workflow XML (a large plan a page of agents at a time)."""
        if offset == 0 and limit is None:
            return str(await self._query(calls.PLAN))
        page = (
            PageRequest(offset=offset) if limit is None else PageRequest(offset=offset, limit=limit)
        )
        return str(await self._query(calls.PLAN, page))

    async def plan_history(self) -> list[PlanVersion]:
        return list(await self._query(calls.PLAN_HISTORY))

    async def ledger(self, offset: int = 0, limit: int = 200) -> LedgerView:
        """The leader's ledgers: its mode, the goal and its check, facts, judgments."""
        page = PageRequest.model_validate({"offset": offset, "limit": limit})
        return await self._query(calls.LEDGER, page)

    async def permission_log(self) -> list[AuditEntry]:
        return list(await self._query(calls.PERMISSION_LOG))

    async def follow(
        self, interval: float = 0.7, page: PageRequest | None = None
    ) -> AsyncIterator[BoardPage | ConnectionLost | WorkerSilent]:
        """The board each time it changes, until the run ends (the last board included).

        While the server cannot be reached a :class:`ConnectionLost` is yielded once and
        following goes on when it is back; when no worker answers for a while, or none takes
        an agent's attempt (``task`` set), a :class:`WorkerSilent` once. Then :meth:`result`
        has the outcome."""

        request = page or PageRequest(limit=60)
        last: str | None = None
        lost = False
        silent_since: float | None = None
        told_silent = told_untaken = False
        while True:
            try:
                described = await describe_once(self._client, self.id)
                ended = described.workflow_execution_info.status != RUNNING_STATUS
                waiting = None if ended or told_untaken else untaken(described, time.time())
                if waiting is not None:
                    told_untaken = True
                    yield WorkerSilent(waiting[1], "no worker took its attempt", task=waiting[0])
                current: BoardPage | None = None
                try:
                    current = await board_once(
                        self._client, self.id, request, self._settings.query_timeout
                    )
                    silent_since, told_silent = None, False
                except RPCError as e:
                    if e.status == RPCStatusCode.UNAVAILABLE:
                        raise
                    # the worker is busy or restarting (the next poll will show it), or none runs
                    silent_since = silent_since or time.monotonic()
                    silent = time.monotonic() - silent_since
                    if silent >= SILENT_WORKER_SECONDS and not told_silent and not ended:
                        told_silent = True
                        queue = described.execution_config.task_queue.name
                        why = await unanswered(
                            self._client, self._settings, self.id, queue, e.message
                        )  # none serves the queue, one stopped answering, or they are busy
                        yield WorkerSilent(silent, str(why))
                lost = False
            except RPCError as e:
                if e.status not in TRANSIENT:
                    raise ConnectError(f"lost {self.id}: {e.message}") from None
                if not lost:
                    lost = True
                    yield ConnectionLost(e.message)
                await asyncio.sleep(max(interval, 1.0))
                continue
            if current is not None:
                key = current.model_dump_json()
                if key != last:
                    last = key
                    yield current
            if ended:
                return
            await asyncio.sleep(interval)

    async def result(self, wait: bool = True) -> RunResult:
        """The run's RunResult, completed or failed; ``wait=False`` refuses a running run.

        Server outages are waited out (the SDK retries; this retries its give-ups)."""
        if not wait and await self.temporal_status() == "running":
            raise XSkyError(
                f"{self.id} is still running",
                "wait for it, or watch it with Run.follow()",
                topic="running",
                subject=self.id,
            )
        while True:
            try:
                return await run_outcome(self.handle)
            except RPCError as e:
                if e.status not in TRANSIENT:
                    raise ConnectError(
                        f"cannot read the result of {self.id}: {e.message}"
                    ) from None
                await asyncio.sleep(1.0)
            except WorkflowFailureError as e:
                if isinstance(e.cause, CancelledError):
                    return await cancelled_result(self.handle, self._settings.query_timeout)
                raise RunEndedError(f"{self.id} ended without a result: {e.cause or e}") from None

    async def reports(self) -> list[AgentReport]:
        """Every agent's report: inline, or for a large run from the artifact store."""
        return reports_of(self._settings, await self.result())

    async def agent_result(
        self, agent: str, result: RunResult | None = None, *, so_far: bool = False
    ) -> tuple[AgentReport, str]:
        """One agent's report (by agent id or task id, T-3 or 3) and its full result text
        (from ``result`` when the caller has it already). ``so_far``: of a run still going, as
        it stands now (an agent that completed has its result; others say where they are)."""
        if so_far and await self.temporal_status() == "running":
            reports = await self._reports_so_far()
        else:
            reports = reports_of(self._settings, result or await self.result())
        by_id = {a.id: a for a in reports}
        named = agent_named(by_id, agent)
        if named is None:
            close = closest_task(agent, [f"T-{a}" for a in by_id])
            meant = f" — did you mean {close.removeprefix('T-')}?" if close else ""
            raise UsageError(
                f"no agent {agent} in {self.id}{meant}; agents: "
                f"{', '.join(a.id for a in reports[:40])}"
            )
        report = by_id[named]
        return report, result_text(self._settings, report)

    # -- steering -----------------------------------------------------------------------------

    async def _running(self, what: str) -> None:
        status = await self.temporal_status()
        if status != "running":
            raise RunEndedError(
                f"{self.id} has already ended ({status}): there is nothing to {what}",
                "Run.result() says how it ended",
                topic="ended",
                subject=self.id,
            )

    async def _update(self, update: calls.Update, request: Any) -> InterventionResult:
        await self._running("change")
        queue = await self._served()
        try:
            result: InterventionResult = await self.handle.execute_update(
                update.name, request, result_type=InterventionResult, rpc_timeout=UPDATE_TIMEOUT
            )
            return result
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # interrupted (Ctrl-C): not a timeout
            # Sent and not answered: the server keeps it, and the run takes it when a worker
            # does — so the person is told it may still apply, not that it failed.
            why = await unanswered(
                self._client, self._settings, self.id, queue, "no answer", "running"
            )
            reason = why.fact.replace(
                f"within {self._settings.query_timeout.total_seconds():g}s",
                f"within {UPDATE_TIMEOUT.total_seconds():g}s",
            )
            raise type(why)(
                f"{update.name} was sent to {self.id} but not answered ({reason}); it applies "
                "when a worker takes the run — Run.status() shows whether it has",
                why.fix,
                topic=why.topic,
                subject=self.id,
            ) from None
        except WorkflowUpdateFailedError as e:
            cause = e.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(cause or e)
            raise RefusedError(f"refused: {message}", topic="refused", subject=self.id) from None
        except RPCError as e:
            raise NoWorkerError(
                f"could not reach {self.id}: {e.message}",
                "is a worker running (`python worker.py`)?",
                topic="worker",
            ) from None

    async def _limits_in_force(self) -> Limits | None:
        """The run's limits as they stand now (a person may have raised or lowered them since
        it started): what a follow-up or fork of it starts with."""
        try:
            view = (await self.board(limit=1)).budget
        except XSkyError:
            return None  # not readable now: the limits it started with
        return view.limits if view is not None else None

    async def _served(self) -> str:
        """The run's task queue, when a worker serves it; else a NoWorkerError, nothing sent (a
        change sent to a run no worker serves waited silently and applied whenever one came)."""
        queue = (await self.handle.describe()).task_queue
        # A worker reconnecting (the server restarted a moment ago, a worker is starting) polls
        # within seconds: waited for as long as a run's start waits for one (XSKY_WORKER_WAIT),
        # then refused.
        deadline = time.monotonic() + self._settings.worker_wait
        while not await serving(self._client, self._settings, queue):
            if time.monotonic() >= deadline:
                raise NoWorkerError(
                    f"{self.id} is running but no worker serves its task queue '{queue}' at "
                    f"{self._settings.address}; nothing was sent",
                    "start one with `python worker.py`, then ask again",
                    topic="worker",
                )
            await asyncio.sleep(0.5)
        return queue

    async def _steer(
        self,
        update: calls.Update,
        signal: calls.Signal,
        request: Any,
        what: str,
        task: str | None = None,
    ) -> InterventionResult:
        """The update ``update`` (answered), or for a run whose worker predates it the signal
        ``signal`` (client/steer.py)."""
        try:
            return await self._update(update, request)
        except RefusedError as e:
            if not predates_update(e):
                raise
        await self._running(what)
        if task is not None:  # a signal cannot refuse: the task must be there, not ended
            board = await self.board(limit=2000)
            check_signalled(board, find_task(board.tasks, task), task, self.id, what)
        return await send_signal(self.handle, signal.name, request, what)

    async def pause(
        self, cancel_running: bool = False, reason: str | None = None
    ) -> InterventionResult:
        """Stop dispatching new agents (and with ``cancel_running`` stop running ones; they resume later)."""
        request = PauseRequest(cancel_running=cancel_running, reason=reason)
        return await self._steer(calls.PAUSE_RUN, calls.PAUSE, request, "pause")

    async def resume(self) -> InterventionResult:
        request = ResumeRequest()
        return await self._steer(calls.RESUME_RUN, calls.RESUME, request, "resume")

    async def nudge(self, task: str, message: str) -> InterventionResult:
        """A message for one agent, delivered at its next step (refused, saying why, for an
        agent that cannot read it: a direct tool, an ended task)."""
        if not message.strip():
            raise UsageError("the nudge message is empty: say what the agent should know")
        row = await self.task(task)
        request = NudgeRequest(task_id=row.id, message=message)
        return await self._steer(calls.NUDGE_TASK, calls.NUDGE, request, "nudge", task)

    async def answer(self, request_id: str, text: str) -> InterventionResult:
        """Answer a pending question (Q-n) or escalation (E-n)."""

        return await self._update(calls.ANSWER, AnswerRequest(request_id=request_id, text=text))

    async def approve(
        self, request_id: str, decision: Decision = "allow_once", message: str | None = None
    ) -> InterventionResult:
        """Decide a pending tool approval (A-n): allow it once, for the rest of the run, or deny it."""

        if decision not in get_args(Decision):
            raise UsageError(f"decision {decision!r}: give one of {', '.join(get_args(Decision))}")

        return await self._update(
            calls.APPROVE_TOOL,
            ApproveToolRequest(request_id=request_id, decision=decision, message=message),
        )

    async def replan(self, prompt: str | None = None, xml: str | None = None) -> InterventionResult:
        """Change the plan: a prompt for the planner, or the whole new plan as XML."""

        if (prompt is None) == (xml is None):
            raise UsageError(
                "give what to change as a prompt, or the whole new plan as xml (one of the two)"
            )
        if prompt is not None and not prompt.strip():
            raise UsageError("the prompt is empty: say what to change")
        request = ReplanRequest(xml=xml) if xml is not None else ReplanRequest(prompt=prompt)
        return await self._update(calls.REPLAN, request)

    async def review_version(self) -> int | None:
        """The plan version waiting for review (request ``R-n``), or None when none waits."""
        await self._running("approve")
        review = next((r for r in await self.requests() if r.kind == "review"), None)
        return int(review.id.removeprefix("R-")) if review is not None else None

    async def approve_plan(self, version: int, comment: str | None = None) -> InterventionResult:
        """Approve the plan under review: ``version`` is the one you read (a plan replanned
        since is refused, so nobody approves what they have not seen)."""
        if not isinstance(version, int) or isinstance(version, bool):
            raise UsageError(
                f"approve_plan needs the plan version you reviewed, not {version!r} "
                "(Run.review_version() says which one waits)"
            )
        return await self._update(
            calls.APPROVE_PLAN, ApprovePlanRequest(version=version, comment=comment)
        )

    async def retry(
        self, task: str, text: str | None = None, again: bool = False
    ) -> InterventionResult:
        """Run a failed, cancelled or escalated task again (with new task text if given).

        On a run that has ended, a follow-up run does it (:meth:`follow_up`); the message names
        it, and every other agent that did not complete there and so runs again too. ``again``:
        as for :meth:`follow_up`."""
        if await self.temporal_status() != "running":
            follow = await self.follow_up([task], text, again=again)
            # what runs again besides it and its dependents: what did not complete there
            wf = parse_workflow(await self.plan())
            (named,) = agent_ids([a.id for a in wf.agents], [task])
            after = {named, *dag.descendants(wf, named)}
            done = {r.id for r in await self.reports() if r.status in ("completed", "skipped")}
            others = [f"T-{a.id}" for a in wf.agents if a.id not in done and a.id not in after]
            also = (
                f"; so do {', '.join(others[:8])}{' …' if len(others) > 8 else ''}, "
                "which did not complete there"
                if others
                else ""
            )
            return InterventionResult(
                message=f"{self.id} has ended: {follow.id} resumes it — T-{named} and what depends "
                f"on it run again{also}; every completed result is carried over",
                plan_version=None,
                follow_up=follow.id,
            )
        return await self._task_update(
            calls.RETRY_TASK, task, lambda task_id: RetryTaskRequest(task_id=task_id, task=text)
        )

    async def follow_up(
        self, tasks: list[str], text: str | None = None, again: bool = False
    ) -> Run:
        """A follow-up run of this ended run: ``tasks`` and their dependents run again, the
        rest is carried over with its results, in this run's workspace (client/resume.py).
        Every agent that did not complete runs again too: one of those not named in ``tasks``
        whose calls must not be repeated unasked (exactly once, or ask: as :meth:`fork` judges
        them) is named and nothing starts, unless ``again``."""
        first = await first_input(self._client, self.handle)
        wf, rerun = retask(parse_workflow(await self.plan()), tasks, text)
        reports = await self.reports()
        if not again:
            # the agents named are the person's say; the others ran there and would run again
            unnamed = wf.model_copy(update={"agents": [a for a in wf.agents if a.id not in rerun]})
            kept = [r for r in reports if r.status in ("completed", "skipped")]
            permissions = resolve_permissions(self._settings)
            if said := repeated_effects(unnamed, kept, reports, [], permissions):
                raise UsageError(
                    f"{REPEATS_FOLLOW_UP} in {self.id}: " + "; ".join(said),
                    f"retry them by name (`starter.py retry {self.id} {said[0].split()[0]}`), or "
                    "with --again to run them again (Run.retry(…, again=True))",
                )
        follow = budget_in_force(
            follow_up_input(
                self.id, first, wf, rerun, reports, resolve_permissions(self._settings)
            ),
            await self._limits_in_force(),
        )
        assert follow.resume is not None
        # a result it carries that gc removed: an agent it runs again would fail at once on it
        kept = still_carried(wf, follow.resume.carried, rerun)
        objects = open_objects(self._settings)
        if lost := gone_inputs(
            wf, kept, lambda folder: removed_by_gc(objects, folder, folder=True)
        ):
            raise UsageError(
                f"the follow-up needs what `starter.py gc` removed: {'; '.join(lost[:5])}",
                "retry an agent before them as well (it runs them again), or start a new run",
            )
        await refuse_if_workspace_busy(self._client, self.id, follow.resume.workspace_of)
        handle = await launch(
            self._client,
            self._settings,
            follow,
            follow_up_id(self.id),
            # the workspace it works in: a later follow-up asks whether one runs there
            memo={"resumes": self.id, "workspaceOf": follow.resume.workspace_of},
            lineage=await self.descendant_lineage(),
        )
        return Run(self._client, self._settings, handle)

    async def fork(
        self,
        task: str,
        text: str | None = None,
        input_text: str | None = None,
        plan: Workflow | None = None,
        id: str | None = None,
        again: bool = False,
    ) -> Run:
        """A new run from agent ``task`` of this one (ended or running): every result it does
        not lead to carried over, it — with ``text`` as its task, ``input_text`` as its input,
        or under a new ``plan`` — and everything downstream run again (client/fork.py).
        ``id``: the fork's run id (default: this run's first id, ``-fork-`` and 6 hex).
        ``again``: run again what must not be repeated unasked (without it, such agents are
        named and nothing starts: exactly once, or ask)."""
        ended = await self.temporal_status() != "running"
        first = await first_input(self._client, self.handle)
        old = parse_workflow(await self.plan())
        at = fork_at(plan or old, task)
        base = plan or old
        if grown_from(base, at):  # a loop or a watch: run again as written, not its gathering
            base = ungrown(base, at, await self._earlier_plans(first))
        new = edited(base, at, text, input_text)
        reports = await self.reports() if ended else await self._reports_so_far()
        own_id = id or fork_id(self.id)
        # a result it carries that gc removed: its agents would fail at once on it (walk8)
        objects = open_objects(self._settings)
        if lost := gone_inputs(
            new,
            carried(old, new, at, reports),
            lambda folder: removed_by_gc(objects, folder, folder=True),
        ):
            raise UsageError(
                f"the fork needs what `starter.py gc` removed: {'; '.join(lost[:5])}",
                "fork at an agent before them (it runs them again), or start a new run",
            )
        if not again:
            permissions = resolve_permissions(self._settings)
            kept = carried(old, new, at, reports)
            pending = await self.requests()
            if said := repeated_effects(new, kept, reports, pending, permissions):
                raise UsageError(
                    f"{REPEATS} in {self.id}: " + "; ".join(said),
                    fork_advice(self.id, said, reports, pending),
                )
        inp = fork_input(
            self.id,
            first,
            old,
            new,
            at,
            reports,
            resolve_permissions(self._settings),
            ended,
            own_id,
        )
        inp = budget_in_force(inp, await self._limits_in_force())
        handle = await launch(
            self._client,
            self._settings,
            inp,
            own_id,
            memo={"resumes": self.id, "forkOf": self.id, "forkAt": f"T-{at}"},
            lineage=await self.descendant_lineage(),
        )
        return Run(self._client, self._settings, handle)

    async def _earlier_plans(self, first: RunInput) -> list[Workflow]:
        """The run's plans, newest first: each version the history holds whole, then the plan
        it was started with."""
        plans = []
        for version in reversed(await self.plan_history()):
            if version.xml.strip():
                with contextlib.suppress(PlanError):
                    plans.append(parse_workflow(version.xml))
        if first.workflow is not None:
            plans.append(first.workflow)
        return plans

    async def diff(self, other: Run) -> RunDiff:
        """What differs between this run and ``other``, agent by agent (xsky/run_diff.py)."""

        async def side(
            run: Run,
        ) -> tuple[Workflow, list[AgentReport], list[LedgerEntry], dict[str, str]]:
            running = await run.temporal_status() == "running"
            reports = await (run._reports_so_far() if running else run.reports())
            ledger = await run.ledger(0, 2000)
            given = (await first_input(run._client, run.handle)).variables
            return parse_workflow(await run.plan()), reports, ledger.entries, dict(given)

        (pa, ra, la, va), (pb, rb, lb, vb) = await asyncio.gather(side(self), side(other))
        return diff_runs(self.id, pa, ra, other.id, pb, rb, la, lb, va, vb)

    async def _reports_so_far(self) -> list[AgentReport]:
        """The reports of a run that is still going (the results query, page by page)."""
        got: list[AgentReport] = []
        while True:
            page = await self._query(calls.RESULTS, PageRequest(offset=len(got), limit=2000))
            got += page.agents
            if not page.agents or len(got) >= page.total:
                return got

    async def follow_ups(self) -> list[str]:
        """Ids of the follow-up runs that resume this one, oldest first (none where the server
        lacks the XskyResumes search attribute)."""
        return [run_id for run_id, _ in await self.follow_up_kinds()]

    async def follow_up_kinds(self) -> list[tuple[str, str]]:
        """(id, "fork" or "follow-up") of each run that resumes this one, oldest first: a fork
        is told by its memo (``forkOf``), whatever it was named (``fork --id``)."""
        try:
            found = [
                (wf.id, "fork" if await wf.memo_value("forkOf", None) else "follow-up")
                async for wf in self._client.list_workflows(f"XskyResumes = '{self.id}'")
            ]
        except RPCError:
            return []
        return found[::-1]

    async def lineage(self) -> list[str]:
        """The runs this one descends from through follow-ups and forks, the first first
        (the ``XskyLineage`` search attribute; empty for a first run, or on a server without it)."""
        described = await self.handle.describe()
        return list(described.typed_search_attributes.get(LINEAGE_KEY) or [])

    async def descendant_lineage(self) -> list[str]:
        """The lineage a run started from this one gets: this one's, then this one."""
        return lineage_of(self.id, await self.lineage())

    async def workspace(self) -> Path:
        """Where the worker keeps this run's workspace on this machine (a follow-up's is its
        first run's); read it with client/workspace_files.py, confined to it."""
        return workspace_folder(
            self._settings, self.id, await first_input(self._client, self.handle)
        )

    async def workspace_host(self) -> str | None:
        """The host that holds this run's workspace with an object store (``XSKY_HOST`` of the
        worker whose agents work in it); None with a shared disk or before one was claimed."""
        first = await first_input(self._client, self.handle)
        return await asyncio.to_thread(workspace_holder, self._settings, self.id, first)

    async def end(self, reason: str | None = None) -> InterventionResult:
        """Close a run held open (``hold_on_failure``, or paused): pending requests are
        withdrawn and it ends, failed if a task failed."""
        return await self._update(calls.END_RUN, EndRunRequest(reason=reason))

    async def set_budget(
        self, task: str | None = None, reserve: int | None = None, **limits: float
    ) -> InterventionResult:
        """Raise or lower limits (tokens, usd, minutes, agents): ``set_budget(tokens=200000)``;
        with ``task`` its own cap. What was spent: ``(await run.board()).budget``."""
        if unknown := sorted(set(limits) - set(KEYS)):
            raise UsageError(f"unknown limit {unknown[0]!r}; the limits are {', '.join(KEYS)}")

        def request(task_id: str | None) -> SetBudgetRequest:
            return SetBudgetRequest.model_validate(
                {**limits, "taskId": task_id, "reserve": reserve}
            )

        if task is None:
            return await self._update(calls.SET_BUDGET, request(None))
        return await self._task_update(calls.SET_BUDGET, task, request)

    # -- one agent at a time --------------------------------------------------------------------

    async def pause_task(self, task: str) -> InterventionResult:
        """Hold one agent (a running attempt stops; it goes on from its checkpoint when resumed)."""
        return await self._task_update(calls.PAUSE_TASK, task, _task_request)

    async def resume_task(self, task: str) -> InterventionResult:
        return await self._task_update(calls.RESUME_TASK, task, _task_request)

    async def reset_task(self, task: str, fresh: bool = False) -> InterventionResult:
        """Start one agent's attempt again: from its checkpoint, or ``fresh`` from scratch."""
        return await self._task_update(
            calls.RESET_TASK, task, lambda task_id: ResetTaskRequest(task_id=task_id, fresh=fresh)
        )

    async def set_task_timeout(self, task: str, seconds: float) -> InterventionResult:
        """Seconds one agent's next attempt may take."""
        return await self._task_update(
            calls.SET_TASK_TIMEOUT,
            task,
            lambda task_id: TaskTimeoutRequest(task_id=task_id, seconds=seconds),
        )

    async def skip(self, task: str, result: str = "") -> InterventionResult:
        return await self._task_update(
            calls.SKIP_TASK, task, lambda task_id: SkipTaskRequest(task_id=task_id, result=result)
        )

    async def cancel(self, task: str | None = None) -> str:
        """Cancel one task, or the whole run without one."""

        if task is not None:
            return (await self._task_update(calls.CANCEL_TASK, task, _task_request)).message
        await self._running("cancel")
        await self.handle.cancel()
        return f"cancellation of {self.id} requested: it ends Cancelled once any running agents have stopped"

    async def attempts(self, task: str) -> list[str]:
        """Why each ended attempt of a task ended, one line each (``attempt 2: error: exit 1``):
        from the attempt ledgers in the artifact store, else from the board's notes."""
        row = await self.task(task)
        return retry_lines(
            row, attempt_ends(open_objects(self._settings), self.id, await self.first_run_id(), row)
        )

    async def first_run_id(self) -> str | None:
        """The run id of the run's first execution (continue-as-new keeps the workflow id)."""
        desc = await self.handle.describe()
        return desc.raw_description.workflow_execution_info.first_run_id or desc.run_id

    # -- transcripts --------------------------------------------------------------------------

    async def task(self, task: str) -> TaskView:
        """The board row of a task, by task id (T-3 or 3) or agent id — or as a person writes
        them (t-3, T3, another case: client/steer.py agent_named) when that names only one."""
        ids: list[str] = []  # (the ids the refusal names)
        loose: dict[str, TaskView] = {}  # (the rows it may mean, written another way)
        async for page in self.board_pages():
            ids += [t.id for t in page.tasks]
            if (found := exact_task(page.tasks, task)) is not None:
                return found
            rows = {t.agent_id: t for t in page.tasks}
            loose.update((a, rows[a]) for a in loose_agents(rows, task))
        if len(loose) == 1:
            return next(iter(loose.values()))
        raise no_task(task, ids, self.id)

    async def _task_update(
        self, update: calls.Update, task: str, request: Callable[[str], Any]
    ) -> InterventionResult:
        """The update ``update`` about one task, ``request(task id)``: ``task`` as given, and
        when the run has no task of that exact id (it finds T-3 or 3 only) the id of the one it
        names as a person writes it (t-3, T3: :meth:`task`) — sent as the run names it, never as
        typed. A name that is no task's is refused saying the id it is closest to."""
        try:
            return await self._update(update, request(task))
        except RefusedError as e:
            if not str(e).startswith(NO_SUCH_TASK):
                raise
            refused = e
        row = await self.task(task)  # (none: no_task, with the id it is closest to)
        if row.id in (task, f"T-{task}"):
            raise refused  # (the run refused the very id: a plan changed between)
        return await self._update(update, request(row.id))

    async def board_pages(self) -> AsyncIterator[BoardPage]:
        """The whole task board, a page of up to 2,000 tasks at a time."""
        page = await self.board(limit=2000)
        yield page
        while page.tasks and page.offset + len(page.tasks) < page.total:
            page = await self.board(offset=page.offset + len(page.tasks), limit=2000)
            yield page

    async def transcript_key(self, task: str) -> str:
        """Where a task's transcript is in the store: an agent id needs no worker to find, a
        task id the board."""
        from activities.agents.transcripts import has_log

        store = open_objects(self._settings)
        key = transcript_key(self.id, task)
        first = await self._first_execution(store, key)
        if await asyncio.to_thread(has_log, store, self.id, task, first):
            self._logs.setdefault(key, _LogReading(task))
            return key
        agent_id = (await self.task(task)).agent_id
        key = transcript_key(self.id, agent_id)
        self._logs.setdefault(key, _LogReading(agent_id))
        return key

    async def _first_execution(self, store: ObjectStore, key: str) -> str | None:
        """The run's first execution, which names its tasks' kept outcomes — asked of the server
        once, and only where a log's last lines travel in them (an object store); None when
        the run is not on the server (any more): every kept outcome of the run is listed."""
        if store.local(key) is not None:
            return None
        if not self._first_asked:
            self._first_asked = True
            try:
                self._first_run = await self.first_run_id()
            except (RPCError, XSkyError):
                self._first_run = None
        return self._first_run

    async def task_ended(self, task: str) -> bool:
        """Has the task ended? (Why one that ended has no transcript: a no-op or a loop's
        gather keeps none.) False while it runs, or when its board cannot be read now."""
        try:
            return (await self.task(task)).status in TERMINAL
        except XSkyError:  # a worker restarting, a task it does not know
            return False

    async def transcript_bytes(self, key: str) -> bytes:
        """An agent log's text as stored so far (b"" for none), for a key :meth:`transcript_key`
        gave: on an object store with the last lines each attempt's kept outcome carries."""
        # (imported here: the agents' activity modules, which only a log's reader needs)
        from activities.agents.transcripts import read_log

        store = open_objects(self._settings)
        reading = self._logs.get(key)
        if reading is None:  # a key of another making: what was appended to it
            return await asyncio.to_thread(store.appended, key)
        first = await self._first_execution(store, key)
        return await asyncio.to_thread(
            read_log, store, self.id, reading.agent_id, first, reading.carried
        )

    async def transcript(self, task: str) -> list[dict[str, Any]]:
        """One agent's conversation, every attempt in order: messages, tool calls with their
        arguments and results, permission decisions, tokens and timings."""
        data = await self.transcript_bytes(await self.transcript_key(task))
        return parse_lines(data.decode("utf-8", errors="replace"))


def _task_request(task_id: str) -> TaskRequest:
    return TaskRequest(task_id=task_id)


def stored_board_page(board: dict[str, Any], req: PageRequest) -> BoardPage:
    """A page of the whole board a run stored as it ended (its JSON values), as
    :meth:`BoardPage.page` makes one of the whole board's models: the tasks chosen and sliced
    as JSON, and only the page's made into models — the stored board of a 10,000-agent run
    was made into 10,000 ``TaskView`` models for the 200 rows ``status`` shows."""
    tasks = board.get("tasks") or []
    chosen = tasks if req.status is None else [t for t in tasks if t.get("status") == req.status]
    return BoardPage.model_validate(
        {
            **board,
            "total": len(chosen),
            "offset": req.offset,
            "tasks": chosen[req.offset : req.offset + req.limit],
        }
    )


@dataclass
class _LogReading:
    """One agent's log as this run's reader has read it: whose it is, and the lines its kept
    outcomes carry, read once each."""

    agent_id: str
    carried: dict[str, tuple[str, bytes]] = field(default_factory=dict)
