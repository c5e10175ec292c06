"""xsky's Python API: start, watch and steer durable runs. The CLI is built on it.

    from xsky.client import XSky

    async with XSky.connect() as x:
        run = await x.run("examples/demo.xml", variables={"site": "example.com"})
        async for page in run.follow():          # the board, each time it changes
            print(page.counts)
        result = await run.result()              # RunResult, completed or failed

Connection settings come from Temporal's environment configuration (``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, TLS, profiles of the Temporal config file),
so Temporal Cloud works unchanged; everything else from :class:`xsky.config.Settings`.
Every mistake a person can fix raises a :class:`xsky.errors.XSkyError` whose message is
one sentence with the fix.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator, Generator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from temporalio.api.common.v1 import Payloads, WorkflowExecution
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.enums.v1 import WorkflowExecutionStatus as ExecutionStatus
from temporalio.api.query.v1 import WorkflowQuery
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    DescribeWorkflowExecutionRequest,
    QueryWorkflowRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError, CancelledError, WorkflowAlreadyStartedError
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError, RPCStatusCode

from xsky.artifacts import blob_ref
from xsky.board import TERMINAL, TaskView
from xsky.config import Settings, load_settings
from xsky.errors import (
    ConnectError,
    NoWorkerError,
    PlanError,
    RefusedError,
    RunEndedError,
    RunNotFoundError,
    UsageError,
    XSkyError,
)
from xsky.leader_core import QUEUE_KINDS
from xsky.leader_state import (
    AnswerRequest,
    ApprovePlanRequest,
    ApproveToolRequest,
    AuditEntry,
    BoardPage,
    HumanRequest,
    InterventionResult,
    NudgeRequest,
    PageRequest,
    PauseRequest,
    PlanVersion,
    ReplanRequest,
    ResumeRequest,
    RetryTaskRequest,
    SkipTaskRequest,
    TaskRequest,
)
from xsky.models import RoleCapabilityModel, Workflow
from xsky.permissions import PermissionSettings
from xsky.plan_files import check_plan, load_plan
from xsky.roles import merge_roles
from xsky.runs import AgentReport, RunInput, RunOptions, RunResult
from xsky.search import SEARCH_ATTRIBUTES, XSKY_STATUSES
from xsky.settings import SettingsError, load_layers, permission_settings, role_layers
from xsky.variables import agent_references
from xsky.xml import workflow_to_xml

QUERY_TIMEOUT = timedelta(seconds=5)
# A worker that was just started (`starter.py up`) may take a moment to poll.
WORKER_WAIT = 10.0
# A plan whose input would pass this many bytes goes to the artifact store (payloads stay < 1 MiB).
INPUT_LIMIT = 512 * 1024
# The failure types a leader ends with when it has a RunResult to give.
OUTCOME_TYPES = ("RunFailed", "RunCancelled")
# A poller seen within this many seconds is a live worker (long polls last about a minute).
LIVE_POLLER_SECONDS = 75
# Following a run: say so when no worker has answered the board query for this long.
SILENT_WORKER_SECONDS = 15
# Server trouble worth waiting out while following a run.
TRANSIENT = (
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.CANCELLED,
    RPCStatusCode.UNKNOWN,
)

RUNNING_STATUS = ExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")

Decision = Literal["allow_once", "allow_run", "deny"]


# -- connecting ------------------------------------------------------------------------------

_quiet_runtime: Runtime | None = None


def quiet_runtime() -> Runtime:
    """A Temporal runtime whose core logs only errors: while a server restarts the SDK retries
    on its own, and its retry warnings are not for the person watching a run."""
    global _quiet_runtime
    if _quiet_runtime is None:
        _quiet_runtime = Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="ERROR", other_level="ERROR")
                )
            )
        )
    return _quiet_runtime


async def connect_client(settings: Settings, runtime: Runtime | None = None) -> Client:
    """A Temporal client with xsky's data converter, or a ConnectError that says how to start a server."""
    try:
        return await Client.connect(
            **settings.connect_kwargs(),
            data_converter=pydantic_data_converter,
            runtime=runtime or quiet_runtime(),
        )
    except Exception as e:  # noqa: BLE001 - the SDK raises RuntimeError for any connect failure
        raise ConnectError(
            f"cannot reach Temporal at {settings.address} (namespace {settings.namespace}): {connect_problem(e)}; "
            "start a local server and a worker with `python starter.py up` (or `make demo`), or set TEMPORAL_ADDRESS"
        ) from None


