"""``run_agent``: one agent attempt, as a Temporal activity.

The attempt runs in three steps: ``attempt.prepare`` resolves once what it needs (the
worker's settings, role, model, sandbox, workspace, gate and tool context); then the agent's
``<config>`` tool runs directly (``direct.py``, no LLM), or, without one, the configured
model runs the agent's loop (``loop.py``; with no model configured, the offline one
answers); a completed result over :data:`INLINE_ONLY` bytes is written to the artifact store,
small ones travel inline. How each attempt ends is written to its ledger (``ledger.py``) first.
The input's names (``AgentKey``) are made once, before anything is written.

Every store call is a request someone pays for on S3, so an attempt's own cost stays one
durable write: a dispatch's first attempt reads nothing before it works; an attempt that keeps
its outcome writes it once (its result inline, its ledger line with it), and a lease only
where exactly once needs one — not for a :data:`REPEATABLE` tool, and only once the attempt
has run long enough for a later one to exist (``lease.first_write_after``: a quarter of its
heartbeat timeout); its log's lines go in batches (``transcripts.LogTail``), the last at its
end — on an object store inside the kept outcome, so that a short attempt that keeps its
outcome makes one request in all. An instant no-op writes nothing at all (:data:`UNLOGGED`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import server_clock
from activities.agents.attempt import RECORDED_TOOLS, Attempt, fork_copy, prepare
from activities.agents.beat import Beat
from activities.agents.checkpoint import Checkpoints
from activities.agents.direct import run_direct
from activities.agents.grants import GrantChecks
from activities.agents.key import AgentKey
from activities.agents.lease import Lease, first_write_after
from activities.agents.ledger import AttemptLedger, Start, first_of_dispatch, reroute_of
from activities.agents.loop import run_model
from activities.agents.spend import stored_usage
from activities.agents.storage import storage_problem, stored
from activities.agents.transcripts import LogTail
from activities.artifacts import ArtifactStore, open_store, read_blob
from activities.browser import BrowserPool
from activities.mcp.pool import McpPool
from activities.sandbox import secrets
from activities.sandbox.confine import sandbox_settings
from xsky.agent_log import transcript_key
from xsky.artifacts import BlobRef
from xsky.config import Settings
from xsky.outcomes import DETERMINISTIC, EXHAUSTED, TRANSIENT
from xsky.plan.agent_config import deterministic_retries, tool_name
from xsky.plan.budget import UsageReport
from xsky.runs import AgentInput, AgentOutcome
from xsky.settings_files import SettingsError, worker_layers

# Direct tools that change nothing: doing one twice costs only its time, so an attempt of
# such an agent keeps no outcome and holds no lease (instant no-ops stay instant, and such an
# attempt writes nothing to the store but its log's lines — see UNLOGGED for those). A retry
# after a lost worker reads again what the lost attempt read: nobody saw what that one returned.
REPEATABLE = frozenset({"noop", "gather", "file_read", "file_list", "llm"})

# Direct tools whose whole work is their result, which the run's history holds: an attempt of
# one writes nothing at all to the store, not even its log (`starter.py log` says why there is
# none). Issue 37: an instant no-op costs no store request.
UNLOGGED = frozenset({"noop", "gather"})

# A completed result up to this many bytes travels inline only, with no artifact (a write
# less): the leader keeps such a result in its state and shows it as it is, and its budgets
# for inline results still hold — a page of results (at most 2,000 agents) holds at most
# 512 KiB of them, the run's whole inline budget (xsky/leader/commands.py). Larger results
# are stored (the leader hands them on by reference), and travel inline too up to the run's
# ``artifact_threshold``.
INLINE_ONLY = 256

# Failures no <config> retry repeats: the agent's own configuration, a missing stored input,
# or a person's or a rule's refusal.
NEVER_REPEATED = frozenset({"AgentConfigError", "ArtifactMissing", "PermissionDenied"})


log = logging.getLogger(__name__)


class AgentActivities:
    """Activities with the worker's shared resources: settings, artifact store, browsers, MCP
    sessions (closed with :meth:`close` when the worker shuts down)."""

    def __init__(self, settings: Settings, browsers: BrowserPool | None = None):
        self.settings = settings
        self.store = open_store(settings, share_gid=_sandbox_gid(settings))
        self.browsers = browsers or BrowserPool()
        self.mcp = McpPool()
        self._snapshot_locks: dict[str, asyncio.Lock] = {}
        self.grants = GrantChecks(settings)

    async def close(self) -> None:
        await self.mcp.close()
        await self.browsers.close()

    @activity.defn(name="run_agent")
    async def run_agent(self, inp: AgentInput) -> AgentOutcome:
        """One attempt of one agent. How it ends is written down first (activities/agents/ledger.py),
        so the next attempt — and the board — know an error from a lost worker; an outcome is
        kept before it is reported, so the next attempt returns it instead of doing it again."""
        info = activity.info()
        entered = time.monotonic()
        # this attempt met: the server's clock as it knows it counts from here (its lease's too)
        clock = server_clock.anchor()
        started = info.started_time or datetime.now(UTC)
        if inp.input_ref is not None:  # too large for a payload: the leader stored it
            inp = await asyncio.to_thread(self._stored_input, inp.input_ref)
        key = AgentKey.of(inp)
        ledger = AttemptLedger.of(self.store.objects, key, reroute_of(info.activity_id) or 0)
        timeout = info.heartbeat_timeout.total_seconds() if info.heartbeat_timeout else None
        beat = Beat(
            task_id=inp.task_id,
            dispatch=inp.dispatch,
            progress_interval=inp.progress_interval,
            started_at=started,
            token=inp.report_token,
            host=self.settings.host,
        )
        where = self.store.where
        tail = LogTail(
            None if tool_name(inp.agent.config) in UNLOGGED else self.store.objects,
            transcript_key(key.run_id, key.agent_id),
        )
        first = first_of_dispatch(info.attempt, info.activity_id)
        lease: Lease | None = None
        reported = False  # its outcome kept (an error's end: _failed, once its line is written)
        try:
            # A dispatch's first attempt reads nothing and writes no line as it starts: nothing
            # of its dispatch is in the store yet (see ledger.py). Every other one does.
            start = (
                Start.first()
                if first
                else await stored(
                    beat,
                    where,
                    "the attempt ledger",
                    lambda: ledger.begin(info.attempt, timeout, _last_word(info.heartbeat_details)),
                )
            )
            beat.previous = start.previous
            if tool_name(inp.agent.config) in REPEATABLE:  # nothing to keep from doing twice
                return await self._first_time(
                    inp, key, ledger, beat, start, started, tail, keep=False
                )
            kept = start.kept
            if kept is None:
                # Exactly once needs the lease: an earlier attempt cut off from the server may
                # still be at work, and this one must not do the same work beside it — nor a
                # later one beside this. It is written by the time a later attempt can exist
                # (first_write_after, counted from this attempt's start): an attempt shorter
                # than that writes none.
                lease = Lease(
                    ledger.store,
                    ledger.lease_key,
                    info.attempt,
                    ttl=(timeout or 10.0) / 2,
                    reroute=ledger.reroute,
                    # the server's clock as this attempt started (the lease's renewals are
                    # stamped and aged by it, not by this host's wall clock)
                    anchor=clock,
                )
                after = max(0.0, first_write_after() - (time.monotonic() - entered))
                async with lease.held(beat, ledger.has_outcome, first=first, after=after):
                    # it waited for an earlier attempt, which may have kept its outcome since
                    kept = (
                        None
                        if first
                        else await stored(
                            beat,
                            self.store.where,
                            "the kept outcome",
                            lambda: _kept_unless_passed(ledger, self.store, key),
                            verb="read",
                        )
                    )
                    if kept is None:
                        outcome = await self._first_time(
                            inp, key, ledger, beat, start, started, tail
                        )
                        lease.settled()  # its outcome is kept: the next attempt returns it
                        reported = True
                        return outcome
            await asyncio.to_thread(ledger.returned, info.attempt, kept)
            reported = True
            return kept.model_copy(update={"attempt": info.attempt})
        except ApplicationError as e:
            raise await self._failed(inp, key, ledger, info.attempt, e) from None
        except asyncio.CancelledError:
            # not reported: what it leaves (its command's record) is for the next attempt
            details = activity.cancellation_details()
            ran = time.monotonic() - entered
            if details is not None and details.timed_out:
                await asyncio.to_thread(
                    ledger.record, info.attempt, "timeout", _timed_out(info, ran)
                )
            elif details is not None and details.worker_shutdown:
                # A graceful stop (an upgrade, a restart) was read as a worker killed ("no
                # heartbeat") on the board: said as it was. Still "worker lost": a call it
                # cut off may have run (in_doubt._lost). A write only when a worker stops.
                await asyncio.to_thread(
                    ledger.record, info.attempt, "worker lost", _stopped(details, info, ran)
                )
            # Its log says it ended here (a paused agent's next dispatch follows this line),
            # unless it had said how it ended already or had not begun to.
            said = tail.attempt_log
            if said is not None and not said.ended:
                said.outcome("stopped", error=_stopped(details, info, ran))
            await beat.final(await asyncio.to_thread(stored_usage, self.store, key))
            raise
        # a bug or an unexpected error: recorded, retried like any error
        except Exception as e:
            problem = storage_problem(e, where)
            raise await self._failed(
                inp,
                key,
                ledger,
                info.attempt,
                ApplicationError(
                    f"{problem}: {e}" if problem else f"{type(e).__name__}: {e}",
                    type="StorageError" if problem else type(e).__name__,
                ),
            ) from e
        finally:
            tail.flush()  # the attempt's log lines still held: one append, after its outcome
            # (a cancellation that came while its failure was being written counts too)
            # Its command's record goes once the end is known to the store: an outcome kept (an
            # error's line written does it in _failed). Not before — a store that could not
            # take the outcome leaves the record as the only word that the command ran.
            if reported and tool_name(inp.agent.config) in RECORDED_TOOLS:
                ledger.forget_local_record(self.settings.home)
            if lease is not None:  # after its end is written: a waiting attempt reads that
                await lease.let_go(beat)

    def _stored_input(self, ref: BlobRef) -> AgentInput:
        try:
            return AgentInput.model_validate_json(read_blob(self.store, ref))
        except (FileNotFoundError, ValueError) as e:
            raise ApplicationError(
                f"the agent's input, stored by its leader, cannot be read: {e}",
                type="ArtifactMissing",
                non_retryable=True,
            ) from None

    async def _first_time(
        self,
        inp: AgentInput,
        key: AgentKey,
        ledger: AttemptLedger,
        beat: Beat,
        start: Start,
        started: datetime,
        tail: LogTail,
        keep: bool = True,
    ) -> AgentOutcome:
        """The attempt that does the work (no earlier one kept an outcome): its backoff after
        an error, the agent, and (``keep``) its outcome kept durably before it is reported."""
        number = activity.info().attempt
        if inp.error_backoff is not None and start.after_error:
            await _back_off(beat, inp.error_backoff.wait_after(start.errors), start.errors)
        kept: list[AgentOutcome] = []  # kept already, by the agent (Attempt.keep)

        async def keep_now(outcome: AgentOutcome, conversation: bytes = b"") -> AgentOutcome:
            outcome.attempt, outcome.host = number, self.settings.host
            if outcome.usage is None:  # a direct agent: no model call
                outcome.usage = UsageReport()
            if not keep:
                return outcome
            # The log's last lines go with it: the attempt's one write at its end (on an
            # object store; a local disk appends them, as ever, in the ``finally`` of run_agent).
            held = tail.for_outcome()
            try:
                await stored(
                    beat,
                    self.store.where,
                    "the attempt's outcome",
                    lambda: ledger.complete(number, outcome, held, conversation),
                )
            except BaseException:
                tail.put_back(held)  # not kept: they are appended as the attempt ends
                raise
            kept.append(outcome)
            return outcome

        outcome = await self._attempt(
            inp, key, ledger, beat, started, number, tail, start, keep_now if keep else None
        )
        return outcome if kept else await keep_now(outcome)

    async def _failed(
        self,
        inp: AgentInput,
        key: AgentKey,
        ledger: AttemptLedger,
        attempt: int,
        e: ApplicationError,
    ) -> ApplicationError:
        """The error this attempt ends with: recorded; final once the error budget is spent.

        ``non_retryable`` is THE signal that retrying would not help (a deterministic failure,
        on its first attempt); the details say which it is for the leader: ``{"failure":
        "deterministic" | "transient" | "exhausted"}`` (xsky/outcomes.py) — "exhausted" is
        final too, but each attempt failed in a way that might have passed. The leader does
        not replan a deterministic failure automatically (unless the run opts in)."""
        # A secret the worker handed out (an MCP server's ${VAR}) never leaves in an error: not
        # to the ledger, the run's history, the board or the log.
        e = ApplicationError(
            secrets.scrub(e.message),
            *secrets.scrub_value(list(e.details)),
            type=e.type,
            non_retryable=e.non_retryable,
        )
        try:
            errors = await asyncio.to_thread(ledger.record, attempt, "error", e.message)
            if tool_name(inp.agent.config) in RECORDED_TOOLS:
                # Its command's end is reported with this error: a retry runs it again.
                await asyncio.to_thread(ledger.store.delete, ledger.command_key)
                await asyncio.to_thread(ledger.forget_local_record, self.settings.home)
        except OSError as oe:  # a full store: the error is still this attempt's end
            activity.logger.warning("the attempt ledger cannot be written: %s", oe)
            errors = await asyncio.to_thread(ledger.errors) + 1
        # what it used, for the leader to settle (spend is spend, failed or not)
        used = await asyncio.to_thread(stored_usage, self.store, key)
        e = ApplicationError(
            e.message,
            *e.details,
            {"usage": used.wire()},
            type=e.type,
            non_retryable=e.non_retryable,
        )
        if e.non_retryable:
            retries = deterministic_retries(inp.agent.config)
            if retries and e.type not in NEVER_REPEATED:
                # The plan asked for this agent to be tried again even when its failure looks
                # deterministic (<config>{"retries": N}): a flaky script, a race it knows of.
                if errors <= retries:
                    return ApplicationError(
                        f"{e.message} — trying again ({errors} of {retries} retries the "
                        "agent's <config> allows)",
                        *e.details,
                        {"attempt": attempt, "failure": TRANSIENT},
                        type=e.type,
                        non_retryable=False,
                    )
                # Still deterministic: final, like one without retries — a replan would run
                # the same step again (the leader replanned it twice: 9 runs for "retries": 2).
                return ApplicationError(
                    f"{e.message} — retries exhausted ({errors} attempts ended in an error)",
                    *e.details,
                    {"attempt": attempt, "failure": DETERMINISTIC},
                    type=e.type,
                    non_retryable=True,
                )
            details = (*e.details, {"attempt": attempt, "failure": DETERMINISTIC})
            return ApplicationError(e.message, *details, type=e.type, non_retryable=True)
        if inp.error_attempts and errors >= inp.error_attempts:
            return ApplicationError(
                f"{e.message} — retries exhausted ({errors} attempts ended in an error)",
                *e.details,
                {"attempt": attempt, "failure": EXHAUSTED},
                type=e.type,
                non_retryable=True,
            )
        details = (*e.details, {"attempt": attempt, "failure": TRANSIENT})
        return ApplicationError(e.message, *details, type=e.type, non_retryable=False)

    async def _attempt(
        self,
        inp: AgentInput,
        key: AgentKey,
        ledger: AttemptLedger,
        beat: Beat,
        started: datetime,
        number: int,
        tail: LogTail,
        start: Start,
        keep: Callable[[AgentOutcome, bytes], Awaitable[AgentOutcome]] | None = None,
    ) -> AgentOutcome:
        """Prepare once; then the direct tool or the model loop; a completed result is stored.

        ``keep`` keeps an outcome: a model agent whose outcome nothing must precede (no
        workspace snapshot, no command record, no MCP server to release) keeps it as its
        model answers, with its final conversation (loop.AgentLoop._fold) — returned as kept."""
        # what the input grants (approvals, run rules, hosts), only as far as its leader says
        inp, refused = await self.grants.confirm(inp)
        # its host holds the run's workspace (workers share no disk)
        workspace_host = activity.info().task_queue == self.settings.host_queue()
        copy = None if workspace_host else fork_copy(self.settings, inp)
        if copy is not None:
            # heartbeating meanwhile: a large workspace takes longer than a heartbeat timeout
            beat.note = f"copying the workspace of {inp.workspace_from}, the run forked"
            async with beat.running():
                copied = await asyncio.to_thread(copy)
            if copied:
                beat.progress(f"workspace copied from {inp.workspace_from}'s")

        def prepared() -> Attempt:
            return prepare(
                inp,
                key=key,
                ledger=ledger,
                settings=self.settings,
                store=self.store,
                browsers=self.browsers,
                beat=beat,
                started=started,
                number=number,
                mcp=self.mcp,
                refused=refused,
                workspace_host=workspace_host,
                tail=tail,
                fresh=start.fresh,
                start=start,
            )

        # Where it reads the store (the large results the agent is given, an earlier attempt's
        # command record): in a thread, heartbeating — a slow or paused store held up the
        # worker's event loop, every attempt's heartbeats and its leader's workflow tasks,
        # until the server took them all for lost (issue 37). A first attempt given no stored
        # result reads nothing there: prepared at once (a thread's hop on every no-op).
        reads = not start.fresh or inp.markers is None or bool(inp.markers)
        a = (
            await stored(beat, self.store.where, "the agent's inputs", prepared, verb="read")
            if reads
            else prepared()
        )
        if a.snapshots is not None:
            async with self._moving(a.snapshots.key):
                fetched = await asyncio.to_thread(a.snapshots.restore)
            if fetched is not None:
                beat.progress(f"workspace restored from its snapshot ({fetched} files fetched)")
        kept: list[AgentOutcome] = []
        if (
            keep is not None
            and a.target is not None
            and a.snapshots is None
            and a.publish_command is None  # (a direct command's record: none for a model)
        ):

            async def keep_now(outcome: AgentOutcome, conversation: bytes) -> AgentOutcome:
                outcome.started_at, outcome.artifacts = a.started, a.ctx.artifacts
                outcome = secrets.scrub_value(outcome)
                outcome = (
                    store_result(a, outcome)
                    if inline_only(a, outcome)
                    else await stored(
                        beat, self.store.where, "the result", lambda: store_result(a, outcome)
                    )
                )
                kept.append(await keep(outcome, conversation))
                return kept[-1]

            a = replace(a, keep=keep_now)
        # The configured model runs the agent's loop; without one, its tool (or the offline llm).
        ran = await (run_direct(a) if a.target is None else run_model(a))
        if kept:  # (its transcript written, its MCP servers and pages let go)
            return kept[-1]
        outcome = secrets.scrub_value(ran)  # (its result, notes and requests)
        if a.publish_command is not None and (
            a.snapshots is not None or (outcome.kind == "completed" and not inline_only(a, outcome))
        ):
            # Writes come before the outcome is kept (the snapshot, the result): the command's
            # record goes first, so a worker lost meanwhile loses nothing. Otherwise the kept
            # outcome, written next, is the record (one write less).
            await stored(beat, self.store.where, "the command's record", a.publish_command)
        if a.snapshots is not None:  # before the outcome is kept: a kept outcome has its files
            async with self._moving(a.snapshots.key):
                await stored(beat, self.store.where, "the workspace snapshot", a.snapshots.take)
        if outcome.kind != "completed":
            return outcome
        if inline_only(a, outcome):  # nothing to write
            return store_result(a, outcome)
        return await stored(beat, self.store.where, "the result", lambda: store_result(a, outcome))

    def _moving(self, key: str) -> asyncio.Lock:
        """One restore or snapshot of a workspace at a time on this worker."""
        return self._snapshot_locks.setdefault(key, asyncio.Lock())


def inline_only(a: Attempt, outcome: AgentOutcome) -> bool:
    """Does the result travel inline only (up to :data:`INLINE_ONLY` bytes, and the run's
    ``artifact_threshold``), with nothing written?"""
    return len((outcome.result or "").encode("utf-8")) <= min(INLINE_ONLY, a.artifact_threshold)


def store_result(a: Attempt, outcome: AgentOutcome) -> AgentOutcome:
    """A result over :data:`INLINE_ONLY` bytes goes to the artifact store (and travels inline
    too up to the run's ``artifact_threshold``); a smaller one travels inline only."""
    text = outcome.result or ""
    if inline_only(a, outcome):
        outcome.result, outcome.result_ref = text, None
        return outcome
    outcome.result_ref = a.store.put_text(
        a.key.run_id, a.key.agent_id, f"{a.key.file_prefix}result.txt", text
    )
    outcome.result = text if len(text.encode("utf-8")) <= a.artifact_threshold else None
    return outcome


async def _back_off(beat: Beat, seconds: float, errors: int) -> None:
    """The error backoff, waited by the attempt after an error (Temporal's flat policy retried
    it at once): heartbeating, and shown on the board. An attempt whose worker was lost does
    not come here: it runs at once."""
    if seconds <= 0:
        return
    beat.note = f"waiting {seconds:g}s before retrying (backoff after {errors} error(s))"
    async with beat.running():
        await asyncio.sleep(seconds)


def _timed_out(info: activity.Info, ran: float) -> str:
    """Which of its timeouts an attempt that timed out ran past, after ``ran`` seconds here.

    Temporal says only that it timed out: one that ends well before its start-to-close
    timeout missed its heartbeat timeout — its heartbeats did not reach the server (a frozen
    or unreachable server, a cut network) — which was called running too long."""
    limit = info.start_to_close_timeout
    if limit is None or ran >= 0.9 * limit.total_seconds():
        return "ran past its start-to-close timeout"
    beat = info.heartbeat_timeout.total_seconds() if info.heartbeat_timeout else None
    within = f" within {beat:g}s" if beat else ""
    return (
        f"its heartbeats did not reach the server{within} (the server or the network was "
        f"unreachable, or the worker too busy to send them), after {ran:.0f}s of "
        f"{limit.total_seconds():g}s allowed"
    )


def _kept_unless_passed(
    ledger: AttemptLedger, store: ArtifactStore, key: AgentKey
) -> AgentOutcome | None:
    """The outcome an earlier attempt of the dispatch kept — unless it kept its conversation
    with it (fold) and the checkpoint was saved since: that attempt was stopped and woke late,
    after its retry had gone on (a call it marked, the call's answer) and was lost — returning
    its outcome would report a result that never saw what was done since (review16). None:
    this attempt goes on from the checkpoint instead, and its outcome replaces that one."""
    kept = ledger.kept()
    if kept is None:
        return None
    outcome, after = kept
    if after is not None and Checkpoints(store, key).version() != after:
        log.warning("the outcome kept in %s came before a later save: not returned", ledger.key)
        return None
    return outcome


def _stopped(
    details: activity.ActivityCancellationDetails | None, info: activity.Info, ran: float
) -> str:
    """Why an attempt was stopped, as far as the worker knows it."""
    if details is not None and details.timed_out:
        return _timed_out(info, ran)
    if details is not None and details.worker_shutdown:
        return "its worker shut down; the attempt runs again elsewhere"
    if details is not None and details.paused:
        return "paused"
    if details is not None and details.not_found:
        # (the server answered a heartbeat that it has no such attempt: a server restarted
        # without it, or it was timed out and given to another worker meanwhile)
        return (
            "the server no longer has this attempt (its run was terminated or reset, it timed "
            "out and runs again elsewhere, or a server restarted without it)"
        )
    if details is not None and details.reset:
        return "a person reset this activity (temporal activity reset): it starts again"
    return "stopped by its leader: the agent or the run was paused, cancelled or replanned"


def _last_word(details: Sequence[Any]) -> str | None:
    """The previous attempt's last heartbeat note (Temporal hands it to the next attempt)."""
    return details[-1] if details and isinstance(details[-1], str) else None


def _sandbox_gid(settings: Settings) -> int | None:
    """The sandbox user's group when it differs from the worker's (a root worker), else None."""
    try:
        owner = sandbox_settings(worker_layers(settings)).owner
    except (SettingsError, OSError, ValueError):
        return None  # the first attempt reports a broken settings file, with its line
    return owner[1] if owner is not None else None
