"""The leader's Temporal calls, apart from its decisions: activity options, blobs in parts,
the planner, search attributes and the board in the Web UI. Workflow code (deterministic):
called only from :class:`workflows.leader.LeaderWorkflow`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue, RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from workflows.details import draw_details
from workflows.failures import describe_failure
from workflows.leader.blobs import BLOB_ACTIVITY, drop_older_states, load_blob, save_blob
from workflows.leader.judgment import settle_failed
from workflows.leader.metrics import LeaderMetrics
from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.artifacts import (
        PART_CHARS,
        BlobRef,
        blob_ref,
    )
    from xsky.errors import PlanError
    from xsky.leader.core import LeaderCore
    from xsky.leader.state import LeaderState, PlanVersion
    from xsky.leader.tasks import board_markdown, subject_of
    from xsky.plan.agent_config import deterministic_retries
    from xsky.plan.budget import estimate_tokens
    from xsky.plan.eko import markup_as_before_v0_11_11, may_hold_markup
    from xsky.plan.models import Workflow
    from xsky.plan.planning import (
        PLAN_ANSWER_TOKENS,
        PLAN_ATTEMPTS,
        PlanRequest,
        PlanResult,
        planning_prompt,
        problems_text,
    )
    from xsky.plan.repair import (
        bare_lt_as_before_v0_11_7,
        cut_off_mended_as_before_v0_11_8,
        entities_as_before_v0_11_8,
        may_be_cut_off,
        may_escape_lt,
        may_replace_entities,
    )
    from xsky.plan.steps import (
        attributes_as_before_v0_11_9,
        braced_names_as_before_v0_11_8,
        descriptions_as_before_v0_11_5,
        may_hold_braced_names,
        may_hold_lenient_attributes,
    )
    from xsky.plan.xml import (
        ParsedWorkflow,
        may_name_a_file,
        parse_workflow_source,
        schema_files_read_as_before_v0_11_8,
    )
    from xsky.runs import AgentInput, AgentOutcome, LeaderSetup, PendingAttempts, RunInput
    from xsky.safe_text import printable

# A history this small after reading the state may continue as new whenever Temporal says.
SMALL_HISTORY = 1024 * 1024


def read_plan_xml(text: str | bytes) -> ParsedWorkflow:
    """A plan's XML (a large plan's stored text, a person's replan) as this run reads it: as it
    was read when the run first read it, should it have been before v0.11.5 (a native watch's
    <description> holding elements was cut at its first element then) or before v0.11.7 (an
    Eko plan's '<' that starts no tag was not escaped), since the run compared later plans with
    it by what it read — or before v0.11.8 (an Eko plan cut off was mended and run; a schema
    file a replan named was read from the worker's disk)."""
    with contextlib.ExitStack() as as_then:
        if not patched("watch-description-whole"):
            as_then.enter_context(descriptions_as_before_v0_11_5())
        # asked only of XML the change can alter: no marker in any other run's history
        if may_escape_lt(text) and not patched("eko-bare-lt-escaped"):
            as_then.enter_context(bare_lt_as_before_v0_11_7())
        if may_replace_entities(text) and not patched("eko-html-entities"):
            as_then.enter_context(entities_as_before_v0_11_8())
        if may_be_cut_off(text) and not patched("eko-cut-off-refused"):
            as_then.enter_context(cut_off_mended_as_before_v0_11_8())
        if may_name_a_file(text) and not patched("plan-text-reads-no-files"):
            as_then.enter_context(schema_files_read_as_before_v0_11_8())
        if may_hold_braced_names(text) and not patched("eko-braced-names"):
            as_then.enter_context(braced_names_as_before_v0_11_8())
        if may_hold_lenient_attributes(text) and not patched("plan-attributes-lenient"):
            as_then.enter_context(attributes_as_before_v0_11_9())
        if may_hold_markup(text) and not patched("eko-markup-read-whole"):
            as_then.enter_context(markup_as_before_v0_11_11())
        return parse_workflow_source(text)


def cancelled(e: ActivityError) -> bool:
    """Is ``e`` the leader's own cancellation — the run cancelled while it waited for one of
    its activities — which must end the run cancelled, not pass for that activity's failure?
    Asked only then (a history recorded before took it for a failure)."""
    return isinstance(e.cause, CancelledError) and patched("cancel-during-leader-calls-honoured")


async def setup() -> LeaderSetup | None:
    """Ask the worker what this run may use (None from an older worker: run as before)."""
    try:
        return await workflow.execute_activity(
            "leader_setup",
            result_type=LeaderSetup,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=2),
            summary="search attributes, where agents run",
        )
    except ActivityError as e:
        # The run was cancelled while it asked (a run cancelled as it starts): a cancellation is
        # said once, so taking it for a failed set-up ran the whole run. Asked only then.
        if cancelled(e):
            raise asyncio.CancelledError() from None
        workflow.logger.warning("run set-up failed, search attributes off: %s", describe_failure(e))
        return None


async def attempts_checked(core: LeaderCore) -> set[str] | None:
    """Before the stall ladder climbs, the server is asked whether the due tasks' attempts
    run (patch stall-waits-for-worker): one only waiting for a worker — no worker polls its
    queue, or the one that had it was lost and the retry waits for another — is not stalled,
    and its idle clock starts over (``LeaderCore.attempts_seen``). The tasks asked about
    (None: none due, or a history recorded before the patch: the ladder climbs as ever)."""
    due = core.stalls_due(workflow.now())
    if not due or not patched("stall-waits-for-worker"):
        return None
    try:
        # A local activity: on the leader's own worker, beside its workflow task — not behind
        # the agents its queue holds (a worker serving every kind runs them there, and stuck
        # ones held every slot: the ladder, and the loop, waited for one to end).
        found = await workflow.execute_local_activity(
            "leader_attempts",
            due,
            result_type=PendingAttempts,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=2),
            summary=_summary(f"stall ladder: are {', '.join(due[:5])} running?"),
        )
    except ActivityError as e:
        if cancelled(e):
            raise asyncio.CancelledError() from None
        # not known: the ladder climbs as it did before it asked
        workflow.logger.warning("the run's attempts not described: %s", describe_failure(e))
        return set(due)
    core.attempts_seen(due, found.attempts, workflow.now())
    return set(due)