def connect_problem(error: BaseException) -> str:
    """The SDK's connect error (a Rust transport error's debug text) in a few words."""
    text = str(error)
    for needle, said in (
        ("Connection refused", "connection refused (is the server running?)"),
        ("dns error", "the host name does not resolve"),
        ("failed to lookup", "the host name does not resolve"),
        ("timed out", "timed out"),
        ("Timeout", "timed out"),
        ("certificate", "TLS certificate problem"),
        (
            "Unauthenticated",
            "not authenticated (check TEMPORAL_API_KEY or the profile's TLS settings)",
        ),
        ("PermissionDenied", "permission denied for this namespace"),
    ):
        if needle in text:
            return said
    first = text.splitlines()[0] if text else type(error).__name__
    return first if len(first) <= 160 else first[:159] + "…"


# -- settings files: roles and permissions ------------------------------------------------------


def settings_layers(settings: Settings) -> list[Any]:
    try:
        return load_layers(settings)
    except SettingsError as e:
        raise UsageError(str(e)) from None


def resolve_roles(settings: Settings) -> dict[str, RoleCapabilityModel]:
    """Built-ins < user settings < project settings; bad files are usage errors."""
    from xsky.roles import BUILTIN_ROLES, role_problems

    layers = settings_layers(settings)
    roles = merge_roles(BUILTIN_ROLES.values(), *role_layers(layers))
    problems = [p for role in roles.values() for p in role_problems(role)]
    if problems:
        paths = ", ".join(layer.path for layer in layers) or "settings"
        raise UsageError(f"roles in {paths} are not valid: " + "; ".join(problems))
    return roles


def resolve_permissions(settings: Settings) -> PermissionSettings:
    """Permission rules of every settings layer and the mode (project over user)."""
    return permission_settings(settings_layers(settings))


# -- starting ------------------------------------------------------------------------------------


def new_run_id(task_id: str) -> str:
    """A run id of its own for every start (so a workspace of its own): the plan's taskId,
    when it started, and a few random characters for starts within the same second."""
    return f"xsky-{task_id}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"


def check_names(
    wf: Workflow,
    variables: Mapping[str, str],
    context: Mapping[str, Any],
    done: str = "nothing was started",
) -> None:
    """A variable or context value the plan never uses is a typo: say which names it has."""
    refs = [r for agent in wf.agents for r in agent_references(agent)]
    declared = sorted(set(wf.variables) | {r.key for r in refs if r.kind == "variable"})
    keys = sorted({r.key.split(".")[0] for r in refs if r.kind == "context"})
    for flag, given, known in (("--var", variables, declared), ("--context", context, keys)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            names = ", ".join(known) if known else "none"
            raise UsageError(
                f"{flag} {', '.join(unknown)}: the plan has no such name (its names: {names}); {done}"
            )


def by_reference(
    inp: RunInput, settings: Settings, workflow_id: str, limit: int = INPUT_LIMIT
) -> RunInput:
    """The run's input, with a large plan stored as XML in the artifact store."""
    if inp.workflow is None or len(inp.model_dump_json(by_alias=True)) <= limit:
        return inp
    from activities.artifacts import (  # the artifact store is I/O: only when needed
        ArtifactStore,
        put_blob,
    )

    xml = workflow_to_xml(inp.workflow)
    ref = blob_ref(workflow_id, "plan-input", xml)
    put_blob(ArtifactStore(settings.artifacts), ref, xml)
    return inp.model_copy(update={"workflow": None, "plan_ref": ref})


def plan_kinds(wf: Workflow | None) -> list[str]:
    """The agent kinds (task queues) a plan needs; a prompt needs the planner's (llm)."""
    if wf is None:
        return ["llm"]
    return sorted({a.name if a.name in QUEUE_KINDS else "llm" for a in wf.agents})


async def queue_pollers(
    client: Client, settings: Settings, queue: str, kind: TaskQueueType.ValueType
) -> int:
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=settings.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        )
    )
    # The server lists a poller for minutes after its worker died; a live one polls again
    # at least every minute (a long poll), so only recent ones count.
    now = time.time()
    return sum(
        1
        for p in response.pollers
        if not p.HasField("last_access_time")
        or now - p.last_access_time.ToSeconds() < LIVE_POLLER_SECONDS
    )


async def missing_queues(client: Client, settings: Settings, kinds: list[str]) -> list[str]:
    """The queues a run needs that no worker polls: the leader's (workflow tasks) and each kind's."""
    wanted = [(settings.task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)]
    wanted += [(settings.kind_queue(k), TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY) for k in kinds]
    counts = await asyncio.gather(*(queue_pollers(client, settings, q, t) for q, t in wanted))
    return [q for (q, _), n in zip(wanted, counts, strict=True) if not n]


