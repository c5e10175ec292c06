"""The leader's running attempts: one asyncio task each, its end told to the core, and the
local activities' results settled together.

Part of :class:`workflows.leader.LeaderWorkflow` (workflow code: deterministic, the same
order of tasks and commands on every replay), kept apart so the workflow class holds its
main loop and its handlers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows.failures import attempt_failure
from workflows.leader import io as leader_io
from workflows.leader.guards import ReportTokens, within_budget
from workflows.leader.hosts import Hosts
from workflows.leader.judgment import consult
from workflows.leader.metrics import LeaderMetrics
from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.leader.core import Command, LeaderCore
    from xsky.leader.ledger import ConsultOutcome
    from xsky.leader.tasks import TaskState
    from xsky.plan.variables import RenderError
    from xsky.runs import AgentOutcome


class Attempts:
    """Every attempt the leader runs, by agent id."""

    def __init__(
        self,
        metrics: LeaderMetrics,
        queue: Callable[[str], str],
        apply: Callable[[list[Command]], None],
        agents_here: Callable[[], bool],
    ) -> None:
        self._metrics = metrics
        self._queue = queue
        self._apply = apply
        self._agents_here = agents_here
        self._tasks: dict[str, asyncio.Task[None]] = {}  # agent id → its running attempt
        # Local activities in flight, and the results of those that ended: (schedule order,
        # the nudge timer started with it, the settling) — see settle_local.
        self._local_seq = itertools.count()
        self._local_inflight = 0
        self._local_done: list[tuple[int, int, Callable[[], None]]] = []
        # patched("local-results-next-task"), asked when the first local activity is scheduled.
        self._next_task: bool | None = None
        self._locals_off: bool | None = None  # patched("local-tools-off"), asked when first needed
        self._flat: bool | None = None  # patched("flat-retry-backoff"), asked at the first attempt
        # the run's first execution (it survives continue-as-new), read at the first attempt
        self._execution_id: str | None = None
        self._nudged_at = -1  # the history length at which the last nudge timer started
        self._nudge = 0  # the last nudge timer's number (0: none yet)
        self._nudges_fired: set[int] = set()
        self._nudge_tasks: set[asyncio.Task[None]] = set()
        self.tokens = ReportTokens()  # the dispatches' report tokens (workflows/leader/guards.py)
        # The workspace's host, when workers share no disk (patch workspace-hosts), else None.
        self.hosts: Hosts | None = None

    def start(self, core: LeaderCore, agent_id: str, dispatch: int) -> None:
        self._tasks[agent_id] = asyncio.create_task(self._execute(core, agent_id, dispatch))

    def stop(self, agent_id: str) -> None:
        attempt = self._tasks.get(agent_id)
        if attempt is not None and not attempt.done():
            attempt.cancel()

    def unfinished(self) -> list[asyncio.Task[None]]:
        return [t for t in self._tasks.values() if not t.done()]

    def locals_settled(self) -> bool:
        """No local activity is in flight, and the nudge timer started with each ended one
        has fired (nothing is decided before: see settle_local)."""
        if self._local_inflight:
            return False
        return not self._next_task or all(n in self._nudges_fired for _, n, _ in self._local_done)

    def local_results(self) -> bool:
        """Local activities ended whose results wait for settle_local."""
        return bool(self._local_done)

    async def _execute(self, core: LeaderCore, agent_id: str, dispatch: int) -> None:
        task = core.tasks[agent_id]
        settled = False
        try:
            try:
                rendered, markers = core.inputs.render(agent_id)
                settings = core.inputs.settings_for(agent_id)
            except (RenderError, ValueError) as e:
                core.cannot_start(agent_id, str(e), workflow.now())
                return
            if self._execution_id is None:
                self._execution_id = workflow.info().first_execution_run_id
            agent_input = core.inputs.agent_input(
                agent_id,
                rendered,
                dispatch,
                markers,
                self._execution_id,
                settings.retry.maximum_attempts,
            )
            given: dict[str, object] = {}  # (set on one copy of the input, not a copy each)
            if self._flat_backoff():
                # Temporal retries at once; the attempt after an error waits its backoff itself.
                given["error_backoff"] = settings.retry
            token = self.tokens.issue(agent_input.task_id, dispatch)
            if token is not None:
                given["report_token"] = token
            if given:
                agent_input = agent_input.model_copy(update=given)
            agent_input = await within_budget(agent_input)
            # Runs of before v0.5.0 with localTools on ran instant no-ops as local activities
            # (no task queue round trip, but a 1 ms timer per batch that the server fires about
            # a second late): they replay so; a run of since gives every agent an activity.
            local = (
                self._agents_here()
                and core.inputs.runs_locally(agent_id)
                and not self._local_tools_off()
            )
            kind = core.inputs.queue_kind(agent_id)
            self._metrics.started(kind)
            if local:
                seq = next(self._local_seq)
                nudge = self._nudged()
                self._local_inflight += 1
            outcome: AgentOutcome | None = None
            error: BaseException | None = None
            judged: ConsultOutcome | None = None
            try:
                if self.hosts is not None and not local and core.inputs.uses_workspace(agent_id):
                    outcome = await self.hosts.run(
                        core, agent_id, dispatch, agent_input, settings, self._queue(kind)
                    )
                else:
                    outcome = await leader_io.run_attempt(
                        core, agent_id, dispatch, agent_input, settings, self._queue(kind), local
                    )
            except (ActivityError, asyncio.CancelledError) as e:
                error = e
            finally:
                if local:
                    self._local_inflight -= 1
            review = (
                None
                if outcome is None or local
                else core.review_of(agent_id, dispatch, outcome, workflow.now())
            )
            if review is not None:
                # The attempt is not over until the coordinator said what it makes of it: a
                # stop meanwhile stops it as it would a running attempt.
                core.judging(agent_id, review.point, workflow.now())
                try:
                    judged = await consult(core, review, self._queue("llm"))
                except asyncio.CancelledError as e:
                    outcome, error = None, e
            if local:
                # Settled by the main loop once no local activity is in flight, in the order
                # they were scheduled (see settle_local).
                self._local_done.append(
                    (
                        seq,
                        nudge,
                        lambda: self._settle(core, agent_id, task, dispatch, kind, outcome, error),
                    )
                )
                settled = True
                return
            self._settle(core, agent_id, task, dispatch, kind, outcome, error, judged, ended=False)
        finally:
            if not settled:
                self._ended(core, agent_id, dispatch)

    def _settle(
        self,
        core: LeaderCore,
        agent_id: str,
        task: TaskState,
        dispatch: int,
        kind: str,
        outcome: AgentOutcome | None,
        error: BaseException | None,
        judged: ConsultOutcome | None = None,
        ended: bool = True,
    ) -> None:
        """An attempt's end, told to the core."""
        try:
            if error is not None or outcome is None:
                self._metrics.failed(kind, error or asyncio.CancelledError())
                failure = attempt_failure(error) if isinstance(error, ActivityError) else None
                self._apply(core.attempt_failed(agent_id, task, dispatch, failure, workflow.now()))
                return
            self._metrics.returned(kind, outcome.kind)
            core.attempt_succeeded(agent_id, task, dispatch, outcome, workflow.now(), judged)
        finally:
            if ended:
                self._ended(core, agent_id, dispatch)

    def _ended(self, core: LeaderCore, agent_id: str, dispatch: int) -> None:
        if core.active.get(agent_id) == dispatch:
            del self._tasks[agent_id]
        core.attempt_ended(agent_id, dispatch)

    def _local_tools_off(self) -> bool:
        """patched("local-tools-off"), asked the first time an agent could run locally (so a
        run without localTools records no marker)."""
        if self._locals_off is None:
            self._locals_off = patched("local-tools-off")
        return self._locals_off

    def _flat_backoff(self) -> bool:
        """patched("flat-retry-backoff"), asked of the SDK once: it answers a patch the same for
        the rest of the run, and asking costs a trip into the workflow's context each attempt."""
        if self._flat is None:
            self._flat = patched("flat-retry-backoff")
        return self._flat

    def _nudged(self) -> int:
        """The nudge timer of the local activities this workflow task schedules — one 1 ms
        timer for all of them, started with the first; its firing, a history event in a later
        workflow task, is when their results are decided on (see settle_local)."""
        if self._next_task is None:
            self._next_task = patched("local-results-next-task")
        if not self._next_task:
            return 0
        scheduled_at = workflow.info().get_current_history_length()
        if self._nudged_at != scheduled_at:
            self._nudged_at = scheduled_at
            self._nudge += 1
            task = asyncio.create_task(self._nudge_timer(self._nudge))
            self._nudge_tasks.add(task)
            task.add_done_callback(self._nudge_tasks.discard)
        return self._nudge

    async def _nudge_timer(self, number: int) -> None:
        await workflow.sleep(0.001, summary="settle local results")
        self._nudges_fired.add(number)

    def settle_local(self) -> None:
        """Local activities' results, all at once, in the order they were scheduled, and never
        in the workflow task that scheduled them.

        Their results are recorded in the order they finish, which need not be the order they
        were scheduled, and a replay meets them in schedule order: deciding on each as it came
        would decide differently on replay. So nothing is decided while any is in flight (the
        main loop waits), and then all are settled together, sorted.

        Nor is the workflow task they are seen in the same live and on replay: when a query
        is answered while a local activity runs, the SDK (sdk-core's ``prepare_complete_resp``)
        completes the workflow task with the result's marker but gives the workflow the result
        only in a next task it forces — with that task's events, or alone in a task a replay
        never activates — while a replay gives it in the task that recorded the marker. So a
        local result is decided on only once the nudge timer started with it has fired: a
        history event, met in the same workflow task live and on replay."""
        done, self._local_done = sorted(self._local_done, key=lambda d: d[0]), []
        for _, _, settle in done:
            settle()