def agent_activity(
    core: LeaderCore,
    agent_id: str,
    dispatch: int,
    queue: str,
    heartbeat: float,
    settings: Any,
    flat: bool = False,
) -> dict[str, Any]:
    """The options of one ``run_agent`` attempt: its queue, timeouts and retry allowances.

    ``flat`` (the flat-retry-backoff patch): every retry after the same short interval, so an
    attempt lost with its worker is retried at once; the attempt after an error waits the rest
    of its backoff itself (``AgentInput.error_backoff``, activities/agents/activity.py)."""
    task, agent = core.tasks[agent_id], core.agents[agent_id]
    retry = settings.retry
    interval = retry.flat_interval() if flat else retry.initial_interval
    return dict(
        task_queue=queue,
        start_to_close_timeout=timedelta(seconds=settings.start_to_close),
        heartbeat_timeout=timedelta(seconds=heartbeat),
        retry_policy=RetryPolicy(
            # errors spend maximumAttempts (the activity counts them); lost workers the rest
            maximum_attempts=retry.maximum_attempts
            + core.options.lost_worker_retries
            + _config_retries(agent.config),
            initial_interval=timedelta(seconds=interval),
            backoff_coefficient=1.0 if flat else retry.backoff_coefficient,
            maximum_interval=timedelta(seconds=interval if flat else retry.maximum_interval),
            non_retryable_error_types=["AgentConfigError", "ArtifactMissing"],
        ),
        cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        activity_id=f"{task.id}-v{core.plans.version}-d{dispatch}",
        summary=_summary(
            f"{task.id} · {agent.name} · {subject_of(printable(agent.task), 70)}"
            # a forEach's items share their task text: the Web UI tells them by their item
            + (f" · item: {subject_of(printable(agent.item), 40)}" if agent.item else "")
        ),
    )


def _config_retries(config: dict[str, Any] | None) -> int:
    """Tries a plan's ``<config>{"retries": N}`` adds (the activity decides which errors
    they repeat); a plan without the key never reaches the patch."""
    retries = deterministic_retries(config)
    return retries if retries and patched("deterministic-failures-final") else 0