def no_worker_message(settings: Settings, missing: list[str]) -> str:
    if settings.task_queue in missing:  # nothing leads runs: a full worker serves every queue
        return (
            f"no worker serves the task queue '{settings.task_queue}' at {settings.address}: start one with "
            "`starter.py up` (a server and a worker) or `python worker.py`; nothing was started"
        )
    kinds = [q.removeprefix(settings.task_queue + "-") for q in missing]
    return (
        f"no worker runs {', '.join(kinds)} agents (task queue{'s' if len(kinds) > 1 else ''} "
        f"{', '.join(repr(q) for q in missing)} at {settings.address}), which this plan needs: start one with "
        f"`python worker.py --kinds {','.join(kinds)} --no-leader` (or `starter.py up`); nothing was started"
    )


async def require_workers(
    client: Client,
    settings: Settings,
    kinds: list[str],
    wait: float = WORKER_WAIT,
    on_wait: Any = None,
) -> None:
    """Return once workers poll every queue the run needs; a NoWorkerError with the fix otherwise."""
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            missing = await missing_queues(client, settings, kinds)
        except RPCError:
            return  # the server cannot say (an old server, no permission): start as before
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise NoWorkerError(no_worker_message(settings, missing))
        if not told and on_wait is not None:
            on_wait(f"waiting for a worker on {', '.join(missing)} …")
            told = True
        await asyncio.sleep(0.5)


# -- outcomes ------------------------------------------------------------------------------------


def result_of(error: BaseException) -> RunResult | None:
    """The RunResult a failed run carries in its failure, if it is one of ours."""
    cause = error.cause if isinstance(error, WorkflowFailureError) else error
    if isinstance(cause, ApplicationError) and cause.type in OUTCOME_TYPES and cause.details:
        return RunResult.model_validate(cause.details[0])
    return None


async def run_outcome(handle: WorkflowHandle[Any, RunResult]) -> RunResult:
    """Wait for the run; its RunResult whether it completed or its agents failed (a failed
    run's Temporal status is Failed, and its failure carries the result)."""
    try:
        return await handle.result()
    except WorkflowFailureError as e:
        result = result_of(e)
        if result is None:
            raise
        return result


def _status_name(status: WorkflowExecutionStatus | None) -> str:
    return status.name.lower().replace("_", " ") if status else "unknown"


@dataclass(frozen=True)
class RunStatus:
    """Where a run stands: Temporal's status (running, completed, failed …), what the run is
    doing (running, paused, waiting …) and the first page of its board."""

    id: str
    status: str
    state: str
    board: BoardPage | None


@dataclass(frozen=True)
class ConnectionLost:
    """Yielded by :meth:`Run.follow` while the server cannot be reached; following goes on."""

    error: str


@dataclass(frozen=True)
class WorkerSilent:
    """Yielded by :meth:`Run.follow` when no worker has answered for a while (none is running,
    or all are busy or restarting); following goes on."""

    seconds: float
    error: str


@dataclass(frozen=True)
class RunSummary:
    """One row of :meth:`XSky.runs`."""

    id: str
    status: str
    xsky_status: str | None
    plan: str | None
    failed: int | None
    pending: int | None
    start: datetime | None
    close: datetime | None