def _summary(text: str) -> str:
    """An activity's summary in the Web UI, every control character shown (the plan's and
    the agents' words are in it). Pure, and the identity on text without controls: the
    summaries of recorded histories stay as they were."""
    return printable(text)


async def run_attempt(
    core: LeaderCore,
    agent_id: str,
    dispatch: int,
    agent_input: AgentInput,
    settings: Any,
    queue: str,
    local: bool,
    routed: dict[str, Any] | None = None,
) -> AgentOutcome:
    """One attempt of an agent: an activity on ``queue``, or a local activity for a cheap
    tool (see ``LeaderCore.runs_locally``) — same code, same retries, no round trip.
    ``routed``: the options of an attempt sent to its workspace's host (workflows/leader/hosts.py)."""
    flat = agent_input.error_backoff is not None
    options = agent_activity(core, agent_id, dispatch, queue, settings.heartbeat, settings, flat)
    options.update(routed or {})
    if local:
        del options["task_queue"], options["heartbeat_timeout"]
        return await workflow.execute_local_activity(
            "run_agent", agent_input, result_type=AgentOutcome, **options
        )
    return await workflow.execute_activity(
        "run_agent", agent_input, result_type=AgentOutcome, **options
    )


class PlannerNoRoom(ValueError):
    """The run's budget has no room for a planner call (the sentence says what to raise)."""


async def call_planner(
    core: LeaderCore,
    request: PlanRequest,
    queue: str,
    summary: str,
    non_retryable: list[str],
) -> PlanResult:
    """The planner activity (where llm agents run: it needs what they need), holding a share
    of the run's budget while it works (a run with a budget, whose leader's worker has a model:
    the offline planner spends nothing). Raises PlannerNoRoom when the budget has none."""
    key = f"planner:v{core.plans.version}"
    hold = (
        core.budget.hold_leader_call(
            key,
            estimate_tokens([{"role": "user", "content": planning_prompt(request)}], None),
            PLAN_ANSWER_TOKENS,
            PLAN_ATTEMPTS,
            workflow.now(),
        )
        if core.judgment.worker_model is not None
        else None
    )
    if hold is not None and hold.no_room is not None:
        raise PlannerNoRoom(
            f"the run's budget has no room for the planner: {hold.no_room}; raise it "
            f"(starter.py budget {core.run_id} tokens=…)"
        )
    if hold is not None and hold.share is not None:
        request = request.model_copy(update={"budget_share": hold.share})
    try:
        result = await workflow.execute_activity(
            "plan_workflow",
            request,
            result_type=PlanResult,
            task_queue=queue,
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=non_retryable),
            summary=summary,
        )
    except ActivityError as e:
        if cancelled(e):  # (a run cancelled while its planner ran failed "planning failed")
            core.budget.leader_call_lost(key, "planner")
            raise asyncio.CancelledError() from None
        settle_failed(core, key, "planner", e)
        raise
    except asyncio.CancelledError:
        core.budget.leader_call_lost(key, "planner")
        raise
    core.budget.leader_call_ended(key, "planner")
    core.settle("planner", result.usage)
    return result


async def plan_from_prompt(core: LeaderCore, queue: str) -> None:
    """A run started from a sentence: the planner activity makes plan v1 (the caller
    tells the core the planner started, so the board says so while it works)."""
    prompt = core.input.task_prompt
    try:
        result = await call_planner(
            core,
            PlanRequest(
                task_id=core.plans.plan.task_id,
                task_prompt=prompt,
                agents=core.cast.agent_infos(),
                variables=sorted(core.variables),
                context_keys=sorted(core.input.context),
            ),
            queue,
            _summary(f"planner · plan: {(prompt or '')[:80]}"),
            ["PlanError", "LLMRequestError", "LLMConfigError"],
        )
    except ActivityError as e:
        raise ApplicationError(
            f"planning failed: {describe_failure(e)}", type="PlanError", non_retryable=True
        ) from None
    except PlannerNoRoom as e:
        raise ApplicationError(
            f"planning failed: {e}", type="PlanError", non_retryable=True
        ) from None
    finally:
        core.first_plan_finished()
    try:
        wf = core.checks.plan(result.workflow)
    except PlanError as e:
        raise ApplicationError(
            f"the planner's plan cannot run:\n{problems_text(e)}",
            type="PlanError",
            non_retryable=True,
        ) from None
    core.set_first_plan(wf, result.provider, workflow.now())


async def replan_with_planner(
    core: LeaderCore, modification: str | None, reason: str, queue: str
) -> Workflow:
    """A new plan from the planner, checked to fit this run (its variables, its agents)."""
    result = await call_planner(
        core,
        PlanRequest(
            task_id=core.plans.plan.task_id,
            current_xml=core.plans.planner_xml(core.board.tasks, None),
            modification=modification,
            reason=reason,
            agents=core.cast.agent_infos(),
            variables=sorted(core.variables),
            context_keys=sorted(core.input.context),
        ),
        queue,
        _summary(f"planner · replan v{core.plans.version + 1}: {reason[:80]}"),
        ["PlanError"],
    )
    return core.checks.plan(result.workflow)


class DeadlineTimer:
    """One durable timer for the run's earliest deadline (stall ladder, request deadlines),
    re-armed only when it must fire earlier."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._at: datetime | None = None
        self.fired = False

    def arm(self, at: datetime | None) -> None:
        if at is None or (self._at is not None and self._at <= at):
            return
        if self._task is not None:
            self._task.cancel()
        self._at = at
        self._task = asyncio.create_task(self._sleep_until(at))

    def clear(self) -> None:
        if self.fired:
            self.fired = False
            self._task = self._at = None

    async def _sleep_until(self, at: datetime) -> None:
        try:
            await workflow.sleep(
                max(0.001, (at - workflow.now()).total_seconds()),
                summary="stall / request deadline",
            )
        except asyncio.CancelledError:
            return
        if self._at == at:
            self.fired = True


# -- a run's state across executions ------------------------------------------------------------


async def load_core(inp: RunInput) -> LeaderCore:
    """The core of a run whose state (continued as new) or plan (large) is in the store."""
    run_id = workflow.info().workflow_id
    if inp.state_ref is not None:
        state = LeaderState.model_validate_json(await load_blob(inp.state_ref))
        await drop_older_states(inp.state_ref)
        return LeaderCore(
            inp.model_copy(update={"state": state, "state_ref": None}), run_id, workflow.now()
        )
    assert inp.plan_ref is not None
    try:
        wf = read_plan_xml(await load_blob(inp.plan_ref)).workflow
    except PlanError as e:
        raise ApplicationError(
            f"the stored plan is not valid:\n{problems_text(e)}",
            type="PlanError",
            non_retryable=True,
        ) from None
    return LeaderCore(
        inp.model_copy(update={"workflow": wf, "plan_ref": None}), run_id, workflow.now(), patched
    )


# Events an execution of the leader holds at most before it continues as new, whatever the
# server suggests. A worker that takes a run over replays its whole history inside one
# workflow task, and the task must end within Temporal's 10 s task timeout or it is retried,
# forever: in the SDK's sandbox a replay costs ~1.1 ms per event on an idle 2-core machine,
# and twice that on a loaded one, so 4,000 events leave room where 8,000 did not.
EVENT_CAP = 4000


def time_to_continue() -> bool:
    """The server suggests continue-as-new (history size or length), or the history reached
    EVENT_CAP."""
    info = workflow.info()
    if info.is_continue_as_new_suggested():
        return True
    return info.get_current_history_length() >= EVENT_CAP


def grown_since(read_size: int) -> bool:
    """Continue as new only once this history holds more than the state it read: a large
    state alone passes Temporal's size suggestion, and a run would hand itself on forever."""
    if read_size < SMALL_HISTORY:
        return True
    return workflow.info().get_current_history_size() >= 2 * read_size


# A state larger than this goes to the next execution as its input, which Temporal's External
# Storage writes to the store (the history holds a claim), where the worker has it: in parts
# through the leader's store activities it would stand in each history twice (written, read),
# and a 30,000-agent plan's state (~30 MB) fills the 50 MB history within a few executions.
# A smaller one goes in parts, replayable without the store.
STATE_IN_HISTORY_MAX = 2 * 1024 * 1024