class Run:
    """One run (a LeaderWorkflow): look at it, steer it, wait for it."""

    def __init__(self, xsky: XSky, handle: WorkflowHandle[Any, RunResult]):
        self._x = xsky
        self.handle = handle

    @property
    def id(self) -> str:
        return self.handle.id

    @property
    def ui_url(self) -> str:
        return self._x.settings.ui_link(self.id)

    def __repr__(self) -> str:
        return f"Run({self.id!r})"

    # -- looking ------------------------------------------------------------------------------

    async def temporal_status(self) -> str:
        try:
            return _status_name((await self.handle.describe()).status)
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                raise RunNotFoundError(
                    f"no run with id {self.id}; `starter.py list` shows the recent ones"
                ) from None
            raise ConnectError(
                f"cannot reach Temporal at {self._x.settings.address} ({e.message}); is the server up?"
            ) from None

    async def _query(self, query: Any, *args: Any) -> Any:
        try:
            return await self.handle.query(query, *args, rpc_timeout=QUERY_TIMEOUT)
        except RPCError as e:
            status = await self.temporal_status()
            if status == "running":
                raise NoWorkerError(
                    f"{self.id} is running but no worker answered ({e.message}); start one with "
                    "`starter.py up` or `python worker.py`"
                ) from None
            raise NoWorkerError(
                f"{self.id} is {status}; reading it needs a worker ({e.message}): start one with "
                "`starter.py up` or `python worker.py`"
            ) from None

    async def board(
        self, offset: int = 0, limit: int = 200, status: str | None = None
    ) -> BoardPage:
        """A page of the task board (large boards come in pages, with the whole board's counts)."""
        from workflows.leader import LeaderWorkflow

        if not 1 <= limit <= 2000 or offset < 0:
            raise UsageError("a board page takes a limit of 1 to 2000 and an offset of 0 or more")
        return await self._query(
            LeaderWorkflow.task_board,
            PageRequest.model_validate({"offset": offset, "limit": limit, "status": status}),
        )

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
        from workflows.leader import LeaderWorkflow

        return list(await self._query(LeaderWorkflow.pending_requests))

    async def plan(self) -> str:
        """The run's current plan, as workflow XML."""
        from workflows.leader import LeaderWorkflow

        return str(await self._query(LeaderWorkflow.plan))

    async def plan_history(self) -> list[PlanVersion]:
        from workflows.leader import LeaderWorkflow

        return list(await self._query(LeaderWorkflow.plan_history))

    async def permission_log(self) -> list[AuditEntry]:
        from workflows.leader import LeaderWorkflow

        return list(await self._query(LeaderWorkflow.permission_log))

    async def follow(
        self, interval: float = 0.7, page: PageRequest | None = None
    ) -> AsyncIterator[BoardPage | ConnectionLost | WorkerSilent]:
        """The board each time it changes, until the run ends (the last board included).

        While the server cannot be reached a :class:`ConnectionLost` is yielded once and
        following goes on when it is back; when no worker answers for a while, a
        :class:`WorkerSilent` once. Then :meth:`result` has the outcome."""

        request = page or PageRequest(limit=60)
        last: str | None = None
        lost = False
        silent_since: float | None = None
        told_silent = False
        while True:
            try:
                ended = not await self._still_running()
                current: BoardPage | None = None
                try:
                    current = await self._board_once(request)
                    silent_since, told_silent = None, False
                except RPCError as e:
                    if e.status == RPCStatusCode.UNAVAILABLE:
                        raise
                    # the worker is busy or restarting (the next poll will show it), or none runs
                    silent_since = silent_since or time.monotonic()
                    silent = time.monotonic() - silent_since
                    if silent >= SILENT_WORKER_SECONDS and not told_silent and not ended:
                        told_silent = True
                        yield WorkerSilent(silent, e.message)
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

    async def _board_once(self, request: PageRequest) -> BoardPage:
        """The board query, once, without the SDK's own retries: an outage during it is said."""
        client = self._x.client
        response = await client.workflow_service.query_workflow(
            QueryWorkflowRequest(
                namespace=client.namespace,
                execution=WorkflowExecution(workflow_id=self.id),
                query=WorkflowQuery(
                    query_type="task_board",
                    query_args=Payloads(payloads=await client.data_converter.encode([request])),
                ),
            ),
            retry=False,
            timeout=QUERY_TIMEOUT,
        )
        (page,) = await client.data_converter.decode(response.query_result.payloads, [BoardPage])
        return page

    async def _still_running(self) -> bool:
        """One describe, without the SDK's own retries, so an outage is noticed (and said) at once."""
        response = await self._x.client.workflow_service.describe_workflow_execution(
            DescribeWorkflowExecutionRequest(
                namespace=self._x.client.namespace, execution=WorkflowExecution(workflow_id=self.id)
            ),
            retry=False,
            timeout=QUERY_TIMEOUT,
        )
        return bool(response.workflow_execution_info.status == RUNNING_STATUS)

    async def result(self, wait: bool = True) -> RunResult:
        """The run's RunResult, completed or failed; ``wait=False`` refuses a running run.

        Server outages are waited out (the SDK retries; this retries its give-ups)."""
        if not wait and await self.temporal_status() == "running":
            raise XSkyError(
                f"{self.id} is still running; wait for it, or watch it with `starter.py status {self.id}`"
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
                    return await self._cancelled_result()
                raise RunEndedError(f"{self.id} ended without a result: {e.cause or e}") from None

    async def _cancelled_result(self) -> RunResult:
        """A run cancelled as a whole ends Cancelled in Temporal, with no return value: its
        RunResult is put together from the run's ``results`` query (every agent's report)."""
        from workflows.leader import LeaderWorkflow

        agents: list[AgentReport] = []
        while True:
            try:
                page = await self.handle.query(
                    LeaderWorkflow.results,
                    PageRequest(offset=len(agents), limit=2000),
                    rpc_timeout=QUERY_TIMEOUT,
                )
            except RPCError as e:
                raise NoWorkerError(
                    f"{self.id} was cancelled; reading its agents' results needs a worker ({e.message}): "
                    "start one with `starter.py up` or `python worker.py`"
                ) from None
            agents += page.agents
            if not page.agents or len(agents) >= page.total:
                break
        counts: dict[str, int] = {}
        for a in agents:
            counts[a.status] = counts.get(a.status, 0) + 1
        done = counts.get("completed", 0) + counts.get("skipped", 0)
        desc = await self.handle.describe()
        attrs = {key.name: value for key, value in desc.typed_search_attributes}
        return RunResult(
            workflow_id=self.id,
            name=str(attrs.get("XskyPlan") or await desc.static_summary() or self.id),
            status="cancelled",
            summary=f"cancelled: {done} of {len(agents)} agents completed",
            agents=agents,
            counts=counts,
            agents_total=len(agents),
            started_at=desc.start_time,
            ended_at=desc.close_time,
        )

    async def reports(self) -> list[AgentReport]:
        """Every agent's report: inline, or for a large run from the artifact store."""
        return self._x.reports(await self.result())

    async def agent_result(
        self, agent: str, result: RunResult | None = None
    ) -> tuple[AgentReport, str]:
        """One agent's report (by agent id or task id, T-3 or 3) and its full result text
        (from ``result`` when the caller has it already)."""
        reports = self._x.reports(result or await self.result())
        report = next((a for a in reports if agent in (a.id, a.task_id, f"T-{a.task_id}")), None)
        if report is None:
            raise UsageError(
                f"no agent {agent} in {self.id}; agents: {', '.join(a.id for a in reports[:40])}"
            )
        return report, self._x.result_text(report)

    # -- steering -----------------------------------------------------------------------------

    async def _running(self, what: str) -> None:
        status = await self.temporal_status()
        if status != "running":
            raise RunEndedError(
                f"{self.id} has already ended ({status}): there is nothing to {what}; "
                f"`starter.py result {self.id}` shows how it ended"
            )

    async def _update(self, update: Any, request: Any) -> InterventionResult:
        await self._running("change")
        try:
            result: InterventionResult = await self.handle.execute_update(update, request)
            return result
        except WorkflowUpdateFailedError as e:
            cause = e.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(cause or e)
            raise RefusedError(f"refused: {message}") from None
        except RPCError as e:
            raise NoWorkerError(
                f"could not reach {self.id}: {e.message}; is a worker running (`starter.py up`)?"
            ) from None

    async def _signal(self, signal: Any, request: Any, what: str, task: str | None = None) -> None:
        await self._running(what)
        if task is not None:  # signals cannot refuse: check the task exists first
            board = await self.board(limit=2000)
            row = _find_task(board.tasks, task)
            if row is None and board.total <= len(board.tasks):
                raise UsageError(
                    f"no task {task!r} in {self.id}; tasks: {', '.join(t.id for t in board.tasks[:20])}"
                )
            if row is not None and row.status in TERMINAL:
                raise UsageError(
                    f"{row.id} has already ended ({row.status}): a {what} reaches only agents that run or wait"
                )
        try:
            await self.handle.signal(signal, request)
        except RPCError as e:
            raise ConnectError(f"could not signal {self.id}: {e.message}") from None

    async def pause(self, cancel_running: bool = False, reason: str | None = None) -> None:
        """Stop dispatching new agents (and with ``cancel_running`` stop running ones; they resume later)."""
        from workflows.leader import LeaderWorkflow

        await self._signal(
            LeaderWorkflow.pause,
            PauseRequest(cancel_running=cancel_running, reason=reason),
            "pause",
        )

    async def resume(self) -> None:
        from workflows.leader import LeaderWorkflow

        await self._signal(LeaderWorkflow.resume, ResumeRequest(), "resume")

    async def nudge(self, task: str, message: str) -> None:
        """A message for one agent, delivered at its next step."""
        from workflows.leader import LeaderWorkflow

        if not message.strip():
            raise UsageError("the nudge message is empty: say what the agent should know")
        await self._signal(
            LeaderWorkflow.nudge, NudgeRequest(task_id=task, message=message), "nudge", task=task
        )

    async def answer(self, request_id: str, text: str) -> InterventionResult:
        """Answer a pending question (Q-n) or escalation (E-n)."""
        from workflows.leader import LeaderWorkflow

        return await self._update(
            LeaderWorkflow.answer, AnswerRequest(request_id=request_id, text=text)
        )

    async def approve(
        self, request_id: str, decision: Decision = "allow_once", message: str | None = None
    ) -> InterventionResult:
        """Decide a pending tool approval (A-n): allow it once, for the rest of the run, or deny it."""
        from workflows.leader import LeaderWorkflow

        if decision not in get_args(Decision):
            raise UsageError(f"decision {decision!r}: give one of {', '.join(get_args(Decision))}")

        return await self._update(
            LeaderWorkflow.approve_tool,
            ApproveToolRequest(request_id=request_id, decision=decision, message=message),
        )

    async def replan(self, prompt: str | None = None, xml: str | None = None) -> InterventionResult:
        """Change the plan: a prompt for the planner, or the whole new plan as XML."""
        from workflows.leader import LeaderWorkflow

        if (prompt is None) == (xml is None):
            raise UsageError(
                "give what to change as a prompt, or the whole new plan as xml (one of the two)"
            )
        if prompt is not None and not prompt.strip():
            raise UsageError("the prompt is empty: say what to change")
        request = ReplanRequest(xml=xml) if xml is not None else ReplanRequest(prompt=prompt)
        return await self._update(LeaderWorkflow.replan, request)

    async def approve_plan(
        self, version: int | None = None, comment: str | None = None
    ) -> InterventionResult:
        from workflows.leader import LeaderWorkflow

        return await self._update(
            LeaderWorkflow.approve_plan, ApprovePlanRequest(version=version, comment=comment)
        )

    async def retry(self, task: str, text: str | None = None) -> InterventionResult:
        """Run a failed, cancelled or escalated task again (with new task text if given)."""
        from workflows.leader import LeaderWorkflow

        return await self._update(
            LeaderWorkflow.retry_task, RetryTaskRequest(task_id=task, task=text)
        )

    async def skip(self, task: str, result: str = "") -> InterventionResult:
        from workflows.leader import LeaderWorkflow

        return await self._update(
            LeaderWorkflow.skip_task, SkipTaskRequest(task_id=task, result=result)
        )

    async def cancel(self, task: str | None = None) -> str:
        """Cancel one task, or the whole run without one."""
        from workflows.leader import LeaderWorkflow

        if task is not None:
            return (
                await self._update(LeaderWorkflow.cancel_task, TaskRequest(task_id=task))
            ).message
        await self._running("cancel")
        await self.handle.cancel()
        return f"cancellation of {self.id} requested: it ends Cancelled once any running agents have stopped"

    # -- transcripts --------------------------------------------------------------------------

    async def task(self, task: str) -> TaskView:
        """The board row of a task, by task id (T-3 or 3) or agent id."""
        board = page = await self.board(limit=2000)
        while (found := _find_task(page.tasks, task)) is None:
            if page.offset + len(page.tasks) >= page.total or not page.tasks:
                raise UsageError(
                    f"no task {task!r} in {self.id}; tasks: {', '.join(t.id for t in board.tasks[:20])}"
                )
            page = await self.board(offset=page.offset + len(page.tasks), limit=2000)
        return found

    def transcript_path(self, agent_id: str) -> Path:
        from xsky.agent_log import transcript_file

        return transcript_file(self._x.settings.artifacts, self.id, agent_id)

    async def transcript_file(self, task: str) -> Path:
        """Where a task's transcript is: an agent id needs no worker to find, a task id the board."""
        path = self.transcript_path(task)
        return path if path.is_file() else self.transcript_path((await self.task(task)).agent_id)

    async def transcript(self, task: str) -> list[dict[str, Any]]:
        """One agent's conversation, every attempt in order: messages, tool calls with their
        arguments and results, permission decisions, tokens and timings."""
        from xsky.agent_log import parse_lines

        path = await self.transcript_file(task)
        try:
            return parse_lines(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []


def _find_task(tasks: list[TaskView], name: str) -> TaskView | None:
    """The task called ``name``: its task id (T-3), its number (3) or its agent id."""
    return next((t for t in tasks if name in (t.id, t.agent_id, t.id.removeprefix("T-"))), None)


def _is_prompt(text: str) -> bool:
    """Words for the planner, not XML text and not the path of a plan file."""
    if text.lstrip().startswith("<") or text.endswith(".xml"):
        return False
    try:
        return not Path(text).is_file()
    except (OSError, ValueError):  # too long or NUL bytes for a path: words
        return True


def list_query(
    query: str | None = None,
    *,
    status: str | None = None,
    waiting: bool = False,
    failed: bool = False,
    plan: str | None = None,
) -> str:
    """The Temporal visibility query for runs with these xsky search attributes (and ``query``)."""
    clauses = ["WorkflowType='LeaderWorkflow'"]
    if status:
        clauses.append(f"XskyStatus='{status}'")
    if waiting:
        clauses.append("XskyPending > 0")
    if failed:
        clauses.append("XskyFailed > 0")
    if plan:
        clauses.append("XskyPlan=" + "'" + plan.replace("\\", "\\\\").replace("'", "\\'") + "'")
    if query:
        clauses.append(f"({query})")
    return " AND ".join(clauses)


class XSky:
    """A connection to Temporal for starting and steering xsky runs."""

    def __init__(self, client: Client, settings: Settings):
        self.client = client
        self.settings = settings

    @classmethod
    def connect(
        cls,
        settings: Settings | None = None,
        *,
        profile: str | None = None,
        runtime: Runtime | None = None,
    ) -> _Connecting:
        """``async with XSky.connect() as x`` or ``x = await XSky.connect()``."""
        return _Connecting(settings, profile, runtime)

    async def __aenter__(self) -> XSky:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    # -- plans ------------------------------------------------------------------------------

    def roles(self) -> dict[str, RoleCapabilityModel]:
        return resolve_roles(self.settings)

    def load(
        self,
        plan: str | Path | Workflow,
        variables: Mapping[str, str] | None = None,
        context_keys: list[str] | None = None,
        roles: Mapping[str, RoleCapabilityModel] | None = None,
    ) -> Workflow:
        """A plan from a Workflow, a path to an XML file, or XML text; validated against the
        roles in settings (or ``roles``, already resolved). Raises PlanError listing every
        problem with its line."""
        if isinstance(plan, Workflow):
            return plan
        roles = roles or self.roles()
        try:
            if isinstance(plan, str) and plan.lstrip().startswith("<"):
                return check_plan(
                    plan.encode("utf-8"),
                    known_agents=list(roles),
                    variables=list(variables or {}),
                    context_keys=context_keys,
                    max_bytes=self.settings.max_plan_bytes,
                    base_roles=roles,
                )
            return load_plan(
                plan,
                known_agents=list(roles),
                variables=list(variables or {}),
                context_keys=context_keys,
                max_bytes=self.settings.max_plan_bytes,
                base_roles=roles,
            ).workflow
        except PlanError as e:
            # str(e) names the file (or "<plan>" for XML text) with each problem's line:col.
            source = (
                "<plan>" if isinstance(plan, str) and plan.lstrip().startswith("<") else str(plan)
            )
            e.args = (e.format(source),)
            raise

    # -- runs -------------------------------------------------------------------------------

    async def run(
        self,
        plan_or_prompt: str | Path | Workflow,
        *,
        variables: Mapping[str, str] | None = None,
        context: Mapping[str, Any] | None = None,
        review: bool = False,
        options: RunOptions | None = None,
        id: str | None = None,
        wait_for_worker: float | None = None,
        on_wait: Any = None,
    ) -> Run:
        """Start a run of a plan (a Workflow, an XML file's path, XML text) or of a request in
        words, which the leader plans first. Checks that workers serve every queue it needs."""
        variables = dict(variables or {})
        context = dict(context or {})
        opts = options or RunOptions()
        if review:
            opts = opts.model_copy(update={"review": True})
        roles = self.roles()
        if isinstance(plan_or_prompt, str) and _is_prompt(plan_or_prompt):
            if not plan_or_prompt.strip():
                raise UsageError("the request is empty: say what should be done")
            task_id = str(uuid.uuid4())
            inp = RunInput(
                task_prompt=plan_or_prompt,
                task_id=task_id,
                variables=variables,
                context=context,
                options=opts,
                roles=roles,
                permissions=resolve_permissions(self.settings),
            )
            workflow_id = id or new_run_id(task_id[:8])
        else:
            wf = self.load(plan_or_prompt, variables, list(context), roles)
            check_names(wf, variables, context)
            inp = RunInput(
                workflow=wf,
                variables=variables,
                context=context,
                options=opts,
                roles=roles,
                permissions=resolve_permissions(self.settings),
            )
            workflow_id = id or new_run_id(wf.task_id)
        return await self.start(inp, workflow_id, wait_for_worker=wait_for_worker, on_wait=on_wait)

    async def start(
        self,
        inp: RunInput,
        workflow_id: str,
        wait_for_worker: float | None = None,
        on_wait: Any = None,
    ) -> Run:
        """Start a run from a prepared RunInput (what :meth:`run` builds)."""
        from workflows.leader import LeaderWorkflow

        wf = inp.workflow
        summary = (
            wf.name if wf else " ".join((inp.task_prompt or "").split())[:120]
        ) or workflow_id
        details = (
            f"{len(wf.agents)} agents · taskId {wf.task_id}"
            if wf
            else "planned from a request by the leader"
        )
        if not RUN_ID.fullmatch(workflow_id):
            raise UsageError(
                f"run id {workflow_id!r}: use letters, digits and . _ - : (at most 200), e.g. xsky-nightly-1"
            )
        wait = self.settings.worker_wait if wait_for_worker is None else wait_for_worker
        await require_workers(self.client, self.settings, plan_kinds(wf), wait, on_wait)
        try:
            handle = await self.client.start_workflow(
                LeaderWorkflow.run,
                by_reference(inp, self.settings, workflow_id),
                id=workflow_id,
                task_queue=self.settings.task_queue,
                static_summary=summary,
                static_details=details,
                # An id names one run (and its workspace and artifacts): never a second one.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            )
        except WorkflowAlreadyStartedError:
            raise UsageError(
                f"a run with id {workflow_id} already exists (its workspace and results are its own); "
                f"see it with `starter.py status {workflow_id}`, or start this one with another id"
            ) from None
        except RPCError as e:
            raise ConnectError(f"could not start {workflow_id}: {e.message}") from None
        return Run(self, handle)

    async def get(self, run_id: str) -> Run:
        """The run with this id; RunNotFoundError if there is none."""
        from workflows.leader import LeaderWorkflow

        run = Run(self, self.client.get_workflow_handle_for(LeaderWorkflow.run, run_id))
        await run.temporal_status()
        return run

    async def runs(
        self,
        query: str | None = None,
        *,
        status: str | None = None,
        waiting: bool = False,
        failed: bool = False,
        plan: str | None = None,
        limit: int = 20,
    ) -> list[RunSummary]:
        """Recent runs, newest first, filtered by xsky's search attributes and a Temporal list query."""
        if status is not None and status not in XSKY_STATUSES:
            raise UsageError(f"status {status!r}: give one of {', '.join(XSKY_STATUSES)}")
        if limit < 1:
            raise UsageError(f"limit {limit}: give 1 or more")
        text = list_query(query, status=status, waiting=waiting, failed=failed, plan=plan)
        rows: list[RunSummary] = []
        try:
            async for wf in self.client.list_workflows(text, limit=limit):
                attrs = {key.name: value for key, value in wf.typed_search_attributes}
                rows.append(
                    RunSummary(
                        wf.id,
                        _status_name(wf.status),
                        attrs.get("XskyStatus"),
                        attrs.get("XskyPlan"),
                        attrs.get("XskyFailed"),
                        attrs.get("XskyPending"),
                        wf.start_time,
                        wf.close_time,
                    )
                )
        except RPCError as e:
            if "Xsky" in text and ("not defined" in e.message or "invalid" in e.message.lower()):
                raise UsageError(
                    f"this server does not know xsky's search attributes ({e.message}); start it with `starter.py server` "
                    "(or `up`), or register them: "
                    + "; ".join(
                        f"temporal operator search-attribute create --name {n} --type {t}"
                        for n, t in SEARCH_ATTRIBUTES.items()
                    )
                ) from None
            raise UsageError(f"the list query was refused: {e.message} (query: {text})") from None
        return rows

    # -- results ----------------------------------------------------------------------------

    def reports(self, result: RunResult) -> list[AgentReport]:
        """Every agent's report of a result: inline, or for a large run from the artifact store."""
        if result.results_ref is None:
            return result.agents
        from activities.artifacts import ArtifactStore, read_blob

        try:
            text = read_blob(ArtifactStore(self.settings.artifacts), result.results_ref)
        except (FileNotFoundError, ValueError) as e:
            raise XSkyError(
                f"the full results of {result.workflow_id} are not readable here ({e}); "
                "read them where XSKY_ARTIFACTS points on the workers"
            ) from None
        return [AgentReport.model_validate_json(line) for line in text.splitlines() if line.strip()]

    def result_text(self, report: AgentReport) -> str:
        """An agent's whole result, read from the artifact store when it was stored by reference."""
        if report.result_ref is None:
            return report.result or ""
        from activities.artifacts import ArtifactStore

        try:
            return ArtifactStore(self.settings.artifacts).read_text(report.result_ref)
        except (FileNotFoundError, ValueError) as e:
            return f"(stored at {report.result_ref}, not readable here: {e})"


class _Connecting:
    """What :meth:`XSky.connect` returns: awaitable, or an async context manager."""

    def __init__(self, settings: Settings | None, profile: str | None, runtime: Runtime | None):
        self._settings, self._profile, self._runtime = settings, profile, runtime
        self._x: XSky | None = None

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"XSky.connect() was not awaited, so it has no {name!r}: write `x = await XSky.connect()` "
            "or `async with XSky.connect() as x:`"
        )

    async def _connect(self) -> XSky:
        settings = self._settings or load_settings(profile=self._profile)
        return XSky(await connect_client(settings, self._runtime), settings)

    def __await__(self) -> Generator[Any, None, XSky]:
        return self._connect().__await__()

    async def __aenter__(self) -> XSky:
        self._x = await self._connect()
        return self._x

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._x = None


__all__ = [
    "BoardPage",
    "ConnectionLost",
    "WorkerSilent",
    "PlanError",
    "Run",
    "RunStatus",
    "RunSummary",
    "XSky",
    "XSkyError",
    "by_reference",
    "connect_client",
]