async def continue_as_new(core: LeaderCore, payloads_by_reference: bool = False) -> str | None:
    """Hand the run to a fresh history: the state by reference, so its size never matters.

    Returns (with the reason) only when the state could not be stored: the run then goes
    on in this execution, nothing lost. Since the patch state-per-execution the state carries
    the next execution's number (``continued``), and is stored under it: no two executions
    write the same name, and the next one removes the older ones once it has read its own."""
    await workflow.wait_condition(workflow.all_handlers_finished)
    per_execution = patched("state-per-execution")
    if per_execution:
        core.next_execution()  # the next execution's number, in the state it reads
    snapshot = core.views.snapshot()  # results by reference; the plan once, inside the state
    if len(snapshot) <= core.options.inline_limit:
        state = LeaderState.model_validate_json(snapshot)
        workflow.continue_as_new(
            core.continue_input().model_copy(update={"workflow": None, "state": state})
        )
    if (
        payloads_by_reference
        and len(snapshot) > STATE_IN_HISTORY_MAX
        and patched("large-state-as-payload")
    ):
        workflow.continue_as_new(RawValue(_input_with_state(core, snapshot)))
    number = core.executions() if per_execution else core.executions() + 1
    ref = await _save_state(core, snapshot, number)
    await workflow.wait_condition(workflow.all_handlers_finished)
    # A signal or update handled while the parts were written (a pause, an answer) changed
    # the state after its snapshot: write it again, or the next execution would not know.
    while (fresh := core.views.snapshot()) != snapshot:
        snapshot = fresh
        ref = await _save_state(core, snapshot, number)
        await workflow.wait_condition(workflow.all_handlers_finished)
    if ref is None:
        if per_execution:
            core.stays_here()  # not handed on: this execution goes on
        return "its state could not be stored as written (see the log line before)"
    workflow.continue_as_new(
        core.continue_input().model_copy(update={"workflow": None, "state": None, "state_ref": ref})
    )


def _input_with_state(core: LeaderCore, snapshot: str) -> Payload:
    """The next execution's input, the state in it as the snapshot's JSON, as the pydantic
    converter writes a RunInput: put together as text, because turning a 30,000-agent snapshot
    back into objects only for the converter to write them out again takes seconds of the
    workflow task's two."""
    rest = core.continue_input().model_copy(update={"workflow": None, "state": None})
    head = rest.model_dump_json(exclude={"state"})
    data = f'{head[:-1]},"state":{snapshot}}}' if head != "{}" else f'{{"state":{snapshot}}}'
    return Payload(metadata={"encoding": b"json/plain"}, data=data.encode())


async def _save_state(core: LeaderCore, snapshot: str, number: int) -> BlobRef | None:
    """Write a state for the next execution (the ``number``-th), under a name of its own digest; the reference handed on is what ``leader_seal`` read back from the store.

    The next execution checks what it reads against the reference's digest. Computed here, in
    workflow code, that digest is of this execution's snapshot — on a replay after a crash, of
    the replayed one, while the parts in the store are from the first try: any difference
    between the two and the next execution failed on a digest mismatch. Named by digest, a
    late write of another snapshot cannot overwrite these parts; sealed, the reference is
    recorded in the history, so a replay hands on exactly what was stored. None when what the
    store holds is not what was written (then the run goes on in this execution)."""
    name = f"state-{number}"
    digest = hashlib.sha256(snapshot.encode("utf-8", "surrogatepass")).hexdigest()
    written = await save_blob(f"{name}-{digest[:16]}", snapshot)
    try:
        return await workflow.execute_activity(
            "leader_seal",
            written,
            result_type=BlobRef,
            **BLOB_ACTIVITY,
            summary=f"seal {written.name}",
        )
    except ActivityError as e:
        workflow.logger.error(
            "run %s: the state %s is not stored as written: %s",
            core.run_id,
            written.name,
            e.cause or e,
        )
        return None


def offload_history(core: LeaderCore) -> None:
    """Plan versions too large for a payload go to the artifact store (queries and the
    continued state then carry their reference)."""
    for index, version in enumerate(core.plans.state.history):
        if len(version.xml) > PART_CHARS and version.xml_ref is None:
            version.xml_ref = blob_ref(
                workflow.info().workflow_id, f"plan-v{version.version}-{index}", version.xml
            )
            asyncio.create_task(_store_version(version, version.xml))


async def _store_version(version: PlanVersion, xml: str) -> None:
    await save_blob(version.xml_ref.name, xml)  # type: ignore[union-attr]
    version.xml = ""


# -- what people see ------------------------------------------------------------------------------


# A board over INLINE_AGENTS tasks sets its search attributes at most every this many seconds
# (workflow time): each change is a history event.
PUBLISH_EVERY = 5.0


class Board:
    """What a run shows outside: its search attributes and the board in the Web UI."""

    def __init__(self, metrics: LeaderMetrics) -> None:
        self._metrics = metrics
        self._published_at: datetime | None = None
        # xsky's search attributes the server has (none until leader_setup said)
        self.searchable: set[str] = set()
        # The Web UI's details draw the board when read (workflows/details.py); ``_version``
        # counts the publications, each after a step of the leader that may change it.
        self._on_demand = False
        self._version = 0
        # How the run ended, once it has: the pane's first line says it (COMPLETED, FAILED …),
        # not the "finishing" of its last step — which an ended run's pane kept saying (walk8).
        # Read by queries only (the pane is in no command and no history): no patch needed.
        self._final: str | None = None

    def upsert(self, core: LeaderCore, final: str | None = None) -> None:
        if final is not None and self._final != final:
            self._final = final
            self._version += 1  # (the pane drawn before it ended is drawn again)
        upsert(core, self.searchable, final)
        self._metrics.pending_requests(0 if final else len(core.pending_requests(with_review=True)))

    def publish(self, core: LeaderCore, force: bool = False) -> None:
        """The run's search attributes (a large board's at most every few seconds), and its
        board in the Web UI's details, drawn whenever someone looks (:func:`show_board`)."""
        self._version += 1
        if not self._on_demand:  # (an SDK without the hook: drawn and set now, each time)
            self._on_demand = show_board(core, lambda: self._version, lambda: self._final)
        now = workflow.now()
        if (
            not force
            and core.views.large()
            and self._published_at is not None
            and (now - self._published_at).total_seconds() < PUBLISH_EVERY
        ):
            return
        self._published_at = now
        self.upsert(core)


def upsert(core: LeaderCore, searchable: set[str], final: str | None = None) -> None:
    """Search attributes that changed (each upsert is a history event: changes only)."""
    values = core.views.search_values()
    if final is not None:
        values["XskyStatus"] = final
    current = workflow.info().typed_search_attributes
    updates = []
    for name, value in values.items():
        if name not in searchable:
            continue
        key = (
            SearchAttributeKey.for_int(name)
            if isinstance(value, int)
            else SearchAttributeKey.for_keyword(name)
        )
        if current.get(key) != value:
            updates.append(key.value_set(value))  # type: ignore[arg-type]
    if updates:
        workflow.upsert_search_attributes(updates)


def show_board(
    core: LeaderCore,
    version: Callable[[], object],
    final: Callable[[], str | None] = lambda: None,
) -> bool:
    """The board in the Web UI's current details, drawn from the run's state whenever they are
    read (workflows/details.py: True), not after every workflow task — that cost a third of the
    leader's workflow-side CPU in a fan-out. ``final``: how the run ended, once it has."""
    return draw_details(lambda: board_text(core, final()), version)


def board_text(core: LeaderCore, final: str | None = None) -> str:
    """The board as the Web UI shows it (the plan's name and the agents' words in it are made
    literal text by :func:`~xsky.leader.tasks.board_markdown`); ``final``: how the run ended,
    said as its state (an ended run's last step said "finishing")."""
    now = workflow.now()
    title = f"{core.plans.plan.name or core.run_id} · plan v{core.plans.version}"
    logs = (
        f"Agent logs (messages, tool calls, permission decisions, tokens): `starter.py log {core.run_id} T-n`, "
        f"or `<artifacts>/{core.run_id}/<agent id>/transcript.jsonl`"
    )
    return board_markdown(
        title,
        core.board.state.tasks,
        now,
        "\n\n".join([*core.views.notices(now, markdown=True), logs]),
        final or core.views.run_state(),
        core.views.item_text(),
    )
